"""The one client of OpenAI-compatible ``/chat/completions`` endpoints (OpenAI, vLLM, SGLang, Ollama, llama.cpp).

:class:`EndpointTransport` sends one chat request and returns its :class:`ChatReply`. It owns what
every caller of an endpoint needs and must not redo: the HTTP clients bound to the running
event loop, the concurrency limit, retries with exponential backoff and jitter that honour
``Retry-After`` (timeouts, 429, 5xx, connection errors), the structured-output downgrade
(``json_schema``, then llama.cpp's ``json_object`` with a ``schema``, then plain text) when a
server refuses one, the switch to ``max_completion_tokens`` when a server asks for it, the check
that an HTTP 200 body is a chat completion at all (:func:`chat_reply`), the total deadline of a
request (``deadline_s``), and the mapping of ``openai``/``httpx`` errors to this package's typed
errors. The experience backend and the curriculum's task writer both use it.

Secrets: the typed errors are raised ``from None``. The library's exception is not chained,
because it may carry the API key (a server that echoes the ``Authorization`` header in its error
body) and ``traceback.format_exception`` would print it; its message, with the key and any
password of the base URL masked as ``***``, is in the typed error instead.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import openai

from dreamgym_env.errors import (
    ExperienceModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    ModelTransportError,
    excerpt,
)
from dreamgym_env.experience.answers import ChatReply
from dreamgym_env.experience.config import EndpointConfig
from dreamgym_env.experience.prompt import utf8_safe

logger = logging.getLogger(__name__)

FormatMode = Literal["json_schema", "json_object", "text"]
FORMAT_MODES: tuple[FormatMode, ...] = ("json_schema", "json_object", "text")
"""Structured-output modes, strongest first; a server that refuses one gets the next."""
FORMAT_REFUSAL_HINTS = ("response_format", "json_schema", "json_object", "schema", "grammar", "structured")
"""Words in a 4xx answer that mean the server refused the structured-output request itself."""
CONNECTIONS_PER_CLIENT = 32
"""Concurrent calls share one HTTP client up to this many; more get more clients. httpx's pool
scans all its connections for every request, so one pool of 256 connections costs seconds a batch."""


class InvalidResponse(ValueError):
    """An HTTP 200 answer whose body is not a chat completion; the message says what is wrong."""


_CALL_ERRORS = (openai.OpenAIError, httpx.HTTPError, asyncio.TimeoutError, TimeoutError, InvalidResponse)


class Deadline:
    """The total time one request may take, over its attempts, backoff waits and re-asks.

    The clock starts with the first attempt (:meth:`start`, once a concurrency slot is free), so
    that waiting behind ``max_concurrency`` other calls does not count. ``None``: no deadline.
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._ends: float | None = None

    def start(self) -> None:
        """Start the clock, if not started yet."""
        if self._ends is None and self.seconds is not None:
            self._ends = time.monotonic() + self.seconds

    def remaining(self) -> float | None:
        """Seconds left (``None``: no deadline, or not started)."""
        return None if self._ends is None else self._ends - time.monotonic()

    def bound(self, timeout: float | None) -> float | None:
        """The timeout of the next attempt: ``timeout``, shortened to what is left."""
        left = self.remaining()
        if left is None:
            return timeout
        return left if timeout is None else min(timeout, left)


def _usage_tokens(usage: Any, name: str) -> int:
    value = usage.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidResponse(f"usage.{name} is not a token count: {excerpt(repr(value), 80)}")
    return value


