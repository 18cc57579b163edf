"""Tolerant parsing of a model's answer into a transition.

Accepts the JSON object alone, JSON inside a markdown fence or after prose, and reasoning models'
``<think>...</think>`` blocks (the think text becomes the reasoning when the JSON has none).
Anything else raises :class:`OutputParseError`, which backends turn into a re-ask.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from dreamgym_env.types import Transition, Usage

_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL | re.IGNORECASE)


class OutputParseError(ValueError):
    """The model's text is not a transition; the message says why."""


def _first_json_object(text: str) -> dict[str, Any]:
    decoder = json.JSONDecoder()
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise OutputParseError("no JSON object found (truncated or not JSON)")


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "1"}:
        return True
    if isinstance(value, str) and value.strip().lower() in {"false", "no", "0", ""}:
        return False
    raise OutputParseError(f"'done' is not a boolean: {value!r}")


def _as_reward(value: Any) -> float:
    try:
        reward = float(value)
    except (TypeError, ValueError):
        raise OutputParseError(f"'reward' is not a number: {value!r}") from None
    if math.isnan(reward):
        raise OutputParseError("'reward' is NaN")
    return min(1.0, max(0.0, reward))


def parse_transition(text: str, usage: Usage | None = None) -> Transition:
    """Parse a model's answer; rewards are clipped to [0, 1]."""
    thoughts = " ".join(m.strip() for m in _THINK.findall(text)).strip()
    body = _THINK.sub("", text)
    data = _first_json_object(body)
    next_state = data.get("next_state", data.get("state"))
    if not isinstance(next_state, str) or not next_state.strip():
        raise OutputParseError("'next_state' is missing or empty")
    done = data.get("done", data.get("terminated", False))
    reasoning = data.get("reasoning") or thoughts
    return Transition(
        reasoning=str(reasoning),
        next_state=next_state,
        reward=_as_reward(data.get("reward", 0.0)),
        terminated=_as_bool(done),
        usage=usage or Usage(),
    )
