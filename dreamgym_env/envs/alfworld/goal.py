"""ALFWorld goals: the six task families, their instructions and how a room satisfies them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dreamgym_env.envs.alfworld.world import LAMPS, PROCESSES, Process, World, can_contain, kind_of
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

if TYPE_CHECKING:
    from dreamgym_env.envs.alfworld.household import Household
    from dreamgym_env.envs.alfworld.state import ALFWorldState

FAMILIES = (
    "pick_and_place",
    "pick_clean_then_place",
    "pick_heat_then_place",
    "pick_cool_then_place",
    "look_at_obj_in_light",
    "pick_two_obj_and_place",
)
"""ALFWorld's six task types (``pick_and_place_simple`` ... in ALFWorld's own data)."""
TEMPLATES: dict[str, tuple[str, str]] = {
    "pick_and_place": ("put a {obj} in {recep}.", "put some {obj} on {recep}."),
    "pick_clean_then_place": ("put a clean {obj} in {recep}.", "clean some {obj} and put it in {recep}."),
    "pick_heat_then_place": ("put a hot {obj} in {recep}.", "heat some {obj} and put it in {recep}."),
    "pick_cool_then_place": ("put a cool {obj} in {recep}.", "cool some {obj} and put it in {recep}."),
    "look_at_obj_in_light": ("look at {obj} under the {lamp}.", "examine the {obj} with the {lamp}."),
    "pick_two_obj_and_place": ("put two {obj} in {recep}.", "find two {obj} and put them in {recep}."),
}
"""ALFWorld's two phrasings of each family's goal."""
PROCESS: dict[str, Process] = {
    "pick_clean_then_place": PROCESSES["clean"],
    "pick_heat_then_place": PROCESSES["heat"],
    "pick_cool_then_place": PROCESSES["cool"],
}
"""Family -> the process that gives the object the state it needs."""


@dataclass(frozen=True)
class Goal:
    """One ALFWorld goal: the family, the object type, and the target receptacle or lamp type."""

    family: str
    object_type: str
    receptacle_type: str | None = None
    lamp_type: str | None = None

    @property
    def process(self) -> Process | None:
        """The process the object needs for the families that change it, else ``None``."""
        return PROCESS.get(self.family)

    @property
    def needed_state(self) -> str | None:
        """``clean``, ``hot`` or ``cool`` for the families that change the object, else ``None``."""
        return self.process.state if self.process else None

    @property
    def count(self) -> int:
        return 2 if self.family == "pick_two_obj_and_place" else 1

    def instruction(self, phrasing: int = 0) -> str:
        """The goal in ALFWorld's words; ``phrasing`` 0 or 1 picks one of the family's templates."""
        template = TEMPLATES[self.family][phrasing % 2]
        return template.format(obj=self.object_type, recep=self.receptacle_type, lamp=self.lamp_type)

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "object_type": self.object_type,
            "receptacle_type": self.receptacle_type,
            "lamp_type": self.lamp_type,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Goal:
        """Parse and check a goal; raises :class:`ConfigurationError` when it is malformed."""
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"an ALFWorld goal is an object, got {type(data).__name__}")
        family, obj = data.get("family"), data.get("object_type")
        recep, lamp = data.get("receptacle_type"), data.get("lamp_type")
        if family not in FAMILIES:
            raise ConfigurationError(f"goal.family must be one of {', '.join(FAMILIES)}, got {family!r}")
        if not _is_type_name(obj):
            raise ConfigurationError(f"goal.object_type must be a lower-case type name, got {obj!r}")
        if family == "look_at_obj_in_light":
            if lamp not in LAMPS:
                raise ConfigurationError(f"goal.lamp_type must be one of {sorted(LAMPS)}, got {lamp!r}")
            if recep is not None:
                raise ConfigurationError("a look_at_obj_in_light goal has no receptacle_type")
        else:
            if not _is_type_name(recep):
                raise ConfigurationError(
                    f"goal.receptacle_type must be a lower-case type name, got {recep!r}"
                )
            if lamp is not None:
                raise ConfigurationError(f"a {family} goal has no lamp_type")
        return cls(str(family), str(obj), recep, lamp)

    @classmethod
    def of_task(cls, task: Task) -> Goal:
        goal = task.metadata.get("goal")
        if goal is None:
            raise ConfigurationError(f"task {task.id!r} has no ALFWorld goal in its metadata")
        return cls.from_dict(goal)

    def infeasibility(self, world: World) -> str | None:
        """Why the goal cannot be reached in ``world``, or ``None`` when it can."""
        objects = [o for o in world.objects if kind_of(o) == self.object_type]
        kinds = {kind_of(r) for r in world.receptacles}
        if self.object_type in LAMPS:
            return f"a {self.object_type} cannot be picked up"
        if len(objects) < self.count:
            have = f"{len(objects)} {self.object_type}" if objects else f"no {self.object_type}"
            return f"the room has {have}"
        if self.lamp_type is not None and not world.of_kind(self.lamp_type):
            return f"the room has no {self.lamp_type}"
        if self.receptacle_type is not None and self.receptacle_type not in kinds:
            return f"the room has no {self.receptacle_type}"
        process = self.process
        if process is not None:
            if self.object_type not in process.objects:
                return f"a {self.object_type} cannot be made {process.state}"
            if process.tool not in kinds:
                return f"the room has no {process.tool}"
        if self.receptacle_type is not None and not can_contain(self.receptacle_type, self.object_type):
            # alfred.pddl's PutObject needs canContain, written from ALFRED's VAL_RECEPTACLE_OBJECTS
            return f"ALFRED's receptacle rules do not let a {self.object_type} go in a {self.receptacle_type}"
        return None


_TEMPLATE_PATTERNS = tuple(
    (
        family,
        re.compile(
            re.escape(template)
            .replace(re.escape("{obj}"), "(?P<obj>[a-z]+)")
            .replace(re.escape("{recep}"), "(?P<recep>[a-z]+)")
            .replace(re.escape("{lamp}"), "(?P<lamp>[a-z]+)")
        ),
    )
    for family, templates in TEMPLATES.items()
    for template in templates
)


def parse_instruction(text: str) -> Goal | None:
    """The goal an instruction states in one of ALFWorld's phrasings, or ``None``.

    Case, spacing and the final period do not matter: ``"Put a clean apple in fridge"``
    gives ``Goal("pick_clean_then_place", "apple", "fridge")``.
    """
    normal = " ".join(text.lower().split()).rstrip(".") + "."
    for family, pattern in _TEMPLATE_PATTERNS:
        match = pattern.fullmatch(normal)
        if match is not None:
            found = match.groupdict()
            try:
                return Goal.from_dict(
                    {
                        "family": family,
                        "object_type": found["obj"],
                        "receptacle_type": found.get("recep"),
                        "lamp_type": found.get("lamp"),
                    }
                )
            except ConfigurationError:
                return None
    return None


def _is_type_name(value: object) -> bool:
    return isinstance(value, str) and value.isascii() and value.isalpha() and value.islower()


class GoalCheck:
    """Scores a :class:`Goal` against a household, with the goal's objects looked up once."""

    def __init__(self, goal: Goal, world: World) -> None:
        self.goal = goal
        self.objects = tuple(o for o in world.objects if kind_of(o) == goal.object_type)
        self.lamps = tuple(world.of_kind(goal.lamp_type)) if goal.lamp_type else ()

    def score(self, house: Household) -> float:
        """The share of the goal's conditions met: 1.0 exactly when the goal is satisfied.

        Place families: an object with the needed state (if any), and one (two for
        ``pick_two``) of them in a receptacle of the target type. Light: holding the object,
        and a lamp of the type on at the agent's location.
        """
        goal = self.goal
        if goal.family == "look_at_obj_in_light":
            holding = house.holding is not None and kind_of(house.holding) == goal.object_type
            lit = any(lamp in house.lamps_on and house.where[lamp] == house.location for lamp in self.lamps)
            return (holding + lit) / 2
        state = goal.needed_state
        ready = [o for o in self.objects if state is None or state in house.states.get(o, ())]
        placed: dict[str, int] = {}
        for obj in ready:
            where = house.where[obj]
            if where is not None and kind_of(where) == goal.receptacle_type:
                placed[where] = placed.get(where, 0) + 1
        best = min(max(placed.values(), default=0), goal.count)
        if state is None:
            return best / goal.count
        return (bool(ready) + best) / 2


def state_satisfies(goal: Goal, state: ALFWorldState) -> bool:
    """Whether an abstract state shows ``goal`` met, by :class:`GoalCheck`'s rules on what it shows.

    Place families: as many objects of the type as the goal needs, with its state
    (``object_states``), seen together in or on one receptacle of the target type (a ``put``
    shows the receptacle's whole contents). Light: an object of the type in the inventory, and
    a lamp of the type on (``lamps_on``) and seen where the agent stands. This is how a
    synthetic state is scored (``reward_mode="rubric"``); on the reference env's own states it
    agrees with the reference env's win at every step.
    """
    if goal.family == "look_at_obj_in_light":
        holding = any(kind_of(o) == goal.object_type for o in state.inventory)
        here = state.seen.get(state.location, []) if state.location is not None else []
        lit = any(kind_of(lamp) == goal.lamp_type and lamp in here for lamp in state.lamps_on)
        return holding and lit
    needed = goal.needed_state
    for receptacle, objects in state.seen.items():
        if kind_of(receptacle) != goal.receptacle_type:
            continue
        ready = [
            o
            for o in objects
            if kind_of(o) == goal.object_type and (needed is None or needed in state.object_states.get(o, []))
        ]
        if len(ready) >= goal.count:
            return True
    return False
