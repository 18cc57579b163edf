"""ReferenceEnvBase: the skeleton every pack's reference env shares; the pack fills in its world.

The base does the bookkeeping of the :class:`~dreamgym_env.domain.ReferenceEnv` protocol
once: the arguments every reference env takes (``split``, ``tasks``, ``reward``, ``max_steps``,
``render_mode``, ``max_text_length``, ``domain``), task choice (a Task, a task id, or one drawn
with the env's seeded RNG), the step count and truncation, the ``info`` keys every step carries,
``render`` and replaying actions from a task's start. A pack sets :attr:`~ReferenceEnvBase.domain_name`
(an env with arguments of its own takes them in its ``__init__``, loads its world and passes the
rest on) and overrides these hooks:

- :meth:`_task_set`: the world's tasks;
- :meth:`_check_task`: refuse a passed ``Task`` that is not of this env's world;
- :meth:`_start`: set :attr:`task` and the episode's initial state;
- :meth:`_apply`: take one action and say what it did (an :class:`ActionOutcome`);
- :attr:`state`, :meth:`admissible_actions` and :meth:`restore`, and, where the agent sees
  something else than the state's text, :attr:`observation` and :meth:`_state_info`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import ChainMap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, TypeVar

import gymnasium as gym

from dreamgym_env.domain import ActionError, Domain, RewardMode, StepResult
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.tasksets import TaskSet, reset_task
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.experience.prompt import utf8_safe
from dreamgym_env.spaces import UnicodeText
from dreamgym_env.types import Task

__all__ = ["ActionOutcome", "ReferenceEnvBase", "parse_text_action"]

Parsed = TypeVar("Parsed")
DEFAULT_MAX_TEXT_LENGTH: Final = 16_384
"""The text spaces' default length bound (of the reference and real-server envs)."""


@dataclass(frozen=True)
class ActionOutcome:
    """What one action did in a reference env, as a pack's :meth:`ReferenceEnvBase._apply` reports it.

    ``info`` holds the step's own keys (``action_valid``, ``score``, ``won``, ``error`` for an
    invalid action), in the order the pack shows them; the base adds the task's and the state's.
    """

    observation: str
    reward: float
    terminated: bool
    info: dict[str, Any]


def parse_text_action(action: object, parse: Callable[[str], Parsed]) -> Parsed | ActionError:
    """``parse(action)`` for a string; any other value is an invalid action that names its type."""
    if isinstance(action, str):
        return parse(action)
    return ActionError(f"an action must be a string, got {type(action).__name__}")


class TextRendering:
    """``render`` of a text env (``"ansi"`` returns the observation, ``"human"`` prints it) and its step echo.

    Also the arguments of a text env that the reference and real-server envs share.
    """

    metadata: dict[str, Any]
    render_mode: str | None
    task: Task | None
    observation_space: gym.spaces.Space[str]
    action_space: gym.spaces.Space[str]

    def _use_text_spaces(self, max_steps: int | None, render_mode: str | None, max_text_length: int) -> None:
        """Check and set ``max_steps`` and ``render_mode``; text spaces of ``max_text_length``."""
        if max_steps is not None and max_steps < 1:
            raise ConfigurationError(f"max_steps must be >= 1 or None, got {max_steps}")
        render_modes = self.metadata["render_modes"]
        if render_mode is not None and render_mode not in render_modes:
            raise ConfigurationError(f"render_mode must be one of {list(render_modes)}")
        self.max_steps = max_steps
        self.render_mode = render_mode
        self.max_text_length = max_text_length
        self.observation_space = UnicodeText(max_text_length)
        self.action_space = UnicodeText(max_text_length)

    def _task_info(self) -> dict[str, Any]:
        """The ``info`` keys of the current task, in every reset's and step's ``info``."""
        assert self.task is not None
        return {"task": self.task, "task_id": self.task.id, "source": "real"}

    @property
    def observation(self) -> str:
        """What the agent sees now."""
        raise NotImplementedError

    def _print_step(self, action: object, observation: str) -> None:
        """Print the action and what followed, in ``render_mode="human"``."""
        if self.render_mode == "human":
            shown = action if isinstance(action, str) else f"<{type(action).__name__}>"  # str() may raise
            print(f"> {shown}\n{observation}")

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.observation
        if self.render_mode == "human":
            print(self.observation)
        return None


