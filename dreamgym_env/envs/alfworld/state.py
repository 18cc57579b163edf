"""The abstract ALFWorld state, its observation text and the commands admissible in it.

:class:`ALFWorldState` is what the agent knows after a step: where it is, the receptacles of
the room, what it last saw in or on each receptacle, what it carries, the states (clean, hot,
cool) of objects it changed, the lamps it turned on, and what the last step showed
(``event``). :func:`render` turns it into ALFWorld's observation text, e.g.::

    You arrive at cabinet 1. The cabinet 1 is open. In it, you see a mug 2, and a plate 1.

ALFWorld's observations are not Markov (the text of one step does not list the room), so
the state keeps what earlier steps showed; the reference env exposes it as
``env.abstract_state`` and its text is always ``render(env.abstract_state)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from dreamgym_env.envs.alfworld.world import CLEANER, COOLER, HEATER, LAMPS, OPENABLE, kind_of

Event = Literal["start", "arrive", "open", "examine", "look", "inventory", "message"]
"""What the observation shows: ``start`` (the room and the task), ``arrive`` / ``open`` /
``examine`` (the current receptacle's contents), ``look``, ``inventory``, or ``message``
(a one-line feedback such as ``You pick up the apple 1 from the countertop 1.``)."""
NOTHING_HAPPENS = "Nothing happens."
STATE_ORDER = ("clean", "hot", "cool")


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
    """Object -> its states among ``clean``, ``hot``, ``cool`` (only objects that have one)."""
    lamps_on: list[str] = Field(default_factory=list)
    event: Event = "start"
    feedback: str = ""
    """The observation's text when ``event`` is ``message`` (else empty)."""


def see_list(names: Sequence[str]) -> str:
    """ALFWorld's listing: ``a apple 1``, ``a apple 1, and a mug 2``, ``a a, a b, and a c``, or ``nothing``."""
    if not names:
        return "nothing"
    items = [f"a {name}" for name in names]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + ", and " + items[-1]


def describe(receptacle: str, is_open: bool | None, contents: Sequence[str]) -> str:
    """What standing at a receptacle shows: its open/closed state and, if visible, its contents."""
    if is_open is None:
        return f"On the {receptacle}, you see {see_list(contents)}."
    if not is_open:
        return f"The {receptacle} is closed."
    return f"The {receptacle} is open. In it, you see {see_list(contents)}."


def room_text(receptacles: Sequence[str]) -> str:
    return f"You are in the middle of a room. Looking quickly around you, you see {see_list(receptacles)}."


def start_text(receptacles: Sequence[str], instruction: str) -> str:
    """The first observation of an episode: the room's receptacles and the task."""
    return f"{room_text(receptacles)}\n\nYour task is to: {instruction}"


def inventory_text(inventory: Sequence[str]) -> str:
    return f"You are carrying: {see_list(inventory)}." if inventory else "You are not carrying anything."


def examine_text(obj: str, states: Sequence[str], lamp_on: bool) -> str:
    """ALFWorld's answer to ``examine`` an object."""
    if kind_of(obj) in LAMPS:
        return f"The {obj} is turned {'on' if lamp_on else 'off'}."
    if states:
        return f"This is a {' and '.join(states)} {obj}."
    return f"There's nothing special about {obj}."


def render(state: ALFWorldState) -> str:
    """The observation text of ``state``, in ALFWorld's style (deterministic)."""
    event, location = state.event, state.location
    if event == "start":
        return start_text(state.receptacles, state.instruction)
    if event == "inventory":
        return inventory_text(state.inventory)
    if event == "look":
        if location is None:
            return room_text(state.receptacles)
        return f"You are facing the {location}. Next to it, you see nothing."
    if event in ("arrive", "open", "examine") and location is not None:
        text = describe(location, state.is_open, state.seen.get(location, []))
        if event == "arrive":
            return f"You arrive at {location}. {text}"
        return f"You open the {location}. {text}" if event == "open" else text
    return state.feedback


@lru_cache(maxsize=65_536)
def admissible_commands(
    receptacles: tuple[str, ...],
    location: str | None,
    is_open: bool | None,
    visible: tuple[str, ...],
    holding: str | None,
) -> tuple[str, ...]:
    """The valid commands, sorted as ALFWorld lists them (alphabetically).

    ``visible`` is what the agent sees at its location (empty when it is closed). Cached: a
    room has few distinct situations and the reference env asks for them every step.
    """
    commands = [f"go to {r}" for r in receptacles if r != location]
    commands += ["inventory", "look"]
    if holding is not None:
        commands.append(f"examine {holding}")
    if location is not None:
        kind = kind_of(location)
        commands.append(f"examine {location}")
        if kind in OPENABLE:
            commands.append(f"{'close' if is_open else 'open'} {location}")
        for obj in visible:
            commands.append(f"examine {obj}")
            if kind_of(obj) in LAMPS:
                commands.append(f"use {obj}")
            elif holding is None:
                commands.append(f"take {obj} from {location}")
        if holding is not None:
            if is_open is not False:
                commands.append(f"put {holding} in/on {location}")
            verb = {CLEANER: "clean", HEATER: "heat", COOLER: "cool"}.get(kind)
            if verb is not None:
                commands.append(f"{verb} {holding} with {location}")
    return tuple(sorted(commands))


def admissible_actions(state: ALFWorldState) -> list[str]:
    """The commands valid in ``state`` (the reference env lists the same in ``info``)."""
    visible = (
        () if state.location is None or state.is_open is False else tuple(state.seen.get(state.location, ()))
    )
    holding = state.inventory[0] if state.inventory else None
    return list(
        admissible_commands(tuple(state.receptacles), state.location, state.is_open, visible, holding)
    )
