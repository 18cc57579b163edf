"""WebShop's action grammar: ``search[query]`` and ``click[label]``."""

from __future__ import annotations

import re
from functools import lru_cache

from dreamgym_env.envs.domain import ActionError, ParsedAction

MAX_ACTION_CHARS = 500
_ACTION = re.compile(r"^\s*(search|click)\s*\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)
_LABEL = re.compile(r"\[([^\[\]\n]+)\]")


def parse_action(text: str) -> ParsedAction | ActionError:
    """Parse ``search[query]`` or ``click[label]``; never raises."""
    if not isinstance(text, str):
        return ActionError(f"an action must be a string, got {type(text).__name__}")
    if len(text) > MAX_ACTION_CHARS:
        return ActionError(f"action longer than {MAX_ACTION_CHARS} characters")
    match = _ACTION.match(text)
    if match is None:
        return ActionError("expected search[query] or click[label]")
    verb, argument = match.group(1).lower(), " ".join(match.group(2).split())
    if not argument:
        return ActionError(f"{verb}[...] needs a non-empty argument")
    return ParsedAction(verb=verb, argument=argument, text=f"{verb}[{argument}]")


@lru_cache(maxsize=4096)
def clickable_labels(state: str) -> tuple[str, ...]:
    """The bracketed labels of a page, in page order, without duplicates; ``Search`` is the search box.

    Cached: a step asks for the labels of the same page several times (validation, admissible
    actions), and vector envs often hold the same page in many sub-envs.
    """
    return tuple(dict.fromkeys(label.strip() for label in _LABEL.findall(state)))
