"""The ALFWorld domain: a household text world where the agent finds, changes and places objects."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from dreamgym_env.domain import (
    ActionError,
    Domain,
    DomainPrompt,
    ParsedAction,
    Policy,
    RewardMode,
    Split,
    SuppliedFields,
)
from dreamgym_env.envs.alfworld.goal import Goal, parse_instruction, state_satisfies
from dreamgym_env.envs.alfworld.grammar import MAX_ACTION_CHARS, parse_action, parse_command
from dreamgym_env.envs.alfworld.household import Household
from dreamgym_env.envs.alfworld.prompt import PROMPT
from dreamgym_env.envs.alfworld.reference_env import MAX_EPISODE_STEPS
from dreamgym_env.envs.alfworld.state import NOTHING_HAPPENS, STATE_ORDER, ALFWorldState, render
from dreamgym_env.envs.alfworld.state import admissible_actions as state_admissible_actions
from dreamgym_env.envs.alfworld.tasks import starting_places, world_of
from dreamgym_env.envs.alfworld.world import OPENABLE, PROCESSES, kind_of
from dreamgym_env.envs.tasksets import free_task_id
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

if TYPE_CHECKING:
    from dreamgym_env.envs.alfworld.real_server import ALFWorldServerEnv
    from dreamgym_env.envs.alfworld.reference_env import ALFWorldRefEnv
    from dreamgym_env.envs.alfworld.task_variations import ALFWorldTaskVariations

DEFAULT_SCENE, DEFAULT_SEED = "kitchen", 0
"""The room of a free instruction that states no goal of this domain."""
_TASK_LINE = "Your task is to: "


STATE_FIELDS = tuple(ALFWorldState.model_fields)
ANSWERED = ("event", "feedback")
"""Fields every answer writes: what the step showed."""
CHANGES: dict[str, tuple[str, ...]] = {
    "go": ("location", "is_open", "seen"),
    "open": ("is_open", "seen"),
    "close": ("is_open",),
    "take": ("seen", "inventory"),
    "put": ("seen", "inventory"),
    "clean": ("object_states",),
    "heat": ("object_states",),
    "cool": ("object_states",),
    "slice": ("object_states",),
    "use": ("lamps_on",),
    "examine": ("seen",),
}
"""Command verb -> the state fields beside ``event`` and ``feedback`` that it can change
(alfworld's :class:`~dreamgym_env.envs.alfworld.household.Household` transitions); ``inventory``
and ``look`` change none. A command that fails changes nothing (``Nothing happens.``)."""
MOVES = tuple(verb for verb, fields in CHANGES.items() if {"seen", "inventory"} <= set(fields))
"""Commands that can move an object (take, put): the model writes the ``seen`` entry they change."""
LOOKS = tuple(verb for verb, fields in CHANGES.items() if "seen" in fields and verb not in MOVES)
"""Commands that can look into a receptacle (go to, open, examine): the room's data gives ``seen`` after them."""
SETTLED_FIELDS: dict[str, tuple[str, ...]] = {
    "take": ("feedback", "inventory", "seen"),
    "put": ("feedback", "inventory", "seen"),
    **dict.fromkeys(PROCESSES, ("feedback", "object_states")),
}
"""Commands whose effect, where the model judges that they work, the household's rules write
(:func:`_settled`), and the fields they write."""


class ALFWorldDomain(Domain):
    """ALFWorld: text observations of one room, ALFWorld's commands (``go to cabinet 1`` ...)."""

    name = "alfworld"
    display_name = "ALFWorld"
    max_episode_steps = MAX_EPISODE_STEPS
    max_action_chars = MAX_ACTION_CHARS
    reward_modes = ("outcome", "score")
    ends_when_won = True

    state_schema = ALFWorldState
    state_kind_field = "location"
    experience_model_dir = Path(__file__).parent / "experience_model"
    # Held out (docs/results.md): the distilled model agrees on rewards and episode ends 1.00
    # (always-0 0.88) at ~14 transitions/s; the 0.5B adapter's are always-0's (0.92), at 0.06/s.
    preferred_experience_model = "distilled"

    def render_state(self, state: Any) -> str:
        """The ALFWorld-style observation of an abstract state."""
        return render(state)

    def initial_abstract_state(self, task: Task) -> ALFWorldState:
        """The start of the task's room: in the middle of it, nothing seen yet."""
        return Household(world_of(task), task.instruction).abstract_state()

    def state_admissible_actions(self, state: Any) -> list[str] | None:
        """ALFWorld's commands valid in an abstract state (the text alone does not list the room)."""
        return state_admissible_actions(state)

    def parse_action(self, text: str) -> ParsedAction | ActionError:
        return parse_action(text)

    def action_arguments(self, action: str) -> tuple[str, ...]:
        """The objects and receptacles named: ``put apple 1 in/on fridge 1`` -> ``("apple 1", "fridge 1")``."""
        command = parse_command(action)
        if isinstance(command, ActionError):
            return ()
        return tuple(name for name in (command.obj, command.recep) if name)

    @property
    def prompt(self) -> DomainPrompt:
        return PROMPT

    def tasks(self, split: Split = "train") -> Sequence[Task]:
        """The generated tasks: 3,528 train and 504 test, in different rooms."""
        from dreamgym_env.envs.alfworld.tasks import load_tasks

        return load_tasks().split(split)

    def instruction_in(self, observation: str) -> str:
        """The ``Your task is to: ...`` line of a game's intro (the reference env's and AgentGym's server's)."""
        for line in observation.splitlines():
            if line.startswith(_TASK_LINE):
                return line[len(_TASK_LINE) :]
        return ""

    def make_task(self, instruction: str) -> Task:
        """A task for a free instruction.

        An instruction in one of ALFWorld's phrasings ("put a clean apple in fridge.") gets its
        goal and the first train room where it is solvable, so the reference env can score it;
        any other instruction starts in a default kitchen, with no goal.
        """
        from dreamgym_env.envs.alfworld.goal import GoalCheck
        from dreamgym_env.envs.alfworld.household import Household
        from dreamgym_env.envs.alfworld.state import start_text
        from dreamgym_env.envs.alfworld.tasks import NUM_WORLDS, is_test_world, make_task, scene_of
        from dreamgym_env.envs.alfworld.world import load_world

        task_id = free_task_id(self.name, instruction)
        goal = parse_instruction(instruction)
        if goal is not None:
            for seed in range(NUM_WORLDS):
                world = load_world(scene_of(seed), seed)
                if is_test_world(seed) or goal.infeasibility(world) is not None:
                    continue
                if GoalCheck(goal, world).score(Household(world)) < 1.0:
                    return make_task(task_id, world, goal, instruction=instruction)
        world = load_world(DEFAULT_SCENE, DEFAULT_SEED)
        metadata = {"scene": world.scene, "world_seed": world.seed}
        return Task(
            id=task_id,
            domain=self.name,
            instruction=instruction,
            initial_state=start_text(world.receptacles, instruction),
            metadata=metadata,
            world=starting_places(world),
        )

    def make_reference_env(self, **kwargs: Any) -> ALFWorldRefEnv:
        """The programmatic household (see :class:`~dreamgym_env.envs.alfworld.reference_env.ALFWorldRefEnv`)."""
        from dreamgym_env.envs.alfworld.reference_env import ALFWorldRefEnv

        kwargs.setdefault("domain", self)
        return ALFWorldRefEnv(**kwargs)

    def make_real_env(self, **kwargs: Any) -> ALFWorldServerEnv:
        """The ALFWorld of a running AgentGym server (see :class:`~dreamgym_env.envs.alfworld.real_server.ALFWorldServerEnv`)."""
        from dreamgym_env.envs.alfworld.real_server import ALFWorldServerEnv

        kwargs.setdefault("domain", self)
        return ALFWorldServerEnv(**kwargs)

    def expert_policy(self) -> Policy:
        """A fresh expert (it plans from the task's room and goal, as ALFWorld's handcoded expert)."""
        from dreamgym_env.envs.alfworld.expert import ALFWorldExpert

        return ALFWorldExpert()

    def task_variations(self) -> ALFWorldTaskVariations:
        from dreamgym_env.envs.alfworld.task_variations import ALFWorldTaskVariations

        return ALFWorldTaskVariations(self)

    def supplies(
        self, task: Task | None, state: str, abstract: BaseModel | None, action: ParsedAction
    ) -> SuppliedFields:
        """What a command cannot change, what the room holds, and what a command that works writes.

        Carried: what the command cannot change (:data:`CHANGES`), the instruction and the
        receptacles always. Updated: ``seen`` where the command can move an object (:data:`MOVES`,
        one entry at most). Given: ``seen`` after a look (:func:`_seen_after_look`). World: in
        text mode the starting places (:func:`~dreamgym_env.envs.alfworld.tasks.starting_places`)
        of the receptacles the action names (``go to cabinet 12`` shows the line of
        ``cabinet 12``, not that of ``cabinet 1``; ``look`` shows none), in structured mode what a
        ``put`` would leave in its receptacle (:func:`_put_line`). Settled: a ``take``, ``put``,
        ``clean``, ``heat`` or ``cool`` the model judged to work (:func:`_settled`).
        """
        if abstract is None:  # an observation's text
            if task is None:
                return SuppliedFields()
            named = set(self.action_arguments(action.text))
            places = tuple(line for line in task.world.splitlines() if _place_name(line) in named)
            return SuppliedFields(world=places)
        room = _room(abstract)
        changed = CHANGES.get(action.verb, ())
        carried = tuple(name for name in STATE_FIELDS if name not in changed and name not in ANSWERED)
        updated = ("seen",) if action.verb in MOVES else ()
        if task is None:
            return SuppliedFields(carried, updated)
        return SuppliedFields(
            carried,
            updated,
            given=_seen_after_look(task, room, action),
            world=_put_line(task, room, action.text),
            settle=partial(_settled, room, action) if action.verb in SETTLED_FIELDS else None,
            settled_fields=SETTLED_FIELDS.get(action.verb, ()),
        )

    def rubric_reward(
        self, task: Task, state: Any, action: ParsedAction, reward: RewardMode = "outcome"
    ) -> float | None:
        """1.0 when the state shows the task's goal met (:func:`~dreamgym_env.envs.alfworld.goal.state_satisfies`), else 0.0.

        ``None`` when the task has no goal (a free instruction in none of ALFWorld's phrasings),
        and for ``reward="score"``: the reference env pays that score step by step, as the share
        of the goal's conditions its house meets, which the state does not hold.
        """
        if reward == "score":
            return None
        try:
            goal = Goal.of_task(task)
        except ConfigurationError:
            return None
        return float(state_satisfies(goal, _room(state)))

    def admissible_actions(self, state: str) -> list[str] | None:
        """``None``: one ALFWorld observation does not list the room, so the text cannot tell."""
        return None

    def invalid_action_feedback(self, state: str, error: ActionError) -> str:
        """ALFWorld's answer to anything it cannot do."""
        return NOTHING_HAPPENS


def _room(state: Any) -> ALFWorldState:
    return state if isinstance(state, ALFWorldState) else ALFWorldState.model_validate(state.model_dump())


COUNT_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
"""How a put line counts the objects of a type, in the words of ALFWorld's goals (``find two cup ...``)."""


def _start_contents(task: Task) -> dict[str, list[str]] | None:
    """What each receptacle of the task's room holds at the start; ``None`` for a task without a room."""
    try:
        return world_of(task).contents()
    except ConfigurationError:
        return None


def _seen_after_look(task: Task, room: ALFWorldState, action: ParsedAction) -> dict[str, Any]:
    """``seen`` after a command that can look into a receptacle (``go to``, ``open``, ``examine``).

    What a receptacle holds is the room's data, not a rule: what the agent last saw there,
    or, if it never saw inside, what the room put there at the start (only the agent moves
    objects, and a move records what it leaves). ``go to`` a receptacle that cannot be
    closed shows it; ``open`` shows the closed receptacle the agent stands at; any other look
    shows nothing new (a receptacle seen open was recorded then). Where the agent goes,
    whether a receptacle is open, what the step shows, the episode's end and the reward stay the model's.
    """
    if action.verb not in LOOKS:
        return {}
    contents = _start_contents(task)
    if contents is None:
        return {}
    command = parse_command(action.text)
    seen = {receptacle: list(objects) for receptacle, objects in room.seen.items()}
    recep = None if isinstance(command, ActionError) else command.recep
    if recep not in contents:
        return {"seen": seen}
    shows = (
        kind_of(recep) not in OPENABLE
        if action.verb == "go"
        else action.verb == "open" and recep == room.location and room.is_open is False
    )
    if shows:
        seen[recep] = seen.get(recep, contents[recep])
    return {"seen": seen}


def _settled(before: ALFWorldState, action: ParsedAction, answered: BaseModel) -> BaseModel:
    """The model's ``answered`` next state of a ``take``, ``put``, ``clean``, ``heat`` or ``cool`` on ``before``, as ALFWorld writes it.

    The model's verdict is its feedback: ``Nothing happens.`` or anything else. A command
    that works writes ALFWorld's message for it (``You pick up the {obj} from the
    {recep}.``), moves the object between the receptacle's entry in ``seen`` and the
    inventory, or gives it the process's state, exactly as the reference household does;
    the distilled model wrote another object's number there in about half of these steps
    (docs/results.md), and the agent then carried on with an object the room does not
    hold. A verdict of ``Nothing happens.`` is left as it is.
    """
    command = parse_command(action.text)
    after = _room(answered)
    if isinstance(command, ActionError) or after.event != "message" or after.feedback == NOTHING_HAPPENS:
        return answered
    obj, recep = command.obj, command.recep
    assert obj is not None and recep is not None  # the grammar gives both to these verbs
    seen = {name: list(objects) for name, objects in after.seen.items()}
    if action.verb == "take":
        if recep in before.seen:
            seen[recep] = [o for o in before.seen[recep] if o != obj]
        return after.model_copy(
            update={
                "feedback": f"You pick up the {obj} from the {recep}.",
                "inventory": [obj],
                "seen": seen,
            }
        )
    if action.verb == "put":
        if recep in before.seen:
            seen[recep] = [*(o for o in before.seen[recep] if o != obj), obj]
        return after.model_copy(
            update={"feedback": f"You put the {obj} in/on the {recep}.", "inventory": [], "seen": seen}
        )
    process = PROCESSES[action.verb]
    states = {*before.object_states.get(obj, ()), process.state} - {process.undoes}
    object_states = {**before.object_states, obj: [s for s in STATE_ORDER if s in states]}
    return after.model_copy(
        update={
            "feedback": f"You {action.verb} the {obj} using the {recep}.",
            "object_states": dict(sorted(object_states.items())),
        }
    )


def _put_line(task: Task, room: ALFWorldState, action: str) -> tuple[str, ...]:
    """What a ``put`` leaves in its receptacle if it works, its type counted.

    For example ``If the put works, fridge 1 holds two apple: ["egg 1", "apple 1", "apple 2"]``.
    It is the room's data, as in :func:`_seen_after_look` (what the agent last saw
    there, or the room's start), with the object put last, as
    :func:`_settled` records it, and how many objects of the put one's type
    that makes. Whether the put works and whether it completes the task stay the model's.
    """
    command = parse_command(action)
    if isinstance(command, ActionError) or command.verb != "put" or command.obj is None:
        return ()
    contents = _start_contents(task)
    if contents is None or command.recep not in contents:
        return ()
    held = room.seen.get(command.recep, contents[command.recep])
    after = [*(o for o in held if o != command.obj), command.obj]
    kind = kind_of(command.obj)
    count = sum(kind_of(o) == kind for o in after)
    words = COUNT_WORDS[count] if count < len(COUNT_WORDS) else str(count)
    return (f"If the put works, {command.recep} holds {words} {kind}: {json.dumps(after)}",)


_JSON = json.JSONDecoder()


def _place_name(line: str) -> str:
    """The receptacle of a starting-places line (``"cabinet 5": [...]`` -> ``cabinet 5``), or ``""``."""
    try:
        name, _ = _JSON.raw_decode(line)
    except ValueError:
        return ""
    return name if isinstance(name, str) else ""