def chat_reply(body: str, calls: int = 1) -> ChatReply:
    """The :class:`ChatReply` of a ``/chat/completions`` body, or :class:`InvalidResponse` saying why not.

    The one place that reads a completion: proxies and overloaded gateways answer HTTP 200 with
    an HTML page, an empty body, a choice without ``message``, content that is not text, usage
    counts that are not integers. An empty ``choices`` list is an answer without a choice
    (``text=None``); a ``null`` content is an empty answer (both re-asked by the caller).
    """
    try:
        payload = json.loads(body)
    except ValueError:
        shown = excerpt(body.strip(), 120) if body.strip() else "(an empty body)"
        raise InvalidResponse(f"the body is not JSON: {shown!r}") from None
    if not isinstance(payload, dict):
        raise InvalidResponse(f"the body is a JSON {type(payload).__name__}, not an object")
    if not isinstance(payload.get("choices"), list):
        error = payload.get("error")
        why = f"; it says {excerpt(str(error), 200)!r}" if error else ""
        raise InvalidResponse(f"the body has no 'choices' list{why}")
    usage = payload.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise InvalidResponse(f"'usage' is a {type(usage).__name__}, not an object")
    usage = usage or {}
    tokens = _usage_tokens(usage, "prompt_tokens"), _usage_tokens(usage, "completion_tokens")
    if not payload["choices"]:
        return ChatReply(None, "no choices", *tokens, calls=calls)
    choice = payload["choices"][0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise InvalidResponse("the first choice has no 'message' object")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise InvalidResponse(f"the message content is a {type(content).__name__}, not text")
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise InvalidResponse(f"finish_reason is a {type(finish).__name__}, not text")
    return ChatReply(content or "", finish or "stop", *tokens, calls=calls)


def response_format(
    mode: FormatMode, schema: Mapping[str, Any], name: str, strict: bool
) -> dict[str, Any] | None:
    """The ``response_format`` request field of a structured-output mode."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": dict(schema), "strict": strict},
        }
    if mode == "json_object":  # llama.cpp reads the schema here; other servers ignore it
        return {"type": "json_object", "schema": dict(schema)}
    return None


def translate_error(
    exc: BaseException, *, backend: str, attempts: int, context: str, secrets: Sequence[str] = ()
) -> ExperienceModelError:
    """Map an openai/httpx/asyncio exception to this package's error tree (the one place that does).

    ``secrets`` (the key, a password in the URL) are masked as ``***`` wherever the detail
    quotes them; raise the result ``from None`` so that ``exc`` (which may hold them) stays out
    of tracebacks.
    """

    def text(detail: object) -> str:
        message = str(detail)
        for secret in secrets:
            message = message.replace(secret, "***")
        return excerpt(message, 500)  # masked before the cut: no half key at the edge

    kwargs: dict[str, Any] = {"backend": backend, "attempts": attempts}
    if isinstance(exc, InvalidResponse):
        # The server (or a proxy) is at fault, not the model's text: retried like a 5xx, and the
        # model is not re-asked, since it never saw a bad answer.
        return ModelServerError(
            f"{context}: the endpoint answered HTTP 200 without a chat completion: {text(exc)}", **kwargs
        )
    if isinstance(exc, (openai.APITimeoutError, asyncio.TimeoutError, TimeoutError, httpx.TimeoutException)):
        return ModelTimeoutError(f"{context}: the endpoint did not answer in time", **kwargs)
    if isinstance(exc, openai.APIStatusError):
        status, detail = exc.status_code, text(exc.message)
        if status == 429:
            return ModelRateLimitError(f"{context}: rate limited (HTTP 429): {detail}", **kwargs)
        if status >= 500:
            return ModelServerError(f"{context}: server error (HTTP {status}): {detail}", **kwargs)
        return ModelRequestError(f"{context}: request refused (HTTP {status}): {detail}", **kwargs)
    if isinstance(exc, openai.APIResponseValidationError):
        return ModelServerError(
            f"{context}: the endpoint answered an invalid response: {text(exc)}", **kwargs
        )
    if isinstance(exc, (openai.APIConnectionError, httpx.TransportError)):
        cause = exc.__cause__ or exc
        return ModelTransportError(f"{context}: could not reach the endpoint: {text(cause)}", **kwargs)
    return ModelTransportError(f"{context}: {type(exc).__name__}: {text(exc)}", **kwargs)


def retry_after(exc: BaseException, limit: float) -> float | None:
    """The server's ``Retry-After`` (seconds, capped at ``limit``), if it sent one."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(limit, max(0.0, float(value))) if value is not None else None
    except ValueError:
        return None


@dataclass
class _LoopBinding:
    """The HTTP clients and the concurrency limit of one event loop."""

    loop: asyncio.AbstractEventLoop
    clients: list[openai.AsyncOpenAI]
    semaphore: asyncio.Semaphore
    turn: int = 0

    def next_client(self) -> openai.AsyncOpenAI:
        self.turn += 1
        return self.clients[self.turn % len(self.clients)]


class EndpointTransport:
    """Sends chat requests to one OpenAI-compatible endpoint, as the module docstring says.

    The HTTP clients and the concurrency limit belong to the event loop that uses them; a
    transport used from another loop (a new ``asyncio.run``) gets fresh clients there. The
    structured-output mode and the token field are learnt once and kept for later calls.
    """

    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self._mode: FormatMode = FORMAT_MODES[0]
        self._token_field = "max_tokens"
        self._binding: _LoopBinding | None = None

    @property
    def format_mode(self) -> FormatMode:
        """The structured-output mode that later calls will use (downgraded when refused)."""
        return self._mode

    @property
    def token_field(self) -> str:
        """``max_tokens``, or ``max_completion_tokens`` once the server asked for it."""
        return self._token_field

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config.describe()!r})"

    def _bind(self) -> _LoopBinding:
        loop = asyncio.get_running_loop()
        if self._binding is None or self._binding.loop is not loop:
            shards = -(-self.config.max_concurrency // CONNECTIONS_PER_CLIENT)
            clients = [
                openai.AsyncOpenAI(
                    base_url=self.config.base_url,
                    api_key=self.config.api_key.get_secret_value(),
                    timeout=self.config.timeout_s,
                    max_retries=0,
                )
                for _ in range(shards)
            ]
            self._binding = _LoopBinding(loop, clients, asyncio.Semaphore(self.config.max_concurrency))
        return self._binding

    async def aclose(self) -> None:
        """Close the HTTP clients of the running loop."""
        binding, self._binding = self._binding, None
        if binding is not None and binding.loop is asyncio.get_running_loop():
            await asyncio.gather(*(client.close() for client in binding.clients))

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "answer",
        strict: bool = True,
        context: str = "chat",
        deadline: Deadline | None = None,
    ) -> ChatReply:
        """Send ``messages`` (with ``schema``: ask for JSON of that schema) and return the answer.

        Transport failures and HTTP 200 bodies that are not a chat completion are retried with
        backoff (``config.retry``; a ``Retry-After`` header sets the delay); a refused
        structured-output mode or token field is switched and the call sent again. Raises the
        typed error of the last failure when the retries are spent, and
        :class:`~dreamgym_env.errors.ModelTimeoutError` when ``deadline`` (default: a new one of
        ``config.deadline_s``; pass one to share it between the calls of one request) has passed,
        even if retries remain.
        """
        binding = self._bind()
        client = binding.next_client()
        backend, secrets = self.config.describe(), self.config.secrets
        deadline = deadline if deadline is not None else Deadline(self.config.deadline_s)
        calls = failures = 0
        while True:
            mode = self._mode if schema is not None else "text"
            calls += 1
            try:
                async with binding.semaphore:
                    deadline.start()
                    timeout = deadline.bound(self.config.timeout_s)
                    if timeout is not None and timeout <= 0:
                        raise self._deadline_error(deadline, context, calls - 1, None)
                    return await self._call(
                        client, messages, schema, schema_name, strict, mode, timeout, calls
                    )
            except _CALL_ERRORS as exc:
                error = translate_error(
                    exc, backend=backend, attempts=calls, context=context, secrets=secrets
                )
                if isinstance(error, ModelRequestError):
                    if self._adapt_to_refusal(mode, str(exc)):
                        continue
                    raise error from None  # not from exc: see the module docstring
                failures += 1
                if failures >= self.config.retry.max_attempts:
                    raise error from None
                delay = retry_after(exc, self.config.retry.backoff_max_s)
                delay = self.config.retry.delay(failures) if delay is None else delay
                left = deadline.remaining()
                if left is not None and left <= delay:
                    raise self._deadline_error(deadline, context, calls, error) from None
                logger.info("%s: %s; retry %d in %.2fs", backend, type(error).__name__, failures, delay)
                await asyncio.sleep(delay)

    def _deadline_error(
        self, deadline: Deadline, context: str, attempts: int, last: ExperienceModelError | None
    ) -> ModelTimeoutError:
        after = f"; the last attempt failed with {type(last).__name__}" if last is not None else ""
        return ModelTimeoutError(
            f"{context}: no answer within deadline_s={deadline.seconds:g}{after}",
            backend=self.config.describe(),
            attempts=attempts,
        )

    async def _call(
        self,
        client: openai.AsyncOpenAI,
        messages: Sequence[Mapping[str, str]],
        schema: Mapping[str, Any] | None,
        schema_name: str,
        strict: bool,
        mode: FormatMode,
        timeout: float | None,
        calls: int,
    ) -> ChatReply:
        body: dict[str, Any] = {
            "model": self.config.model,
            # Text a UTF-8 encoder refuses (lone surrogates) would fail in the client: U+FFFD instead.
            "messages": [
                {k: utf8_safe(v) if isinstance(v, str) else v for k, v in m.items()} for m in messages
            ],
            "temperature": self.config.temperature,
            self._token_field: self.config.max_tokens,
        }
        fmt = response_format(mode, schema, schema_name, strict) if schema is not None else None
        if fmt is not None:
            body["response_format"] = fmt
        # The documented raw ``post`` skips the SDK's typed-params transform (about 2 ms of CPU a
        # call) and sends llama.cpp's ``schema`` field as is; the body comes back as text, and
        # :func:`chat_reply` checks its shape (the SDK would build a model of any JSON, or none).
        call = client.post("/chat/completions", body=body, cast_to=str)
        text = await (call if timeout is None else asyncio.wait_for(call, timeout))
        return chat_reply(text, calls)

    def _adapt_to_refusal(self, mode: FormatMode, detail: str) -> bool:
        """Switch to what the server accepts if that caused a 4xx; ``False`` if it did not."""
        lowered = detail.lower()
        if "max_completion_tokens" in lowered and self._token_field == "max_tokens":
            self._token_field = "max_completion_tokens"
            return True
        if mode == FORMAT_MODES[-1] or not any(hint in lowered for hint in FORMAT_REFUSAL_HINTS):
            return False
        if self._mode == mode:  # concurrent refusals of the same mode downgrade once
            self._mode = FORMAT_MODES[FORMAT_MODES.index(mode) + 1]
            logger.warning(
                "%s refused response_format %s; using %s", self.config.describe(), mode, self._mode
            )
        return True
