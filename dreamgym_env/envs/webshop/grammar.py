r"""WebShop's action grammar: ``search[query]`` and ``click[label]``.

As ``parse_action`` of WebShop's ``web_agent_site/engine/engine.py`` (64fa2a5) reads an action:
``re.match(r"(.+)\[(.+)\]", action)``, so the verb is everything before the last ``[`` that a
``]`` follows, text after that ``]`` is ignored, and the verb must be exactly ``search`` or
``click`` (lower case, no spaces). ``WebAgentTextEnv.step`` then lower-cases the argument.
"""

from __future__ import annotations

import re
from functools import lru_cache

from dreamgym_env.domain import ActionError, ParsedAction

MAX_ACTION_CHARS = 500
_ACTION = re.compile(r"(.+)\[(.+)\]")
_LABEL = re.compile(r"\[([^\[\]\n]+)\]")


def parse_action(text: str) -> ParsedAction | ActionError:
    """Parse ``search[query]`` or ``click[label]`` as WebShop does (module docstring); never raises."""
    if not isinstance(text, str):
        return ActionError(f"an action must be a string, got {type(text).__name__}")
    if len(text) > MAX_ACTION_CHARS:
        return ActionError(f"action longer than {MAX_ACTION_CHARS} characters")
    match = _ACTION.match(text)
    if match is None or match.group(1) not in ("search", "click"):
        return ActionError("expected search[query] or click[label]")
    verb, argument = match.group(1), match.group(2)
    return ParsedAction(verb=verb, argument=argument, text=f"{verb}[{argument}]")


@lru_cache(maxsize=4096)
def clickable_labels(state: str) -> tuple[str, ...]:
    """The bracketed labels of a page, in page order, without duplicates; ``Search`` is the search box.

    Cached: a step asks for the labels of the same page several times (validation, admissible
    actions), and vector envs often hold the same page in many sub-envs.
    """
    return tuple(dict.fromkeys(label.strip() for label in _LABEL.findall(state)))
