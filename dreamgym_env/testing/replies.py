"""Scripted replies of :class:`~dreamgym_env.testing.server.ScriptedOpenAIServer`.

A test queues replies (consumed in order) or gives a responder ``(request_json) -> reply``::

    ok({"reasoning": "r", "next_state": "s", "reward": 0, "done": False})
    http_error(429)                       # rate limited
    delay(2.0, then=ok("..."))            # hold the request (latency, timeouts)
    truncated('{"reasoning": "cut')       # finish_reason="length"
    drop()                                # close the connection without answering
    raw("<html>502 Bad Gateway</html>")   # any body, HTTP 200 (a broken proxy or gateway)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PROMPT_TOKENS = 50
DEFAULT_COMPLETION_TOKENS = 20


@dataclass(frozen=True)
class Ok:
    """A chat completion answering ``content``."""

    content: str
    finish_reason: str = "stop"
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS
    completion_tokens: int = DEFAULT_COMPLETION_TOKENS


@dataclass(frozen=True)
class HTTPError:
    """An HTTP error status with a JSON (or text) body."""

    status: int
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    """Hold the request ``seconds``, then answer ``then`` (the default responder when ``None``)."""

    seconds: float
    then: Reply | None = None


@dataclass(frozen=True)
class Drop:
    """Close the connection without answering (a transport failure)."""


@dataclass(frozen=True)
class Raw:
    """An answer sent exactly as given: any status, content type and body (bytes)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


Reply = Ok | HTTPError | Delay | Drop | Raw
Responder = Callable[[dict[str, Any]], Reply | str | dict]
"""Answers a request body (JSON) with a reply; a ``str`` or ``dict`` means :func:`ok` of it."""


def ok(
    content: str | Mapping[str, Any],
    *,
    finish_reason: str = "stop",
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS,
    completion_tokens: int = DEFAULT_COMPLETION_TOKENS,
) -> Ok:
    """Answer ``content``; a mapping is JSON-encoded."""
    text = content if isinstance(content, str) else json.dumps(dict(content))
    return Ok(text, finish_reason, prompt_tokens, completion_tokens)


def truncated(content: str, *, completion_tokens: int = DEFAULT_COMPLETION_TOKENS) -> Ok:
    """Answer ``content`` as if cut at ``max_tokens`` (``finish_reason="length"``)."""
    return Ok(content, "length", DEFAULT_PROMPT_TOKENS, completion_tokens)


def http_error(status: int, body: Any = None, *, headers: Mapping[str, str] | None = None) -> HTTPError:
    """Answer an HTTP error; the body defaults to an OpenAI-style error object."""
    if body is None:
        body = {"error": {"message": f"scripted error {status}", "type": "scripted", "code": status}}
    return HTTPError(status, body, dict(headers or {}))


def delay(seconds: float, then: Reply | None = None) -> Delay:
    """Hold the request ``seconds`` before answering ``then``."""
    return Delay(seconds, then)


def drop() -> Drop:
    """Close the connection without answering."""
    return Drop()


def raw(
    body: str | bytes | Mapping[str, Any] | list[Any],
    *,
    status: int = 200,
    content_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
) -> Raw:
    """Answer ``body`` as is (a str or bytes verbatim, a dict or list as JSON): garbage bodies.

    ``raw("")`` is an empty HTTP 200, ``raw("<html>...", content_type="text/html")`` a proxy's
    page, ``raw({"choices": [{"index": 0}]})`` a completion without a message.
    """
    if isinstance(body, (Mapping, list)):
        data = json.dumps(body).encode()
    else:
        data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    return Raw(data, status, content_type, dict(headers or {}))


def as_reply(value: Reply | str | Mapping[str, Any]) -> Reply:
    """Normalise a responder's answer into a reply."""
    if isinstance(value, (Ok, HTTPError, Delay, Drop, Raw)):
        return value
    if isinstance(value, (str, Mapping)):
        return ok(value)
    raise TypeError(f"a responder must return a reply, str or dict, got {type(value).__name__}")


_ACTION_BLOCK = re.compile(r"<action>(.*)</action>", re.DOTALL)


def request_action(body: Mapping[str, Any]) -> str | None:
    """Return the agent action of an experience-model request (the JSON string in the ``<action>`` block)."""
    for message in reversed(body.get("messages", [])):
        match = _ACTION_BLOCK.search(str(message.get("content", "")))
        if match is not None:
            try:
                action = json.loads(match.group(1))
            except json.JSONDecodeError:
                return None
            return action if isinstance(action, str) else None
    return None


def echo_responder(body: dict[str, Any]) -> Reply:
    """Answer a valid transition whose next state names the request's action (a default responder)."""
    action = request_action(body)
    return ok(
        {
            "reasoning": "scripted echo",
            "next_state": f"after {action}" if action is not None else "after (no action found)",
            "reward": 0,
            "done": False,
        }
    )