class ReferenceEnvBase(TextRendering, gym.Env[str, str], ABC):
    """The programmatic ground truth of a domain: what every pack's reference env shares.

    Subclasses keep the Gymnasium docstring of their env (Observation and Action Space,
    Rewards, Episode End, Arguments, Version History) and implement the hooks the module
    docstring lists. The constructor checks the shared arguments (``ConfigurationError``), sets
    the text spaces and takes the tasks of :meth:`_task_set`.

    Replaying actions from a task's start has two forms: :meth:`replay` takes every action and
    raises when the episode ends before the last one (to reach a state, as :meth:`restore` would);
    :meth:`replay_until_end` stops where the episode ends.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 4}
    restorable: ClassVar[bool] = False
    """Whether a state text alone determines the env's state, so that :meth:`restore` works."""
    task_needs: ClassVar[str] = "a goal"
    """What a reference task carries that a free instruction lacks, for the error that refuses one."""

    domain_name: ClassVar[str]
    """The registered domain whose grammar and feedback the env uses unless ``domain=`` is passed."""

    def __init__(
        self,
        *,
        split: str = "train",
        tasks: Sequence[Task] | None = None,
        reward: RewardMode = "outcome",
        max_steps: int | None = None,
        render_mode: str | None = None,
        max_text_length: int = DEFAULT_MAX_TEXT_LENGTH,
        domain: Domain | None = None,
    ) -> None:
        if reward not in ("outcome", "score"):
            raise ConfigurationError(f"reward must be 'outcome' or 'score', got {reward!r}")
        self._use_text_spaces(max_steps, render_mode, max_text_length)
        self.domain: Domain = domain if domain is not None else get_domain(self.domain_name)
        self.split = split
        self.reward_mode: RewardMode = reward
        self.task: Task | None = None
        self.elapsed_steps = 0
        self._done = True
        self._use_tasks(self._task_set(), tasks)

    def _use_tasks(self, task_set: TaskSet, tasks: Sequence[Task] | None) -> None:
        """Draw from ``tasks`` (``None``: the split's); look ids up among them, then in ``task_set``."""
        self.task_set = task_set
        self._known_tasks: Mapping[str, Task]
        if tasks is None:
            self._tasks, self._known_tasks = task_set.split(self.split), task_set.by_id
        else:
            self._tasks = tuple(tasks)
            self._known_tasks = ChainMap({t.id: t for t in self._tasks}, task_set.by_id)

    # -- what a pack provides ----------------------------------------------------------------
    @property
    @abstractmethod
    def state(self) -> str:
        """The current state's model-facing text (what :meth:`restore` takes)."""

    @property
    def observation(self) -> str:
        """What the agent sees now: :attr:`state`, unless the pack shows it another way."""
        return self.state

    @abstractmethod
    def admissible_actions(self) -> list[str]:
        """The actions valid now (free slots as ``<name>``)."""

    @abstractmethod
    def restore(self, task: Task, state: str) -> None:
        """Put the env at ``state`` of ``task``; ``ConfigurationError`` where it cannot."""

    @abstractmethod
    def _task_set(self) -> TaskSet:
        """The env's world's tasks (the constructor draws from their ``split`` unless given ``tasks``)."""

    def _check_task(self, task: Task) -> None:
        """Raise ``ConfigurationError`` when a passed ``task`` is not one of this env's world."""

    @abstractmethod
    def _start(self, task: Task) -> None:
        """Set :attr:`task` to ``task`` and the episode's initial state (nothing changed when it raises)."""

    @abstractmethod
    def _apply(self, action: object) -> ActionOutcome:
        """Take ``action`` (any value; a non-string is invalid) and say what it did. Never raises."""

    def _state_info(self) -> dict[str, Any]:
        """The ``info`` keys of the current state, after the reset's and every step's own."""
        return {"admissible_actions": self.admissible_actions()}

    # -- the shared skeleton -----------------------------------------------------------------
    @property
    def tasks(self) -> Sequence[Task]:
        return self._tasks

    def resolve_task(self, spec: Task | str | None) -> Task:
        """Turn a Task or task id into a Task of this env; ``None`` draws one of its tasks at random."""
        if spec is None:
            if not self._tasks:
                raise ConfigurationError("this env has no tasks to draw from")
            return self._tasks[int(self.np_random.integers(len(self._tasks)))]
        if isinstance(spec, str):
            task = self._known_tasks.get(spec)
            if task is None:
                if " " in spec.strip():
                    raise ConfigurationError(
                        f"the reference env needs a task with {self.task_needs}; free instructions are for "
                        "the synthetic env"
                    )
                raise UnknownNameError("task id", spec, self._known_tasks)
            return task
        if not isinstance(spec, Task):
            raise ConfigurationError(
                f"options['task'] must be a Task or a task id, got {type(spec).__name__}"
            )
        self._check_task(spec)
        return spec

    def reward_of(self, score: float, won: bool) -> float:
        """The reward of ``reward_mode``: the score itself (``"score"``) or 1 when won (``"outcome"``)."""
        return score if self.reward_mode == "score" else float(won)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._start(self.resolve_task(reset_task(options, type(self).__name__)))
        self.elapsed_steps, self._done = 0, False
        return self.observation, {**self._task_info(), **self._state_info()}

    def step(self, action: str) -> StepResult:
        if self.task is None or self._done:
            raise ConfigurationError("call reset() before step() (the episode has ended or not begun)")
        # Pages and errors echo the action: lone surrogates would fail wherever they go next.
        text = utf8_safe(action) if isinstance(action, str) else action
        self.elapsed_steps += 1
        truncated = self.max_steps is not None and self.elapsed_steps >= self.max_steps
        outcome = self._apply(text)
        self._done = outcome.terminated or truncated
        info = {**self._task_info(), **outcome.info, **self._state_info()}
        return (
            outcome.observation,
            outcome.reward,
            outcome.terminated,
            truncated and not outcome.terminated,
            info,
        )

    def replay(self, task: Task | str, actions: Sequence[str]) -> tuple[str, dict[str, Any]]:
        """Reset to ``task`` and take every one of ``actions``; returns the last observation and info.

        Deterministic: the same task and actions always give the same state, which is how a state
        of an env that cannot be restored from a text is reached. Raises
        :class:`~dreamgym_env.errors.ConfigurationError` when the episode ends before the last action.
        """
        observation, info = self.reset(options={"task": task})
        for i, action in enumerate(actions):
            if self._done:
                raise ConfigurationError(f"the episode ended after {i} of {len(actions)} actions")
            observation, _, _, _, info = self.step(action)
        return observation, info

    def replay_until_end(self, task: Task | str, actions: Sequence[str]) -> tuple[str, dict[str, Any]]:
        """Reset to ``task`` and take ``actions`` in order until the episode ends; the rest are left.

        Returns the last observation and info (the reset's when ``actions`` is empty).
        """
        observation, info = self.reset(options={"task": task})
        for action in actions:
            if self._done:
                break
            observation, _, _, _, info = self.step(action)
        return observation, info
