"""ALFWorldRefEnv: the programmatic household, ground truth beside the synthetic ALFWorld env."""

from __future__ import annotations

from typing import Any

from dreamgym_env.domain import ActionError
from dreamgym_env.envs.alfworld.goal import Goal, GoalCheck
from dreamgym_env.envs.alfworld.grammar import parse_command
from dreamgym_env.envs.alfworld.household import Household
from dreamgym_env.envs.alfworld.state import ALFWorldState
from dreamgym_env.envs.alfworld.tasks import load_tasks, world_of
from dreamgym_env.envs.reference import ActionOutcome, ReferenceEnvBase
from dreamgym_env.envs.tasksets import TaskSet
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

MAX_EPISODE_STEPS = 50
"""The registered horizon (ALFWorld's usual budget); the env itself truncates only at ``max_steps``."""


class ALFWorldRefEnv(ReferenceEnvBase):
    """A deterministic household text world with ALFWorld's commands, observations and goals.

    ## Description
    The reference env of the ALFWorld domain: seeded rooms (kitchen, bedroom, bathroom, living
    room) with numbered receptacles and objects, and ALFWorld's six task families ("put a
    clean apple in fridge.", "look at book under the desklamp.", "put two cd in drawer.").
    It speaks ALFWorld 0.3.5 (github.com/alfworld/alfworld, tag 0.3.5, the version ReAct and
    AgentGym report on) as TextWorld's PDDL env plays it: ``alfworld/data/alfred.pddl``'s
    preconditions, ``alfred.twl2``'s texts, ALFRED's receptacle rules (``alfworld/gen/constants.py``).
    It is ground truth for offline trajectories, for measuring how faithfully an experience
    model predicts transitions, and for sim-to-real; never the default behind a synthetic id.
    Commands and effects are those of :mod:`~dreamgym_env.envs.alfworld.household`.

    ## Observation Space
    ``UnicodeText``: ALFWorld's feedback text, e.g. ``You arrive at loc 7. The cabinet 1 is
    closed.`` The structured state behind it is :attr:`abstract_state` (an
    :class:`~dreamgym_env.envs.alfworld.state.ALFWorldState`; the text is its render).

    ## Action Space
    ``UnicodeText``: any string. Valid commands are ALFWorld's (``go to cabinet 1``, ``take
    apple 1 from countertop 1``, ``put apple 1 in/on fridge 1``, ``open``/``close``, ``use
    desklamp 1``, ``clean``/``heat``/``cool ... with ...``, ``slice ... with knife 1``,
    ``examine``, ``inventory``, ``look``); ``info["admissible_actions"]`` lists those valid now,
    sorted, as TextWorld does. A command must be one of them exactly (surrounding whitespace
    aside); any other string gives ``Nothing happens.`` and changes nothing; it never raises.

    ## Rewards
    ``info["score"]`` is the share of the goal's conditions met (the object has the needed
    state; one, or two for ``pick_two``, in a receptacle of the target type; for the lamp
    task, holding the object and a lamp on at the agent's location): 0, 0.5 or 1. With
    ``reward="outcome"`` (the default) the reward is 1 at the step that satisfies the goal,
    else 0; with ``reward="score"`` it is the change of the score, so that an episode's return
    is its final score.

    ## Starting State
    The middle of the room: ``-= Welcome to TextWorld, ALFRED! =-``, a blank line, ``You are in
    the middle of a room. Looking quickly around you, you see a cabinet 2, a cabinet 1, ..., and
    a toaster 1.``, a blank line and ``Your task is to: ...``.
    ``reset(seed=..., options={"task": task})`` takes a :class:`~dreamgym_env.types.Task` of
    this domain or a task id; without one it draws a task of ``split`` with the env's RNG.

    ## Episode End
    Terminated when the goal is satisfied. Truncated after ``max_steps`` steps when set
    (``gym.make`` applies the registered :data:`MAX_EPISODE_STEPS` through ``TimeLimit``).

    ## Info
    ``task``, ``task_id``, ``source`` (``"real"``), ``admissible_actions``, and after a step
    ``action_valid``, ``score``, ``won`` and, for an invalid action, ``error`` (``admissible_actions``
    and ``won`` are ALFWorld's infos; the others are this package's additions).

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``split`` | ``"train"`` | where random tasks come from (``"train"``: 3,528, ``"test"``: 504) |
    | ``tasks`` | ``None`` | an explicit task list instead of the split |
    | ``reward`` | ``"outcome"`` | ``"outcome"`` (1 when won) or ``"score"`` (change of the goal score) |
    | ``max_steps`` | ``None`` | truncate after this many steps (``None``: no limit of its own) |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns text, ``"human"`` prints it |
    | ``max_text_length`` | ``16384`` | the text spaces' maximum length |

    ALFWorld's observations are not Markov, so :meth:`restore` cannot put the env at a state
    text (``restorable`` is False); :meth:`replay` resets to a task and replays its actions.

    ## Version History
    * v0: first release.
    """

    domain_name = "alfworld"
    task_needs = "a goal and a room"
    goal: Goal | None = None
    house: Household | None = None
    _check: GoalCheck | None = None
    last_score = 0.0

    def _task_set(self) -> TaskSet:
        return load_tasks()

    # -- state -------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        """The current observation text."""
        return self.house.text if self.house is not None else ""

    @property
    def abstract_state(self) -> ALFWorldState:
        """The structured state behind :attr:`state` (``render(env.abstract_state) == env.state``)."""
        if self.house is None:
            raise ConfigurationError("call reset() before reading abstract_state")
        return self.house.abstract_state()

    def admissible_actions(self) -> list[str]:
        """The commands valid now, as TextWorld's PddlEnv lists them (``sorted(set(...))``)."""
        return list(self.house.admissible()) if self.house is not None else []

    def _check_task(self, task: Task) -> None:
        Goal.of_task(task)
        world_of(task)

    def restore(self, task: Task, state: str) -> None:
        """Not possible here: a text does not determine the room's state (use :meth:`replay`)."""
        raise ConfigurationError(
            "ALFWorld observations are not Markov: replay the episode's actions with env.replay(task, actions)"
        )

    # -- the hooks of ReferenceEnvBase --------------------------------------------------------
    def _start(self, task: Task) -> None:
        world = world_of(task)
        self.task, self.goal = task, Goal.of_task(task)
        self.house = Household(world, task.instruction)
        self._check = GoalCheck(self.goal, world)
        self.last_score = self._check.score(self.house)

    def _apply(self, action: object) -> ActionOutcome:
        house, check = self.house, self._check
        assert house is not None and check is not None
        command = parse_command(action)
        if isinstance(command, ActionError):
            house.nothing_happens()
            valid, error = False, command.message
        else:
            valid = house.apply(command)
            error = "" if valid else f"{command.text!r} cannot be done here and now"
        reward = 0.0
        score = self.last_score
        if valid:
            score = check.score(house)
            if self.reward_mode == "score":  # the change of the score: an episode's return is its final score
                reward = score - self.last_score
        won = score >= 1.0
        if won and self.reward_mode == "outcome":
            reward = 1.0
        self.last_score = score
        info: dict[str, Any] = {"action_valid": valid, "score": score, "won": won}
        if not valid:
            info["error"] = error
        self._print_step(action, house.text)
        return ActionOutcome(house.text, reward, won, info)
