"""The abstract ALFWorld state, its observation text and the commands admissible in it.

The texts are ALFWorld 0.3.5's (``alfworld/data/alfred.twl2``, rendered by TextWorld's PDDL
env): :class:`ALFWorldState` is what the agent knows after a step: where it is, the receptacles of
the room, what it last saw in or on each receptacle, what it carries, the states (clean, hot,
cool, sliced) of objects it changed, the lamps it turned on, and what the last step showed
(``event``). :func:`render` turns it into ALFWorld's observation text, e.g.::

    You arrive at loc 7. The cabinet 1 is open. In it, you see a plate 1, and a mug 2.

Listings follow TextWorld's order (its queries walk the facts sorted by entity id, and
ALFWorld's ``Demangler`` numbers the ids of a type from the highest down): type ascending,
number descending. ALFWorld's observations are not Markov (the text of one step does not list
the room), so the state keeps what earlier steps showed; the reference env exposes it as
``env.abstract_state`` and its text is always ``render(env.abstract_state)``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from dreamgym_env.envs.alfworld.world import (
    KNIVES,
    LAMPS,
    OPENABLE,
    PROCESSES,
    RECEPTACLE_OBJECTS,
    SLICEABLE,
    can_contain,
    kind_of,
)

Event = Literal["start", "arrive", "open", "examine", "look", "inventory", "message"]
"""What the observation shows: ``start`` (the room and the task), ``arrive`` / ``open`` /
``examine`` (the current receptacle's contents), ``look``, ``inventory``, or ``message``
(a one-line feedback such as ``You pick up the apple 1 from the countertop 1.``)."""
NOTHING_HAPPENS = "Nothing happens."
"""TextWorld's PddlEnv.step answer to a command that is not one of the admissible ones."""
BANNER = "-= Welcome to TextWorld, ALFRED! =-"
"""The first line of alfred.twl2's ``intro`` rule, which opens every episode."""
STATE_ORDER = ("clean", "hot", "cool", "sliced")


class ALFWorldState(BaseModel):
    """What the agent knows of the room after a step (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    instruction: str = ""
    receptacles: list[str] = Field(default_factory=list)
    """The room's receptacles, in the order the first observation lists them."""
    location: str | None = None
    """The receptacle the agent stands at; ``None`` in the middle of the room."""
    is_open: bool | None = None
    """Whether the current receptacle is open (``None`` where it cannot be opened)."""
    seen: dict[str, list[str]] = Field(default_factory=dict)
    """Receptacle -> the objects last seen in or on it (only receptacles seen so far)."""
    inventory: list[str] = Field(default_factory=list)
    """What the agent carries (at most one object)."""
    object_states: dict[str, list[str]] = Field(default_factory=dict)
    """Object -> its states among ``clean``, ``hot``, ``cool``, ``sliced`` (only objects that have one)."""
    lamps_on: list[str] = Field(default_factory=list)
    """The lamps toggled so far (alfred.pddl's ToggleObject sets ``isToggled`` for good)."""
    event: Event = "start"
    feedback: str = ""
    """The observation's text when ``event`` is ``message`` (else empty)."""


def listing_key(name: str) -> tuple[str, int]:
    """TextWorld's listing order of ALFWorld names: type ascending, then number descending."""
    kind, _, number = name.rpartition(" ")
    return kind, -int(number) if number.isdigit() else 0


@lru_cache(maxsize=65_536)
def _listed(names: tuple[str, ...]) -> str:
    if not names:
        return "nothing"
    items = [f"a {name}" for name in sorted(names, key=listing_key)]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + ", and " + items[-1]


def see_list(names: Sequence[str]) -> str:
    """alfred.twl2's list of names, in TextWorld's order (:func:`listing_key`).

    ``list_separator`` ", ", ``list_last_separator`` ", and ", ``list_empty`` "nothing"; every
    indefinite article is "a" (TextWorld's PddlEnv sets it so for every entity).
    """
    return _listed(tuple(names))


@lru_cache(maxsize=4096)
def location_numbers(receptacles: tuple[str, ...]) -> dict[str, int]:
    """Receptacle -> the ``N`` of ``loc N``, the location ALFWorld 0.3's arrival text names.

    In ALFWorld the number is the Demangler's count over the game's location ids (receptacle
    points, object points and the start), so it bears no relation to the receptacle; here it is
    a fixed shuffle of ``1 .. 2R + 1`` seeded by the room's receptacles, the same in every process.
    """
    rng = random.Random("alfworld-locations|" + "|".join(receptacles))
    return dict(
        zip(receptacles, rng.sample(range(1, 2 * len(receptacles) + 2), len(receptacles)), strict=True)
    )


def describe(receptacle: str, is_open: bool | None, contents: Sequence[str]) -> str:
    """alfred.twl2's ``examineReceptacle.feedback``: open/closed state and, if visible, contents."""
    if is_open is None:
        return f"On the {receptacle}, you see {see_list(contents)}."
    if not is_open:
        return f"The {receptacle} is closed."
    return f"The {receptacle} is open. In it, you see {see_list(contents)}."


def arrive_text(
    receptacles: Sequence[str], receptacle: str, is_open: bool | None, contents: Sequence[str]
) -> str:
    """alfred.twl2's ``GotoLocation.feedback``: ``You arrive at loc N.`` and the receptacle's view."""
    number = location_numbers(tuple(receptacles)).get(receptacle, 0)
    return f"You arrive at loc {number}. {describe(receptacle, is_open, contents)}"


def room_text(receptacles: Sequence[str]) -> str:
    """``look.feedback`` away from every receptacle; ``list_appliances`` names ``receptacles``."""
    return f"You are in the middle of a room. Looking quickly around you, you see {see_list(receptacles)}."


def start_text(receptacles: Sequence[str], instruction: str) -> str:
    """alfred.twl2's ``intro``: the banner, the room's receptacles and the task."""
    return f"{BANNER}\n\n{room_text(receptacles)}\n\nYour task is to: {instruction}"


def look_text(location: str | None) -> str:
    """The ``look`` command's answer.

    In the middle of the room the ``look`` action binds the agent's location, where no
    receptacle stands, so ``list_appliances`` finds none: "... you see nothing." (only the
    intro, with nothing bound, lists the room).
    """
    if location is None:
        return room_text(())
    return f"You are facing the {location}. Next to it, you see nothing."


def inventory_text(inventory: Sequence[str]) -> str:
    return f"You are carrying: {see_list(inventory)}." if inventory else "You are not carrying anything."


def examine_text(obj: str, states: Sequence[str], toggled: bool) -> str:
    """alfred.twl2's ``examineObject.feedback``: the first rule whose condition holds.

    ALFRED's movable receptacles (mug, bowl ...) always read as "a normal" one; then the state
    rules in the grammar's order ("hot and clean", "cold" for a cooled object, "cool" in the
    sliced ones); a lamp reads "is on" once toggled. Its "is off" rule needs the fact
    ``not_istoggled``, which TextWorld's PddlState never holds (it drops negated atoms from the
    initial state and no action deletes ``isToggled``), so an untoggled lamp has "nothing special".
    """
    kind = kind_of(obj)
    if kind in RECEPTACLE_OBJECTS:
        return f"This is a normal {obj}. In it, you see nothing."
    clean, hot, cool, sliced = (
        ("clean" in states),
        ("hot" in states),
        ("cool" in states),
        ("sliced" in states),
    )
    if sliced:
        if clean and hot:
            return f"This is a hot and clean sliced {obj}."
        if clean and cool:
            return f"This is a cool and clean sliced {obj}."
        if clean:
            return f"This is a clean sliced {obj}."
        if hot:
            return f"This is a hot sliced {obj}."
        if cool:
            return f"This is a cool sliced {obj}."
    if clean and hot:
        return f"This is a hot and clean {obj}."
    if clean and cool:
        return f"This is a cool and clean {obj}."
    if hot:
        return f"This is a hot {obj}."
    if clean:
        return f"This is a clean {obj}."
    if cool:
        return f"This is a cold {obj}."
    if kind in LAMPS and toggled:
        return f"This {obj} is on."
    if sliced:
        return f"This is a sliced {obj}."
    return f"There's nothing special about {obj}."


def render(state: ALFWorldState) -> str:
    """The observation text of ``state``, as ALFWorld 0.3.5 prints it (deterministic)."""
    event, location = state.event, state.location
    if event == "start":
        return start_text(state.receptacles, state.instruction)
    if event == "inventory":
        return inventory_text(state.inventory)
    if event == "look":
        return look_text(location)
    if event in ("arrive", "open", "examine") and location is not None:
        contents = state.seen.get(location, [])
        if event == "arrive":
            return arrive_text(state.receptacles, location, state.is_open, contents)
        text = describe(location, state.is_open, contents)
        return f"You open the {location}. {text}" if event == "open" else text
    return state.feedback


_PROCESS_AT = {process.tool: process for process in PROCESSES.values()}
"""Receptacle type -> the process alfred.pddl allows there."""


@lru_cache(maxsize=65_536)
def admissible_commands(
    receptacles: tuple[str, ...],
    location: str | None,
    is_open: bool | None,
    here: tuple[str, ...],
    holding: str | None,
) -> tuple[str, ...]:
    """The commands alfred.pddl's actions allow, as TextWorld's PddlEnv lists them (``sorted(set(...))``).

    ``here`` is every object in the current receptacle, seen or not: SliceObject needs only
    ``objectAtLocation``, so it reaches into a closed one; everything else needs it open.
    GotoLocation does not ask for a different location, so ``go to`` the current receptacle is
    admissible. Cached: a room has few distinct situations and the reference env asks every step.
    """
    commands = [f"go to {r}" for r in receptacles]
    commands += ["inventory", "look"]
    if holding is not None:
        commands.append(f"examine {holding}")
    if location is not None:
        kind = kind_of(location)
        commands.append(f"examine {location}")
        if kind in OPENABLE:
            commands.append(f"{'close' if is_open else 'open'} {location}")
        for obj in here:
            obj_kind = kind_of(obj)
            if obj_kind in LAMPS:
                commands.append(f"use {obj}")  # ToggleObject: no openness asked
            if holding is not None and kind_of(holding) in KNIVES and obj_kind in SLICEABLE:
                commands.append(f"slice {obj} with {holding}")
            if is_open is False:
                continue
            commands.append(f"examine {obj}")
            if holding is None and obj_kind not in LAMPS:
                commands.append(f"take {obj} from {location}")
        if holding is not None:
            held = kind_of(holding)
            if is_open is not False and can_contain(kind, held):
                commands.append(f"put {holding} in/on {location}")
            process = _PROCESS_AT.get(kind)
            if process is not None and held in process.objects:
                commands.append(f"{process.verb} {holding} with {location}")
    return tuple(sorted(set(commands)))


def admissible_actions(state: ALFWorldState) -> list[str]:
    """The commands valid in ``state`` (the reference env lists the same in ``info``).

    What a closed receptacle holds is what the state last saw there (the reference env uses
    the truth, which the agent does not know).
    """
    here = () if state.location is None else tuple(state.seen.get(state.location, ()))
    holding = state.inventory[0] if state.inventory else None
    return list(admissible_commands(tuple(state.receptacles), state.location, state.is_open, here, holding))
