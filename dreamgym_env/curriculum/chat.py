"""Free-form JSON answers from the experience model's endpoint, for writing new tasks.

The experience-model interface predicts transitions; the task generator needs another answer
(a JSON list of tasks) from the same model. :class:`ChatModel` is that small capability:
``await complete(messages, schema=...) -> ChatReply``. :class:`EndpointChat` provides it for any
OpenAI-compatible endpoint, with the settings of :class:`~dreamgym_env.experience.config.
EndpointConfig` (so ``EndpointChat.from_experience_model(model)`` talks to the same server as an
:class:`~dreamgym_env.experience.openai_backend.OpenAIExperienceModel`), the same retries and
the same error translation: a call that keeps failing raises a
:class:`~dreamgym_env.errors.ExperienceModelError` subclass, never an ``openai`` exception.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar, runtime_checkable

import httpx
import openai

from dreamgym_env.errors import ConfigurationError, ModelRequestError
from dreamgym_env.experience.config import EndpointConfig
from dreamgym_env.experience.openai_backend import FORMAT_REFUSAL_HINTS, FormatMode, translate_error

logger = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_GENERATION_TEMPERATURE: Final = 0.8
"""Task writing samples (variety matters); transitions are predicted at the endpoint's own setting."""
DEFAULT_GENERATION_MAX_TOKENS: Final = 4096
_CALL_ERRORS = (openai.OpenAIError, httpx.HTTPError, asyncio.TimeoutError, TimeoutError)
_MODES: tuple[FormatMode, ...] = ("json_schema", "json_object", "text")


@dataclass(frozen=True)
class ChatReply:
    """One answer: its text, why it ended (``"length"``: cut at the token limit), token counts."""

    text: str
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0


@runtime_checkable
class ChatModel(Protocol):
    """Answers a chat conversation, constrained to a JSON schema where the backend can."""

    model_id: str

    async def complete(
        self, messages: Sequence[Mapping[str, str]], *, schema: Mapping[str, Any] | None = None
    ) -> ChatReply:
        """Answer ``messages``; with ``schema``, ask for JSON of that schema."""
        ...


class EndpointChat:
    """A :class:`ChatModel` on an OpenAI-compatible ``/chat/completions`` endpoint.

    Settings resolve like the experience model's (arguments, then ``DREAMGYM_*``/``OPENAI_*``
    variables, then defaults); ``temperature`` and ``max_tokens`` default to values suited to
    writing tasks. Structured output falls back from ``json_schema`` to ``json_object`` to plain
    text when the server refuses it. :meth:`run` runs a coroutine on a loop this object owns in a
    background thread, so that sync code (and code inside a running loop) can call it.

    Example::

        chat = EndpointChat(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-8B")
        chat = EndpointChat.from_experience_model(openai_experience_model)
    """

    def __init__(
        self,
        config: EndpointConfig | None = None,
        *,
        temperature: float = DEFAULT_GENERATION_TEMPERATURE,
        max_tokens: int = DEFAULT_GENERATION_MAX_TOKENS,
        **settings: Any,
    ) -> None:
        base = config if config is not None else EndpointConfig.resolve(**settings)
        if config is not None and settings:
            base = base.replace(**settings)
        self.config = base.replace(temperature=temperature, max_tokens=max_tokens)
        self.model_id = self.config.model
        self._mode: FormatMode = _MODES[0]
        self._binding: tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI, asyncio.Semaphore] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_experience_model(cls, model: object, **overrides: Any) -> EndpointChat:
        """A chat on the endpoint of an OpenAI-compatible experience model (or a cache around one)."""
        inner = getattr(model, "inner", model)
        config = getattr(inner, "config", None)
        if not isinstance(config, EndpointConfig):
            raise ConfigurationError(
                f"{model!r} is not an endpoint experience model; pass an EndpointChat (or any ChatModel) "
                "to the task generator instead"
            )
        return cls(config, **overrides)

    def __repr__(self) -> str:
        return f"EndpointChat({self.config.describe()!r})"

    def _bind(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._binding is None or self._binding[0] is not loop:
            client = openai.AsyncOpenAI(
                base_url=self.config.base_url,
                api_key=self.config.api_key.get_secret_value(),
                timeout=self.config.timeout_s,
                max_retries=0,
            )
            self._binding = (loop, client, asyncio.Semaphore(self.config.max_concurrency))
        return self._binding[1], self._binding[2]

    async def complete(
        self, messages: Sequence[Mapping[str, str]], *, schema: Mapping[str, Any] | None = None
    ) -> ChatReply:
        """Answer ``messages``, retrying transport failures with backoff (see ``config.retry``)."""
        client, semaphore = self._bind()
        backend, secret = self.config.describe(), self.config.api_key.get_secret_value()
        failures = calls = 0
        while True:
            mode = self._mode if schema is not None else "text"
            calls += 1
            try:
                async with semaphore:
                    completion = await self._call(client, messages, schema, mode)
            except _CALL_ERRORS as exc:
                error = translate_error(
                    exc, backend=backend, attempts=calls, context="task generation", secret=secret
                )
                if isinstance(error, ModelRequestError):
                    if self._downgrade(mode, str(exc)):
                        continue
                    raise error from exc
                failures += 1
                if failures >= self.config.retry.max_attempts:
                    raise error from exc
                delay = self.config.retry.delay(failures)
                logger.info("%s: %s; retry %d in %.2fs", backend, type(error).__name__, failures, delay)
                await asyncio.sleep(delay)
                continue
            choice = completion.choices[0] if completion.choices else None
            usage = completion.usage
            return ChatReply(
                text=(choice.message.content or "") if choice is not None else "",
                finish_reason=(choice.finish_reason or "stop") if choice is not None else "no choices",
                prompt_tokens=(usage.prompt_tokens or 0) if usage is not None else 0,
                completion_tokens=(usage.completion_tokens or 0) if usage is not None else 0,
            )

    async def _call(
        self,
        client: openai.AsyncOpenAI,
        messages: Sequence[Mapping[str, str]],
        schema: Mapping[str, Any] | None,
        mode: FormatMode,
    ) -> Any:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }
        if schema is not None and mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "tasks", "schema": dict(schema), "strict": False},
            }
        elif schema is not None and mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": dict(schema)}
        call = client.chat.completions.create(**body)
        if self.config.timeout_s is None:
            return await call
        return await asyncio.wait_for(call, self.config.timeout_s)

    def _downgrade(self, mode: FormatMode, detail: str) -> bool:
        if mode == "text" or not any(hint in detail.lower() for hint in FORMAT_REFUSAL_HINTS):
            return False
        if self._mode == mode:
            self._mode = _MODES[_MODES.index(mode) + 1]
            logger.warning(
                "%s refused response_format %s; using %s", self.config.describe(), mode, self._mode
            )
        return True

    # -- sync use ----------------------------------------------------------------------------
    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on this chat's background loop and wait for its result."""
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="dreamgym-chat", daemon=True
                )
                self._thread.start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        binding, self._binding = self._binding, None
        if binding is not None and binding[0] is asyncio.get_running_loop():
            await binding[1].close()

    def close(self) -> None:
        """Close the client and stop the background loop."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is None:
            return
        asyncio.run_coroutine_threadsafe(self.aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        loop.close()
