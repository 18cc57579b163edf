"""ALFWorld 0.3.5's text commands (the ``template`` of each action in ``alfworld/data/alfred.twl2``).

``go to {recep}``, ``take {obj} from {recep}``, ``put {obj} in/on {recep}``, ``open {recep}``,
``close {recep}``, ``use {obj}``, ``clean|heat|cool {obj} with {recep}``, ``slice {obj} with
{knife}``, ``examine {obj|recep}``, ``inventory`` and ``look``. Names are a type and a number
(``cabinet 3``). Parsing is as exact as TextWorld's ``PddlEnv.step``, which strips the command
and looks it up among the admissible ones: only surrounding whitespace is forgiven; case, inner
spacing, a final period or another wording (``toggle``, ``put X in Y``) make it unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from dreamgym_env.domain import ActionError, ParsedAction

MAX_ACTION_CHARS = 200
_NAME = r"([a-z]+ [1-9]\d*)"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (verb, re.compile(pattern, re.ASCII))
    for verb, pattern in (
        ("go", rf"go to {_NAME}"),
        ("take", rf"take {_NAME} from {_NAME}"),
        ("put", rf"put {_NAME} in/on {_NAME}"),
        ("open", rf"open {_NAME}"),
        ("close", rf"close {_NAME}"),
        ("use", rf"use {_NAME}"),
        ("clean", rf"clean {_NAME} with {_NAME}"),
        ("heat", rf"heat {_NAME} with {_NAME}"),
        ("cool", rf"cool {_NAME} with {_NAME}"),
        ("slice", rf"slice {_NAME} with {_NAME}"),
        ("examine", rf"examine {_NAME}"),
        ("inventory", "inventory"),
        ("look", "look"),
    )
)
_USAGE = (
    "expected exactly one of ALFWorld's commands: go to, take ... from, put ... in/on, open, close, use, "
    "clean/heat/cool ... with, slice ... with, examine, inventory or look (lower case, single spaces)"
)


@dataclass(frozen=True)
class Command:
    """A parsed command: its verb, the object it handles and the receptacle it involves.

    For ``go to``, ``open`` and ``close`` the receptacle is ``recep``; for ``use`` and
    ``examine`` the name is ``obj`` (``examine`` also takes a receptacle there); for ``slice``
    the knife is ``recep``.
    """

    verb: str
    obj: str | None = None
    recep: str | None = None

    @property
    def text(self) -> str:
        """The canonical text of the command."""
        verb, obj, recep = self.verb, self.obj, self.recep
        if verb == "go":
            return f"go to {recep}"
        if verb == "take":
            return f"take {obj} from {recep}"
        if verb == "put":
            return f"put {obj} in/on {recep}"
        if verb in ("open", "close"):
            return f"{verb} {recep}"
        if verb in ("clean", "heat", "cool", "slice"):
            return f"{verb} {obj} with {recep}"
        if verb in ("use", "examine"):
            return f"{verb} {obj}"
        return verb


def parse_command(text: object) -> Command | ActionError:
    """Parse an ALFWorld command; never raises, whatever ``text`` is."""
    if not isinstance(text, str):
        return ActionError(f"an action must be a string, got {type(text).__name__}")
    if len(text) > MAX_ACTION_CHARS:
        return ActionError(f"action longer than {MAX_ACTION_CHARS} characters")
    return _parse(text)


@lru_cache(maxsize=8192)
def _parse(text: str) -> Command | ActionError:
    # Cached: policies repeat the same few commands, and parsing is most of a step's cost.
    command = text.strip()
    for verb, pattern in _PATTERNS:
        match = pattern.fullmatch(command)
        if match is None:
            continue
        names = match.groups()
        if verb in ("go", "open", "close"):
            return Command(verb, recep=names[0])
        if verb in ("use", "examine"):
            return Command(verb, obj=names[0])
        if names:
            return Command(verb, obj=names[0], recep=names[1])
        return Command(verb)
    return ActionError(_USAGE)


def parse_action(text: object) -> ParsedAction | ActionError:
    """Parse an action into the generic :class:`ParsedAction` (verb, arguments, canonical text)."""
    command = parse_command(text)
    if isinstance(command, ActionError):
        return command
    canonical = command.text
    argument = command.recep if command.verb == "go" else canonical.partition(" ")[2]
    return ParsedAction(verb=command.verb, argument=argument or "", text=canonical)
