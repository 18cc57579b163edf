"""The one client of OpenAI-compatible ``/chat/completions`` endpoints (OpenAI, vLLM, SGLang, Ollama, llama.cpp).

:class:`EndpointTransport` sends one chat request and returns its :class:`ChatReply`. It owns what
every caller of an endpoint needs and must not redo: the HTTP clients bound to the running
event loop, the concurrency limit, retries with exponential backoff and jitter that honour
``Retry-After`` (timeouts, 429, 5xx, connection errors), the structured-output downgrade
(``json_schema``, then llama.cpp's ``json_object`` with a ``schema``, then plain text) when a
server refuses one, the switch to ``max_completion_tokens`` when a server asks for it, and the
mapping of ``openai``/``httpx`` errors to this package's typed errors (the key never in them).
The experience backend and the curriculum's task writer both use it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import openai
from openai.types.chat import ChatCompletion

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

logger = logging.getLogger(__name__)

FormatMode = Literal["json_schema", "json_object", "text"]
FORMAT_MODES: tuple[FormatMode, ...] = ("json_schema", "json_object", "text")
"""Structured-output modes, strongest first; a server that refuses one gets the next."""
FORMAT_REFUSAL_HINTS = ("response_format", "json_schema", "json_object", "schema", "grammar", "structured")
"""Words in a 4xx answer that mean the server refused the structured-output request itself."""
CONNECTIONS_PER_CLIENT = 32
"""Concurrent calls share one HTTP client up to this many; more get more clients. httpx's pool
scans all its connections for every request, so one pool of 256 connections costs seconds a batch."""

_CALL_ERRORS = (openai.OpenAIError, httpx.HTTPError, asyncio.TimeoutError, TimeoutError)


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
    exc: BaseException, *, backend: str, attempts: int, context: str, secret: str = ""
) -> ExperienceModelError:
    """Map an openai/httpx/asyncio exception to this package's error tree (the one place that does)."""

    def text(detail: object) -> str:
        message = excerpt(str(detail), 500)
        return message.replace(secret, "***") if secret else message

    kwargs: dict[str, Any] = {"backend": backend, "attempts": attempts}
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
    ) -> ChatReply:
        """Send ``messages`` (with ``schema``: ask for JSON of that schema) and return the answer.

        Transport failures are retried with backoff (``config.retry``; a ``Retry-After`` header
        sets the delay); a refused structured-output mode or token field is switched and the call
        sent again. Raises the typed error of the last failure when the retries are spent.
        """
        binding = self._bind()
        client = binding.next_client()
        backend, secret = self.config.describe(), self.config.api_key.get_secret_value()
        calls = failures = 0
        while True:
            mode = self._mode if schema is not None else "text"
            calls += 1
            try:
                async with binding.semaphore:
                    completion = await self._call(client, messages, schema, schema_name, strict, mode)
            except _CALL_ERRORS as exc:
                error = translate_error(exc, backend=backend, attempts=calls, context=context, secret=secret)
                if isinstance(error, ModelRequestError):
                    if self._adapt_to_refusal(mode, str(exc)):
                        continue
                    raise error from exc
                failures += 1
                if failures >= self.config.retry.max_attempts:
                    raise error from exc
                delay = retry_after(exc, self.config.retry.backoff_max_s)
                delay = self.config.retry.delay(failures) if delay is None else delay
                logger.info("%s: %s; retry %d in %.2fs", backend, type(error).__name__, failures, delay)
                await asyncio.sleep(delay)
                continue
            choice = completion.choices[0] if completion.choices else None
            usage = completion.usage
            return ChatReply(
                text=(choice.message.content or "") if choice is not None else None,
                finish_reason=(choice.finish_reason or "stop") if choice is not None else "no choices",
                prompt_tokens=(usage.prompt_tokens or 0) if usage is not None else 0,
                completion_tokens=(usage.completion_tokens or 0) if usage is not None else 0,
                calls=calls,
            )

    async def _call(
        self,
        client: openai.AsyncOpenAI,
        messages: Sequence[Mapping[str, str]],
        schema: Mapping[str, Any] | None,
        schema_name: str,
        strict: bool,
        mode: FormatMode,
    ) -> ChatCompletion:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.config.temperature,
            self._token_field: self.config.max_tokens,
        }
        fmt = response_format(mode, schema, schema_name, strict) if schema is not None else None
        if fmt is not None:
            body["response_format"] = fmt
        # The documented raw ``post`` skips the SDK's typed-params transform (about 2 ms of CPU a
        # call) and sends llama.cpp's ``schema`` field as is.
        call = client.post("/chat/completions", body=body, cast_to=ChatCompletion)
        if self.config.timeout_s is None:
            return await call
        return await asyncio.wait_for(call, self.config.timeout_s)

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
