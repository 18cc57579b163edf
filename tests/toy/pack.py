"""ToyDomain: a domain pack that lives only in the tests, to prove the pack contract is enough.

A tiny house of four rooms. The agent starts in the hall, fetches the key (in the hall, the
library to the north or the cellar to the south), unlocks the vault door, says the password that
the task's instruction shows, walks east into the vault and claims the treasure. The action
syntax is unlike WebShop's ``verb[arg]``: upper-case verbs and a space, ``MOVE north``,
``GRAB key``, ``UNLOCK door``, ``SAY <word>`` (a free slot in the ``ACTION_SLOT`` convention,
filled by :meth:`ToyDomain.fill_slots` with the task's password) and ``CLAIM <item>`` (terminal).

The state text shows everything besides what the task fixes (where the key starts, the
password, the vault's items), so it is Markov given the task: the reference env can be restored
from any state it renders. Nothing here is imported by ``dreamgym_env``: the pack registers only
in the tests that use it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from dreamgym_env.domain import (
    ACTION_SLOT,
    GENERIC_STOPWORDS,
    ActionError,
    Domain,
    DomainPrompt,
    ObservationFeatures,
    ParsedAction,
    Policy,
    RewardMode,
    Split,
)
from dreamgym_env.envs.reference import ActionOutcome, ReferenceEnvBase, parse_text_action
from dreamgym_env.envs.tasksets import TaskSet
from dreamgym_env.errors import ConfigurationError, excerpt
from dreamgym_env.task_variations import Rejection, TaskVariations
from dreamgym_env.types import Task

Door = Literal["locked", "unlocked", "open"]

HEADER = "Toy | "
ERROR_PREFIX = "Invalid action:"
VERBS = ("MOVE", "GRAB", "UNLOCK", "SAY", "CLAIM")
EXITS: dict[str, dict[str, str]] = {
    "hall": {"east": "vault", "north": "library", "south": "cellar"},
    "library": {"south": "hall"},
    "cellar": {"north": "hall"},
    "vault": {"west": "hall"},
}
KEY_ROOMS = ("hall", "library", "cellar")
TREASURES = ("gem", "crown", "coin", "ring", "chalice", "scroll")
PASSWORDS = (
    "sesame",
    "marble",
    "falcon",
    "juniper",
    "quartz",
    "lantern",
    "meadow",
    "copper",
    "thistle",
    "harbor",
    "velvet",
    "ember",
    "willow",
    "saffron",
    "granite",
    "osprey",
    "cobalt",
    "maple",
    "tundra",
    "zephyr",
    "nectar",
    "basalt",
    "cinder",
    "lotus",
    "orchid",
    "pepper",
    "raven",
    "summit",
    "tangle",
    "umber",
    "violet",
    "walnut",
)
NUM_TRAIN, NUM_TEST = 20, 8
SAY_ACTION = "SAY <word>"

RULES = """Toy house: fetch the key, open the vault and claim the treasure the instruction names.
- MOVE <direction>: go through an exit the state lists (the vault, east of the hall, only once \
its door is open).
- GRAB key: take the key when the state shows it under "Here".
- UNLOCK door: in the hall, holding the key, with the door locked: the door becomes unlocked.
- SAY <word>: in the hall with the door unlocked: the password opens the door; any other word \
leaves it shut (a Note line says so).
- CLAIM <item>: in the vault, take one of its items; this ends the episode.
Verbs are upper case, then a space and one argument. Any other action is invalid and changes \
nothing."""

STATE_FORMAT = """Toy | <room>
Goal: <instruction>
Exits: <direction> (<room>), ...
Here: <item>, ... (or nothing)
Holding: key (or nothing)
Door: locked | unlocked | open
Note: <what just failed> (only after a wrong password)
After CLAIM: "Toy | done", the Goal line, "You claimed the <item>." After an invalid action the \
state is repeated with a last line "Invalid action: <reason>"."""

REWARD_RUBRIC = """Only CLAIM ends the episode: reward 1 when the claimed item is the treasure that the \
instruction names, else 0."""

PROMPT = DomainPrompt(rules=RULES, state_format=STATE_FORMAT, reward_rubric=REWARD_RUBRIC)

_ACTION = re.compile(r"^\s*([A-Za-z]+)(?:\s+(.+?))?\s*$", re.DOTALL)
_WORD = re.compile(r"^[a-z0-9]+$")
_KEY_ROOM = re.compile(r"\bkey (?:from|in|at) the (\w+)", re.IGNORECASE)
_PASSWORD = re.compile(r"\bpassword\s+[\"']?([^\"'\s.,;]+)", re.IGNORECASE)
_TREASURE = re.compile(r"\bclaim the (\w+)", re.IGNORECASE)


# -- tasks -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Goal:
    """What a task fixes: where the key starts, the password, the treasure and the decoy beside it."""

    key_room: str
    password: str
    treasure: str
    decoy: str

    @property
    def vault_items(self) -> tuple[str, ...]:
        return tuple(sorted({self.treasure, self.decoy}))

    def metadata(self) -> dict[str, str]:
        return {
            "key_room": self.key_room,
            "password": self.password,
            "treasure": self.treasure,
            "decoy": self.decoy,
        }


def instruction_for(key_room: str, password: str, treasure: str) -> str:
    return (
        f'Get the key from the {key_room}, unlock the vault door, say the password "{password}" '
        f"and claim the {treasure}."
    )


def parse_instruction(text: str) -> tuple[str, str, str] | None:
    """``(key_room, password, treasure)`` as an instruction states them, or ``None``."""
    key, password, treasure = _KEY_ROOM.search(text), _PASSWORD.search(text), _TREASURE.search(text)
    if key is None or password is None or treasure is None:
        return None
    return key.group(1).lower(), password.group(1).lower(), treasure.group(1).lower()


def default_decoy(treasure: str) -> str:
    return next(t for t in TREASURES if t != treasure)


def goal_of(task: Task) -> Goal:
    """The goal of a task: from its metadata, else from its instruction."""
    meta = task.metadata
    if all(isinstance(meta.get(k), str) for k in ("key_room", "password", "treasure", "decoy")):
        return Goal(meta["key_room"], meta["password"], meta["treasure"], meta["decoy"])
    parsed = parse_instruction(task.instruction)
    if parsed is None:
        raise ConfigurationError(f"task {task.id!r} states no key room, password and treasure")
    return Goal(*parsed, default_decoy(parsed[2]))


def make_toy_task(domain: str, task_id: str, goal: Goal, instruction: str | None = None) -> Task:
    instruction = instruction or instruction_for(goal.key_room, goal.password, goal.treasure)
    return Task(
        id=task_id,
        domain=domain,
        instruction=instruction,
        initial_state=render(instruction, goal, World()),
        metadata=goal.metadata(),
    )


@lru_cache(maxsize=8)
def toy_tasks(domain: str, seed: int = 0) -> TaskSet:
    """The seeded tasks of a domain named ``domain``: 20 train, 8 test, each with its own password."""
    rng = random.Random(seed)
    passwords = rng.sample(PASSWORDS, NUM_TRAIN + NUM_TEST)
    tasks: list[Task] = []
    for i, password in enumerate(passwords):
        treasure, decoy = rng.sample(TREASURES, 2)
        goal = Goal(KEY_ROOMS[i % len(KEY_ROOMS)], password, treasure, decoy)
        split = "train" if i < NUM_TRAIN else "test"
        index = i if i < NUM_TRAIN else i - NUM_TRAIN
        tasks.append(make_toy_task(domain, f"{domain}-{split}-{index:02d}", goal))
    return TaskSet(train=tuple(tasks[:NUM_TRAIN]), test=tuple(tasks[NUM_TRAIN:]))


# -- states ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class World:
    """What changes during an episode (the task fixes the rest)."""

    room: str = "hall"
    holding_key: bool = False
    door: Door = "locked"
    note: str = ""
    claimed: str | None = None


def render(instruction: str, goal: Goal, world: World) -> str:
    """The state text of ``world`` in a task with ``instruction`` and ``goal``."""
    if world.claimed is not None:
        return f"{HEADER}done\nGoal: {instruction}\nYou claimed the {world.claimed}."
    exits = [
        f"{direction} ({room})"
        for direction, room in EXITS[world.room].items()
        if room != "vault" or world.door == "open"
    ]
    if world.room == "vault":
        here = list(goal.vault_items)
    else:
        here = ["key"] if not world.holding_key and goal.key_room == world.room else []
    lines = [
        f"{HEADER}{world.room}",
        f"Goal: {instruction}",
        f"Exits: {', '.join(exits)}",
        f"Here: {', '.join(here) or 'nothing'}",
        f"Holding: {'key' if world.holding_key else 'nothing'}",
        f"Door: {world.door}",
    ]
    if world.note:
        lines.append(f"Note: {world.note}")
    return "\n".join(lines)


@dataclass(frozen=True)
class View:
    """What a state text shows (read by the domain's grammar, the expert and restore)."""

    room: str
    goal_line: str
    exits: dict[str, str]
    here: tuple[str, ...]
    holding_key: bool
    door: str
    note: str
    done: bool


_EXIT = re.compile(r"(\w+) \((\w+)\)")


def read_state(state: str) -> View | None:
    """Parse a state text (error lines ignored); ``None`` when it is not a toy state."""
    lines = [line for line in state.split("\n") if not line.startswith(ERROR_PREFIX)]
    if not lines or not lines[0].startswith(HEADER):
        return None
    room = lines[0][len(HEADER) :].strip()
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(": ")
        if sep:
            fields.setdefault(name, value.strip())
    here = fields.get("Here", "nothing")
    return View(
        room=room,
        goal_line=fields.get("Goal", ""),
        exits=dict(_EXIT.findall(fields.get("Exits", ""))),
        here=() if here == "nothing" else tuple(item.strip() for item in here.split(",")),
        holding_key=fields.get("Holding") == "key",
        door=fields.get("Door", ""),
        note=fields.get("Note", ""),
        done=room == "done",
    )


@lru_cache(maxsize=4096)
def _admissible(state: str) -> tuple[str, ...]:
    view = read_state(state)
    if view is None or view.done:
        return ()
    actions = [f"MOVE {direction}" for direction in view.exits]
    if view.room == "vault":
        return (*actions, *(f"CLAIM {item}" for item in view.here))
    if "key" in view.here:
        actions.append("GRAB key")
    if view.room == "hall" and view.holding_key and view.door == "locked":
        actions.append("UNLOCK door")
    if view.room == "hall" and view.door == "unlocked":
        actions.append(SAY_ACTION)
    return tuple(actions)


def parse_action(text: str) -> ParsedAction | ActionError:
    """``VERB argument`` (the verb in any case, normalised to upper case); never raises."""
    if not isinstance(text, str):
        return ActionError("an action must be a string")
    match = _ACTION.match(text)
    if match is None:
        return ActionError(
            f"{excerpt(text, 60)!r} is not an action; write a verb, a space and one argument "
            "(MOVE north, GRAB key, UNLOCK door, SAY <word>, CLAIM <item>)"
        )
    verb, argument = match.group(1).upper(), " ".join((match.group(2) or "").split()).lower()
    if verb not in VERBS:
        return ActionError(f"unknown verb {match.group(1)!r}; the verbs are {', '.join(VERBS)}")
    if verb == "SAY":
        argument = argument.strip("\"'")
    if not _WORD.match(argument):
        return ActionError(f"{verb} takes one word, got {argument!r}")
    return ParsedAction(verb=verb, argument=argument, text=f"{verb} {argument}")


# -- the domain --------------------------------------------------------------------------------
class ToyState(BaseModel):
    """The abstract state of the toy house: the structured twin of its state text."""

    model_config = ConfigDict(extra="forbid")

    room: Literal["hall", "library", "cellar", "vault", "done"] = Field(description="where the agent is")
    goal: str = Field(description="the task's instruction")
    exits: dict[str, str] = Field(default_factory=dict, description="direction -> room")
    here: list[str] = Field(default_factory=list, description="items in the room")
    holding_key: bool = False
    door: Door = "locked"
    note: str = Field("", description="what just failed, after a wrong password")
    claimed: str | None = Field(None, description="the item claimed (room done)")


def render_toy_state(state: ToyState) -> str:
    """The state text of an abstract toy state (``toy_state_of`` reads it back)."""
    if state.room == "done":
        return f"{HEADER}done\nGoal: {state.goal}\nYou claimed the {state.claimed}."
    lines = [
        f"{HEADER}{state.room}",
        f"Goal: {state.goal}",
        f"Exits: {', '.join(f'{direction} ({room})' for direction, room in state.exits.items())}",
        f"Here: {', '.join(state.here) or 'nothing'}",
        f"Holding: {'key' if state.holding_key else 'nothing'}",
        f"Door: {state.door}",
    ]
    if state.note:
        lines.append(f"Note: {state.note}")
    return "\n".join(lines)


def toy_state_of(text: str) -> ToyState:
    """The abstract state of a toy state text (``ConfigurationError`` when it is not one)."""
    view = read_state(text)
    if view is None:
        raise ConfigurationError(f"not a toy state: {excerpt(text)}")
    if view.done:
        lines = text.split("\n")
        claimed = lines[-1].removeprefix("You claimed the ").rstrip(".")
        return ToyState(room="done", goal=lines[1].removeprefix("Goal: "), claimed=claimed)
    return ToyState(
        room=view.room,  # type: ignore[arg-type]
        goal=view.goal_line,
        exits=view.exits,
        here=list(view.here),
        holding_key=view.holding_key,
        door=view.door,  # type: ignore[arg-type]
        note=view.note,
    )


class ToyDomain(Domain):
    """The toy house (see the module docstring)."""

    name = "toy"
    display_name = "Toy"
    max_episode_steps = 8
    ends_only_on_terminal_actions = True
    reward_modes: tuple[RewardMode, ...] = ("outcome", "score")
    state_schema = ToyState
    state_kind_field = "room"

    def render_state(self, state: BaseModel) -> str:
        return render_toy_state(ToyState.model_validate(state))

    def initial_abstract_state(self, task: Task) -> ToyState:
        return toy_state_of(task.initial_state)

    def rubric_reward(
        self, task: Task, state: BaseModel, action: ParsedAction, reward: RewardMode = "outcome"
    ) -> float | None:
        """1 when the claimed item is the task's treasure (the instruction names it); a decoy scores 0.5."""
        claimed = getattr(state, "claimed", None)
        if claimed is None:
            return None
        won = claimed == goal_of(task).treasure
        return 1.0 if won else (0.5 if reward == "score" else 0.0)

    def parse_action(self, text: str) -> ParsedAction | ActionError:
        return parse_action(text)

    def admissible_actions(self, state: str) -> list[str] | None:
        return list(_admissible(state))

    def validate_action(self, action: ParsedAction, state: str) -> ActionError | None:
        admissible = _admissible(state)
        if action.text in admissible or (action.verb == "SAY" and SAY_ACTION in admissible):
            return None
        return ActionError(f"{action.text} is not possible here")

    def is_terminal_action(self, action: ParsedAction) -> bool:
        return action.verb == "CLAIM"

    def fill_slots(self, action: str, task: Task | None, observation: str = "") -> list[str]:
        """``SAY <word>`` takes the password that the instruction shows (one candidate)."""
        text = task.instruction if task is not None else (read_state(observation) or _NO_VIEW).goal_line
        parsed = parse_instruction(text)
        if parsed is None:
            return []
        return [ACTION_SLOT.sub(parsed[1], action)]

    @property
    def prompt(self) -> DomainPrompt:
        return PROMPT

    @property
    def agent_prompt(self) -> str:
        return (
            "You explore a tiny house. Reply with one action per turn: MOVE <direction>, GRAB key, "
            "UNLOCK door, SAY <word> or CLAIM <item>."
        )

    def observation_features(self) -> ObservationFeatures:
        return ObservationFeatures(stopwords=GENERIC_STOPWORDS | {"get", "say", "password"})

    def tasks(self, split: Split = "train") -> Sequence[Task]:
        return toy_tasks(self.name).split(split)

    def make_task(self, instruction: str) -> Task:
        parsed = parse_instruction(instruction)
        if parsed is None or parsed[0] not in KEY_ROOMS or parsed[2] not in TREASURES:
            raise ConfigurationError(
                "a toy instruction names the key's room, the password and the treasure, e.g. "
                + repr(instruction_for("hall", "sesame", "gem"))
            )
        goal = Goal(*parsed, default_decoy(parsed[2]))
        return make_toy_task(self.name, f"{self.name}-free-{'-'.join(parsed)}", goal, instruction)

    def make_reference_env(self, **kwargs: Any) -> ToyRefEnv:
        kwargs.setdefault("domain", self)
        return ToyRefEnv(**kwargs)

    def expert_policy(self) -> Policy:
        return ToyExpert()

    def task_variations(self) -> ToyTaskVariations:
        return ToyTaskVariations(self)


_NO_VIEW = View("", "", {}, (), False, "", "", False)


# -- the expert --------------------------------------------------------------------------------
BACK_TO_HALL = {"library": "MOVE south", "cellar": "MOVE north", "vault": "MOVE west"}
FROM_HALL = {"library": "MOVE north", "cellar": "MOVE south"}


class ToyExpert:
    """Wins every toy task from any state: key, door, password, vault, treasure."""

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        view = read_state(observation)
        task = info.get("task")
        if view is None or view.done:
            raise ConfigurationError(f"the toy expert cannot read {excerpt(observation, 60)!r}")
        goal = goal_of(task) if isinstance(task, Task) else None
        parsed = parse_instruction(view.goal_line)
        key_room, password, treasure = (
            (goal.key_room, goal.password, goal.treasure) if goal is not None else parsed or ("", "", "")
        )
        if view.room == "vault":
            return f"CLAIM {treasure}"
        if not view.holding_key:
            if "key" in view.here:
                return "GRAB key"
            return FROM_HALL[key_room] if view.room == "hall" else BACK_TO_HALL[view.room]
        if view.room != "hall":
            return BACK_TO_HALL[view.room]
        if view.door == "locked":
            return "UNLOCK door"
        if view.door == "unlocked":
            return f"SAY {password}"
        return "MOVE east"


# -- the reference env -------------------------------------------------------------------------
class ToyRefEnv(ReferenceEnvBase):
    """The programmatic toy house: ground truth beside ``DreamGym/Toy-v0``.

    Keyword arguments as every reference env: ``split``, ``tasks``, ``reward`` (``"outcome"``:
    1 when the treasure is claimed; ``"score"``: 1 for the treasure, 0.5 for the decoy),
    ``max_steps``, ``render_mode``, ``max_text_length`` and ``domain`` (injected by
    :meth:`ToyDomain.make_reference_env`).
    """

    restorable: ClassVar[bool] = True

    def __init__(self, *, domain: Domain | None = None, **kwargs: Any) -> None:
        super().__init__(domain=domain if domain is not None else ToyDomain(), **kwargs)
        self.goal: Goal | None = None
        self.world = World()

    def _task_set(self) -> TaskSet:
        return toy_tasks(self.domain.name)

    @property
    def state(self) -> str:
        assert self.task is not None and self.goal is not None
        return render(self.task.instruction, self.goal, self.world)

    @property
    def abstract_state(self) -> ToyState:
        """The current state as a :class:`ToyState` (``render_toy_state`` gives :attr:`state`)."""
        return toy_state_of(self.state)

    def admissible_actions(self) -> list[str]:
        return list(_admissible(self.state))

    def _check_task(self, task: Task) -> None:
        goal_of(task)  # raises for a task without a goal

    def restore(self, task: Task, state: str) -> None:
        """Put the env in ``state`` of ``task``; ConfigurationError for a state it never renders."""
        task = self.resolve_task(task)
        goal = goal_of(task)
        view = read_state(state)
        if (
            view is None
            or view.done
            or view.room not in EXITS
            or view.door not in ("locked", "unlocked", "open")
        ):
            raise ConfigurationError(f"not a toy state the env can continue from: {excerpt(state, 120)!r}")
        world = World(view.room, view.holding_key, view.door, view.note)  # type: ignore[arg-type]
        clean = "\n".join(line for line in state.split("\n") if not line.startswith(ERROR_PREFIX))
        if render(task.instruction, goal, world) != clean:
            raise ConfigurationError(
                f"state does not match what the toy env renders: {excerpt(state, 120)!r}"
            )
        self.task, self.goal, self.world = task, goal, world
        self.elapsed_steps, self._done = 0, False

    def _start(self, task: Task) -> None:
        self.task = task
        self.goal = goal_of(task)
        self.world = World()

    def _apply(self, action: object) -> ActionOutcome:
        assert self.goal is not None
        parsed = parse_text_action(action, self.domain.parse_action)
        if isinstance(parsed, ParsedAction):
            parsed = self.domain.validate_action(parsed, self.state) or parsed
        if isinstance(parsed, ActionError):
            observation = self.domain.invalid_action_feedback(self.state, parsed)
            return ActionOutcome(
                observation,
                0.0,
                False,
                {"action_valid": False, "error": parsed.message, "won": False, "score": 0.0},
            )
        self.world = self._moved(parsed)
        terminated = self.world.claimed is not None
        won = terminated and self.world.claimed == self.goal.treasure
        score = (1.0 if won else 0.5) if terminated else 0.0
        self._print_step(parsed.text, self.state)
        return ActionOutcome(
            self.state,
            self.reward_of(score, won),
            terminated,
            {"action_valid": True, "won": won, "score": score},
        )

    def _moved(self, action: ParsedAction) -> World:
        assert self.goal is not None
        world = replace(self.world, note="")
        if action.verb == "MOVE":
            return replace(world, room=EXITS[world.room][action.argument])
        if action.verb == "GRAB":
            return replace(world, holding_key=True)
        if action.verb == "UNLOCK":
            return replace(world, door="unlocked")
        if action.verb == "SAY":
            if action.argument == self.goal.password:
                return replace(world, door="open")
            return replace(world, note=f'the door stays shut for "{action.argument}".')
        return replace(world, claimed=action.argument)


# -- task variations ---------------------------------------------------------------------------
class ToyTaskVariations(TaskVariations):
    """A candidate names its key room, password and treasure; the reference env proves it winnable."""

    def describe(self) -> str:
        return (
            f"{self.domain.prompt.rules}\nThe key starts in one of: {', '.join(KEY_ROOMS)}. "
            f"Treasures: {', '.join(TREASURES)}. A password is one lower-case word."
        )

    def seed_context(self, task: Task) -> str:
        goal = goal_of(task)
        return f"key_room: {goal.key_room}; password: {goal.password}; treasure: {goal.treasure}"

    def candidate_schema(self) -> dict[str, Any]:
        text = {"type": "string"}
        return {
            "type": "object",
            "properties": {
                "parent_id": text,
                "instruction": text,
                "key_room": text,
                "password": text,
                "treasure": text,
            },
            "required": ["parent_id", "instruction", "key_room", "password", "treasure"],
            "additionalProperties": False,
        }

    def fingerprint(self, task: Task) -> str:
        goal = goal_of(task)
        return f"{goal.key_room}|{goal.password}|{goal.treasure}"

    def build(self, candidate: Mapping[str, Any], parent: Task) -> Task | Rejection:
        instruction = self.instruction_of(candidate, parent)
        if isinstance(instruction, Rejection):
            return instruction
        fields = [candidate.get(name) for name in ("key_room", "password", "treasure")]
        if not all(isinstance(value, str) and value.strip() for value in fields):
            return Rejection("malformed", "key_room, password and treasure must be strings", parent.id)
        key_room, password, treasure = (str(value).strip().lower() for value in fields)
        if parse_instruction(instruction) != (key_room, password, treasure):
            return Rejection(
                "malformed", "the instruction does not state the key room, password and treasure", parent.id
            )
        if key_room not in KEY_ROOMS:
            return Rejection("infeasible", f"the key cannot start in {key_room!r}", parent.id, instruction)
        if treasure not in TREASURES:
            return Rejection("infeasible", f"the vault holds no {treasure!r}", parent.id, instruction)
        parent_goal = goal_of(parent)
        decoy = parent_goal.decoy if parent_goal.decoy != treasure else default_decoy(treasure)
        goal = Goal(key_room, password, treasure, decoy)
        task = make_toy_task(self.name, "", goal, instruction)
        task = self.new_task(parent, instruction, task.initial_state, goal.metadata())
        if not self.winnable(task):
            return Rejection(
                "infeasible", f"the expert cannot win it (password {password!r})", parent.id, instruction
            )
        return task

    def winnable(self, task: Task) -> bool:
        """Whether the expert wins ``task`` in the reference env (e.g. a password SAY cannot say)."""
        env = self.domain.make_reference_env(tasks=[task], max_steps=self.domain.max_episode_steps)
        expert = self.domain.expert_policy()
        observation, info = env.reset(options={"task": task})
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(expert(observation, info))
            done = terminated or truncated
        return bool(info["won"])
