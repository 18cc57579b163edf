"""WebArena's action grammar (the id-based action space of the WebArena paper).

``click [id]``, ``type [id] [text] [0|1]`` (1, the default, presses Enter after typing),
``hover [id]``, ``press [key_comb]``, ``scroll [up|down]``, ``new_tab``, ``tab_focus [index]``,
``close_tab``, ``goto [url]``, ``go_back``, ``go_forward`` and ``stop [answer]``. An action
wrapped in a Markdown code span or block (as WebArena's agents answer) is read from inside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from dreamgym_env.envs.domain import ActionError, ParsedAction

MAX_ACTION_CHARS = 2_000
NOT_APPLICABLE = "N/A"
"""The answer of ``stop`` for a task that cannot be done (WebArena's prompts ask for "N/A")."""
VERBS = (
    "click",
    "type",
    "hover",
    "press",
    "scroll",
    "new_tab",
    "tab_focus",
    "close_tab",
    "goto",
    "go_back",
    "go_forward",
    "stop",
)
_FENCED = re.compile(r"```(?:[a-z]*\n)?(.*?)```", re.DOTALL)
_ID = re.compile(r"^\[\s*(\d{1,9})\s*\]$")
_TYPE = re.compile(
    r"^\[\s*(\d{1,9})\s*\]\s*\[(.*)\]\s*\[\s*([01])\s*\]$|^\[\s*(\d{1,9})\s*\]\s*\[(.*)\]$", re.DOTALL
)
_BRACKET = re.compile(r"^\[(.*)\]$", re.DOTALL)
_KEY = re.compile(r"^[A-Za-z0-9]+(?:\+[A-Za-z0-9]+)*$")
USAGE = {
    "click": "click [id]",
    "type": "type [id] [text] [0|1]",
    "hover": "hover [id]",
    "press": "press [key_comb]",
    "scroll": "scroll [up|down]",
    "tab_focus": "tab_focus [index]",
    "goto": "goto [url]",
    "stop": "stop [answer]",
}


@dataclass(frozen=True)
class Command:
    """A parsed action.

    ``element``: the id for click/type/hover; ``text``: typed text, key, URL, direction or
    answer; ``enter``: press Enter after typing; ``index``: the tab of tab_focus.
    """

    verb: str
    element: int | None = None
    text: str = ""
    enter: bool = True
    index: int | None = None

    @property
    def canonical(self) -> str:
        """The action in its canonical spelling."""
        if self.verb == "type":
            return f"type [{self.element}] [{self.text}] [{int(self.enter)}]"
        if self.element is not None:
            return f"{self.verb} [{self.element}]"
        if self.index is not None:
            return f"{self.verb} [{self.index}]"
        if self.verb in ("press", "scroll", "goto", "stop"):
            return f"{self.verb} [{self.text}]"
        return self.verb


def _unwrap(text: str) -> str:
    fenced = _FENCED.findall(text)
    if fenced:
        return fenced[-1].strip()
    text = text.strip()
    return text[1:-1].strip() if len(text) > 1 and text[0] == text[-1] == "`" else text


@lru_cache(maxsize=8192)
def parse_command(text: str) -> Command | ActionError:
    """Parse one action; never raises (cached: the same text is often parsed twice a step)."""
    if not isinstance(text, str):
        return ActionError(f"an action must be a string, got {type(text).__name__}")
    if len(text) > MAX_ACTION_CHARS:
        return ActionError(f"action longer than {MAX_ACTION_CHARS} characters")
    body = _unwrap(text)
    verb, _, rest = body.partition(" ")
    verb, rest = verb.lower(), rest.strip()
    if verb not in VERBS:
        return ActionError(f"unknown action {verb[:40]!r}; valid: {', '.join(VERBS)}")
    if verb in ("new_tab", "close_tab", "go_back", "go_forward"):
        return Command(verb) if not rest else ActionError(f"{verb} takes no argument")
    if verb in ("click", "hover"):
        match = _ID.match(rest)
        return Command(verb, element=int(match.group(1))) if match else ActionError(f"expected {USAGE[verb]}")
    if verb == "type":
        match = _TYPE.match(rest)
        if match is None:
            return ActionError(f"expected {USAGE['type']}")
        if match.group(1) is not None:
            return Command(
                verb, element=int(match.group(1)), text=match.group(2), enter=match.group(3) == "1"
            )
        return Command(verb, element=int(match.group(4)), text=match.group(5))
    match = _BRACKET.match(rest)
    argument = match.group(1).strip() if match else None
    if verb == "stop":
        return (
            Command(verb, text=argument) if argument is not None else ActionError(f"expected {USAGE['stop']}")
        )
    if verb == "tab_focus":
        ok = argument is not None and argument.isdigit() and len(argument) < 4
        return (
            Command(verb, index=int(argument)) if ok and argument else ActionError(f"expected {USAGE[verb]}")
        )
    if verb == "scroll":
        ok = argument is not None and argument.lower() in ("up", "down")
        return (
            Command(verb, text=argument.lower())
            if ok and argument
            else ActionError(f"expected {USAGE[verb]}")
        )
    if verb == "press":
        ok = argument is not None and _KEY.match(argument) is not None
        return Command(verb, text=argument) if ok and argument else ActionError(f"expected {USAGE[verb]}")
    if not argument or any(c.isspace() for c in argument):
        return ActionError(f"expected {USAGE['goto']} with a URL without spaces")
    return Command(verb, text=argument)


def parse_action(text: str) -> ParsedAction | ActionError:
    """The action as the generic :class:`ParsedAction`: its verb and the canonical argument text."""
    command = parse_command(text) if isinstance(text, str) else parse_command.__wrapped__(text)
    if isinstance(command, ActionError):
        return command
    canonical = command.canonical
    return ParsedAction(verb=command.verb, argument=canonical[len(command.verb) :].strip(), text=canonical)
