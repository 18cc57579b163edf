"""WebArena's action grammar (the id-based action space of the WebArena paper).

Parsed as ``create_id_based_action`` in ``browser_env/actions.py`` of web-arena-x/webarena at
commit ``f62e0b99bc7d9e0cd996d0cf5ebb2225780ec279`` does: the verb is the text before the first
``[`` (or the first word when there is none), case-sensitive; each verb's pattern is searched
for in the action, so text after it is ignored:

``click [id]``, ``hover [id]``, ``type [id] [text] [0|1]`` (without a final ``[0]`` or ``[1]``,
`` [1]`` is appended: Enter is pressed; the text needs a character and is matched greedily),
``press [key_comb]``, ``scroll [up|down]`` (brackets optional), ``new_tab``, ``tab_focus [index]``,
``close_tab``, ``goto [url]``, ``go_back``, ``go_forward`` (the four take no argument and ignore
any) and ``stop [answer]`` (``stop`` or ``stop []`` answer nothing). A single space at most
between a verb and its ``[``, none inside the brackets of an id.

An answer holding a Markdown code block is read from the first one, as WebArena's prompt
constructors (``agent/prompts/prompt_constructor.py``, ``_extract_action``) read the model's
reply; an action longer than :data:`MAX_ACTION_CHARS` is refused (an addition of ours).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from dreamgym_env.domain import ActionError, ParsedAction

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
NO_ARGUMENT = frozenset({"new_tab", "close_tab", "go_back", "go_forward"})
_FENCED = re.compile(r"```((.|\n)*?)```")
PATTERNS = {
    "click": re.compile(r"click ?\[(\d+)\]"),
    "hover": re.compile(r"hover ?\[(\d+)\]"),
    "type": re.compile(r"type ?\[(\d+)\] ?\[(.+)\] ?\[(\d+)\]"),
    "press": re.compile(r"press ?\[(.+)\]"),
    "scroll": re.compile(r"scroll ?\[?(up|down)\]?"),
    "goto": re.compile(r"goto ?\[(.+)\]"),
    "tab_focus": re.compile(r"tab_focus ?\[(\d+)\]"),
    "stop": re.compile(r"stop ?\[(.+)\]"),
}
"""Each verb's pattern, searched for in the action as ``create_id_based_action`` does."""
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
    fenced = _FENCED.search(text)
    return fenced.group(1).strip() if fenced else text


def verb_of(action: str) -> str:
    """``create_id_based_action``'s verb: the text before the first ``[``, else the first word."""
    return action.split("[")[0].strip() if "[" in action else action.split()[0].strip()


@lru_cache(maxsize=8192)
def parse_command(text: str) -> Command | ActionError:
    """Parse one action; never raises (cached: the same text is often parsed twice a step)."""
    if not isinstance(text, str):
        return ActionError(f"an action must be a string, got {type(text).__name__}")
    if len(text) > MAX_ACTION_CHARS:
        return ActionError(f"action longer than {MAX_ACTION_CHARS} characters")
    action = _unwrap(text).strip()
    if not action:
        return ActionError(f"empty action; valid: {', '.join(VERBS)}")
    verb = verb_of(action)
    if verb not in VERBS:
        return ActionError(f"unknown action {verb[:40]!r}; valid: {', '.join(VERBS)}")
    if verb in NO_ARGUMENT:
        return Command(verb)
    if verb == "type" and not (action.endswith("[0]") or action.endswith("[1]")):
        action += " [1]"
    match = PATTERNS[verb].search(action)
    if match is None:
        return (
            Command(verb) if verb == "stop" else ActionError(f"invalid {verb} action, expected {USAGE[verb]}")
        )
    if verb in ("click", "hover"):
        return Command(verb, element=int(match.group(1)))
    if verb == "type":
        return Command(verb, element=int(match.group(1)), text=match.group(2), enter=match.group(3) == "1")
    if verb == "tab_focus":
        return Command(verb, index=int(match.group(1)))
    return Command(verb, text=match.group(1))


def parse_action(text: str) -> ParsedAction | ActionError:
    """The action as the generic :class:`ParsedAction`: its verb and the canonical argument text."""
    command = parse_command(text) if isinstance(text, str) else parse_command.__wrapped__(text)
    if isinstance(command, ActionError):
        return command
    canonical = command.canonical
    return ParsedAction(verb=command.verb, argument=canonical[len(command.verb) :].strip(), text=canonical)
