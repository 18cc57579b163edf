"""Tolerant parsing of a model's answer into a transition.

Accepts the JSON object alone, JSON inside a markdown fence or after prose, and reasoning models'
``<think>...</think>`` blocks (the think text becomes the reasoning when the JSON has none).
Anything else raises :class:`OutputParseError`, which backends turn into a re-ask.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
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


def structured_state(value: Any, state_schema: Mapping[str, Any]) -> str:
    """The canonical JSON of a structured next state, checked against the domain's state schema."""
    from jsonschema import Draft202012Validator

    if isinstance(value, str):  # a model that quoted the object
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise OutputParseError("'next_state' is not a JSON object of the state schema") from None
    if not isinstance(value, dict):
        raise OutputParseError("'next_state' is not a JSON object of the state schema")
    error = next(iter(Draft202012Validator(dict(state_schema)).iter_errors(value)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the state"
        raise OutputParseError(f"'next_state' does not fit the state schema at {where}: {error.message[:200]}")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def parse_transition(
    text: str, usage: Usage | None = None, state_schema: Mapping[str, Any] | None = None
) -> Transition:
    """Parse a model's answer; rewards are clipped to [0, 1].

    With ``state_schema`` (structured mode) the next state must be a JSON object valid under it,
    and is kept as its compact JSON; otherwise it must be a non-empty string.
    """
    thoughts = " ".join(m.strip() for m in _THINK.findall(text)).strip()
    body = _THINK.sub("", text)
    data = _first_json_object(body)
    next_state = data.get("next_state", data.get("state"))
    if state_schema is not None:
        next_state = structured_state(next_state, state_schema)
    elif not isinstance(next_state, str) or not next_state.strip():
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
