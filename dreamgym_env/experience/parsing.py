r"""Strict parsing of a model's answer into a transition, tolerant only of its wrapping.

The wrapping may vary: the JSON object alone, inside a markdown fence or among prose, after a
reasoning model's ``<think>...</think>`` block (the think text becomes the reasoning when the
JSON has none). The answer itself may not: it must carry every field of the answer schema.

- ``next_state``: a non-empty string of at most :data:`MAX_STATE_CHARS` characters (the answer
  schema's ``maxLength``); in structured mode a JSON object valid under the state schema.
- ``reward``: a finite number in [0, 1] (``0``, ``1``, ``0.5``, or such a number as a string);
  never a boolean. Out of range is an error, not clamped.
- ``done``: a boolean (``true``/``false``, also as a string, or ``0``/``1``).

``state`` and ``terminated`` are accepted for ``next_state`` and ``done``. Anything else raises
:class:`OutputParseError` naming the problem, which backends turn into a re-ask and, when the
re-asks are spent, into :class:`~dreamgym_env.errors.ModelOutputError`: a missing field is never
defaulted and a bad value never clamped. Text is made UTF-8 encodable
(:func:`~dreamgym_env.experience.prompt.utf8_safe`): a ``"\ud800"`` escape comes back as U+FFFD.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from dreamgym_env.experience.prompt import TRANSITION_SCHEMA, utf8_safe
from dreamgym_env.types import Transition, Usage

_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL | re.IGNORECASE)
MAX_STATE_CHARS: Final[int] = TRANSITION_SCHEMA["properties"]["next_state"]["maxLength"]
"""The longest text-mode ``next_state`` accepted: the answer schema's ``maxLength``."""
_STATE_KEYS: Final = ("next_state", "state")
_DONE_KEYS: Final = ("done", "terminated")
_TRUE: Final = frozenset({"true", "yes", "1"})
_FALSE: Final = frozenset({"false", "no", "0"})


class OutputParseError(ValueError):
    """The model's text is not a transition; the message says why (it is shown in the re-ask)."""


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in order."""
    decoder, found, end = json.JSONDecoder(), [], 0
    for match in re.finditer(r"\{", text):
        if match.start() < end:  # inside an object already found
            continue
        try:
            value, end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def _answer_object(text: str) -> dict[str, Any]:
    """The answer among the JSON objects of ``text``: the first with a state field, else the first."""
    objects = _json_objects(text)
    if not objects:
        raise OutputParseError("no JSON object found (truncated or not JSON)")
    return next((o for o in objects if any(k in o for k in _STATE_KEYS)), objects[0])


def _field(data: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in data:
            return data[key]
    raise OutputParseError(f"the answer has no '{keys[0]}' field (next_state, reward and done are required)")


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise OutputParseError(f"'done' must be true or false, got {value!r}")


def _as_reward(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise OutputParseError(f"'reward' must be a number from 0 to 1, got {value!r}")
    try:
        reward = float(value)
    except ValueError:
        raise OutputParseError(f"'reward' must be a number from 0 to 1, got {value!r}") from None
    if not math.isfinite(reward) or not 0.0 <= reward <= 1.0:
        raise OutputParseError(f"'reward' must be a number from 0 to 1, got {value!r}")
    return reward


def _text_state(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise OutputParseError("'next_state' is missing or empty")
    if len(value) > MAX_STATE_CHARS:
        raise OutputParseError(
            f"'next_state' has {len(value)} characters, more than the limit of {MAX_STATE_CHARS}"
        )
    return utf8_safe(value)


def structured_state(
    value: Any,
    state_schema: Mapping[str, Any],
    carried: Mapping[str, Any] | None = None,
    updated: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The canonical JSON of a structured next state, checked against the domain's state schema.

    ``carried``: fields the model was told to leave out (``state_schema`` is then the schema
    without them) and their values, which the state takes; a model that wrote them anyway is
    overruled, not re-asked. ``updated``: object fields of which the model wrote only the new or
    changed entries, with their current values; the state keeps the entries it did not write.
    """
    from jsonschema import Draft202012Validator

    if isinstance(value, str):  # a model that quoted the object
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise OutputParseError("'next_state' is not a JSON object of the state schema") from None
    if not isinstance(value, dict):
        raise OutputParseError("'next_state' is not a JSON object of the state schema")
    if carried:
        value = {k: v for k, v in value.items() if k not in carried}
    error = next(iter(Draft202012Validator(dict(state_schema)).iter_errors(value)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the state"
        raise OutputParseError(
            f"'next_state' does not fit the state schema at {where}: {error.message[:200]}"
        )
    for name, current in (updated or {}).items():
        value[name] = {**current, **value.get(name, {})}
    if carried:
        value = {**carried, **value}
    return utf8_safe(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def parse_transition(
    text: str,
    usage: Usage | None = None,
    state_schema: Mapping[str, Any] | None = None,
    carried: Mapping[str, Any] | None = None,
    updated: Mapping[str, Mapping[str, Any]] | None = None,
) -> Transition:
    """Parse a model's answer (see the module docstring for what is accepted).

    With ``state_schema`` (structured mode) the next state must be a JSON object valid under it,
    and is kept as its compact JSON, completed with the ``carried`` and ``updated`` fields (see
    :func:`structured_state`); otherwise it must be a non-empty string within
    :data:`MAX_STATE_CHARS`. Raises :class:`OutputParseError` naming the first problem.
    """
    thoughts = " ".join(m.strip() for m in _THINK.findall(text)).strip()
    data = _answer_object(_THINK.sub("", text))
    raw_state = _field(data, _STATE_KEYS)
    next_state = (
        _text_state(raw_state)
        if state_schema is None
        else structured_state(raw_state, state_schema, carried, updated)
    )
    reward = _as_reward(_field(data, ("reward",)))
    terminated = _as_bool(_field(data, _DONE_KEYS))
    reasoning = data.get("reasoning") or thoughts
    return Transition(
        reasoning=utf8_safe(str(reasoning)),
        next_state=next_state,
        reward=reward,
        terminated=terminated,
        usage=usage or Usage(),
    )
