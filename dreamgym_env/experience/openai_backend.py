"""An experience model behind any OpenAI-compatible chat endpoint: OpenAI, vLLM, SGLang, Ollama, llama.cpp.

Requests of a batch run concurrently (at most ``max_concurrency`` calls in flight), each asking
for the transition JSON with the strongest structured-output mode the server accepts:
``json_schema``, then llama.cpp's ``json_object`` with a ``schema``, then plain text. Calls that
time out or meet 429, 5xx or connection errors are retried with exponential backoff and jitter;
answers that do not parse (or were cut at ``max_tokens``) are re-asked with a correction. When
both budgets are spent the typed error from :mod:`dreamgym_env.errors` is raised: a transition is
never invented.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import openai
from openai.types.chat import ChatCompletion

from dreamgym_env.envs.domains import get_domain
from dreamgym_env.errors import (
    ExperienceModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    ModelTransportError,
    excerpt,
)
from dreamgym_env.experience.answers import AnswerJudge
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.config import EndpointConfig
from dreamgym_env.experience.prompt import TRANSITION_SCHEMA, clip, messages
from dreamgym_env.types import ExperienceRequest, Transition

logger = logging.getLogger(__name__)

FormatMode = Literal["json_schema", "json_object", "text"]
FORMAT_MODES: tuple[FormatMode, ...] = ("json_schema", "json_object", "text")
"""Structured-output modes, strongest first; a server that refuses one gets the next."""
FORMAT_REFUSAL_HINTS = ("response_format", "json_schema", "json_object", "schema", "grammar", "structured")
"""Words in a 4xx answer that mean the server refused the structured-output request itself."""
"""A bad answer is shown back to the model, cut to this many characters, when it is re-asked."""
CONNECTIONS_PER_CLIENT = 32
"""Concurrent calls share one HTTP client up to this many; more get more clients. httpx's pool
scans all its connections for every request, so one pool of 256 connections costs seconds a batch."""

_CALL_ERRORS = (openai.OpenAIError, httpx.HTTPError, asyncio.TimeoutError, TimeoutError)


def response_format(mode: FormatMode) -> dict[str, Any] | None:
    """Return the ``response_format`` request field of a structured-output mode."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "transition", "schema": TRANSITION_SCHEMA, "strict": True},
        }
    if mode == "json_object":  # llama.cpp reads the schema here; other servers ignore it
        return {"type": "json_object", "schema": TRANSITION_SCHEMA}
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


def _retry_after(exc: BaseException, limit: float) -> float | None:
    """Return the server's ``Retry-After`` (seconds, capped at ``limit``), if it sent one."""
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


class OpenAIExperienceModel(ExperienceModel):
    """Experience model served by an OpenAI-compatible ``/chat/completions`` endpoint.

    Settings come from ``config`` or keyword arguments (see
    :class:`~dreamgym_env.experience.config.EndpointConfig`), falling back to the ``DREAMGYM_*``
    and ``OPENAI_*`` environment variables::

        model = OpenAIExperienceModel(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-8B")
        transitions = await model.predict(requests)   # or model.predict_sync(requests)

    The HTTP client and the concurrency limit belong to the event loop that uses them; a model
    used from another loop (a new ``asyncio.run``) gets a fresh client there.
    """

    def __init__(self, config: EndpointConfig | None = None, **settings: Any) -> None:
        if config is None:
            config = EndpointConfig.resolve(**settings)
        elif settings:
            config = config.replace(**settings)
        self.config = config
        self.model_id = self.config.model
        super().__init__()
        self._mode: FormatMode = FORMAT_MODES[0]
        self._token_field = "max_tokens"
        self._binding: _LoopBinding | None = None

    @property
    def format_mode(self) -> FormatMode:
        """The structured-output mode that later calls will use (downgraded when refused)."""
        return self._mode

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.config.base_url!r}, model={self.config.model!r})"

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

    async def predict(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        """Answer each request, concurrently, in order; the first failure cancels the rest."""
        binding = self._bind()
        tasks = [
            asyncio.ensure_future(self._predict_one(binding.next_client(), binding.semaphore, r))
            for r in requests
        ]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _predict_one(
        self, client: openai.AsyncOpenAI, semaphore: asyncio.Semaphore, request: ExperienceRequest
    ) -> Transition:
        base = messages(get_domain(request.task.domain).prompt, request)
        context = f"task {request.task.id!r}, action {clip(request.action, 80)!r}"
        backend, secret = self.config.describe(), self.config.api_key.get_secret_value()
        judge = AnswerJudge(
            base, context, backend, self.model_id, self.config.max_tokens, self.config.max_output_reasks
        )
        conversation, calls, failures = base, 0, 0
        while True:
            mode, calls = self._mode, calls + 1
            try:
                async with semaphore:
                    completion = await self._call(client, conversation, mode)
            except _CALL_ERRORS as exc:
                error = translate_error(exc, backend=backend, attempts=calls, context=context, secret=secret)
                if isinstance(error, ModelRequestError):
                    if self._adapt_to_refusal(mode, str(exc)):
                        continue
                    raise error from exc
                failures += 1
                if failures >= self.config.retry.max_attempts:
                    raise error from exc
                delay = _retry_after(exc, self.config.retry.backoff_max_s)
                delay = self.config.retry.delay(failures) if delay is None else delay
                logger.info("%s: %s; retry %d in %.2fs", backend, type(error).__name__, failures, delay)
                await asyncio.sleep(delay)
                continue
            usage = completion.usage
            choice = completion.choices[0] if completion.choices else None
            answer = judge.judge(
                (choice.message.content or "") if choice is not None else None,
                choice.finish_reason if choice is not None else None,
                prompt_tokens=(usage.prompt_tokens or 0) if usage is not None else 0,
                completion_tokens=(usage.completion_tokens or 0) if usage is not None else 0,
                attempts=calls,
            )
            if isinstance(answer, Transition):
                return answer
            conversation = answer

    async def _call(
        self, client: openai.AsyncOpenAI, conversation: list[dict[str, str]], mode: FormatMode
    ) -> ChatCompletion:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": conversation,
            "temperature": self.config.temperature,
            self._token_field: self.config.max_tokens,
        }
        fmt = response_format(mode)
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
