"""The one client of OpenAI-compatible ``/chat/completions`` endpoints (OpenAI, vLLM, SGLang, Ollama, llama.cpp).

:class:`EndpointTransport` sends one chat request and returns its :class:`ChatReply`. It owns what
every caller of an endpoint needs and must not redo: the HTTP session bound to the running
event loop, the concurrency limit, the choice among several endpoints of the model (the one with
the fewest requests in flight; one that fails is left out for ``cooldown_s`` and the request
retried on another: :mod:`dreamgym_env.experience.endpoints`), retries with exponential backoff
and jitter that honour ``Retry-After`` (timeouts, 429, 5xx, connection errors), the
structured-output downgrade (``json_schema``, then llama.cpp's ``json_object`` with a ``schema``,
then plain text) when a server refuses one, the switch to ``max_completion_tokens`` when a server
asks for it, the check that an HTTP 200 body is a chat completion at all (:func:`chat_reply`),
the total deadline of a request (``deadline_s``), and the mapping of HTTP errors to this
package's typed errors (:func:`translate_error`). The experience backend and the curriculum's
task writer both use it.

The requests go out through an :class:`aiohttp.ClientSession`: one request costs about a ninth
of the CPU time of one through the ``openai`` client (``benchmarks/http_path.py``), and with
hundreds of sub-envs stepping at once that CPU time is what bounds a process's steps per second.

Secrets: the typed errors are raised ``from None``. The library's exception is not chained,
because it may carry the API key (a server that echoes the ``Authorization`` header in its error
body) and ``traceback.format_exception`` would print it; its message, with the key and any
password of the base URL masked as ``***``, is in the typed error instead.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import aiohttp

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
from dreamgym_env.experience.backend import Deadline
from dreamgym_env.experience.config import EndpointConfig
from dreamgym_env.experience.endpoints import Endpoint, EndpointPool
from dreamgym_env.experience.prompt import utf8_safe
from dreamgym_env.types import EndpointCounts

logger = logging.getLogger(__name__)

FormatMode = Literal["json_schema", "json_object", "text"]
FORMAT_MODES: tuple[FormatMode, ...] = ("json_schema", "json_object", "text")
"""Structured-output modes, strongest first; a server that refuses one gets the next."""
FORMAT_REFUSAL_HINTS = ("response_format", "json_schema", "json_object", "schema", "grammar", "structured")
"""Words in a 4xx answer that mean the server refused the structured-output request itself."""


class InvalidResponse(ValueError):
    """An HTTP 200 answer whose body is not a chat completion; the message says what is wrong."""


class HTTPStatusError(Exception):
    """An HTTP error answer (4xx, 5xx): its status, the server's message and its headers.

    The message is the ``error.message`` of a JSON error body, else the body itself; it may quote
    a secret (see the module docstring) and is shown only through :func:`translate_error`.
    """

    def __init__(self, status: int, message: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"Error code: {status}" + (f" - {message}" if message else ""))
        self.status = status
        self.headers = headers

    @classmethod
    def of(cls, status: int, body: bytes, headers: Mapping[str, str]) -> HTTPStatusError:
        """The error of an answer with ``status`` and ``body``."""
        text = body.decode("utf-8", "replace").strip()
        try:
            payload = json.loads(text)
        except ValueError:
            return cls(status, text, headers)
        error = payload.get("error", payload) if isinstance(payload, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        return cls(status, message if isinstance(message, str) and message else text, headers)


_CALL_ERRORS = (
    aiohttp.ClientError,
    HTTPStatusError,
    asyncio.TimeoutError,
    TimeoutError,
    OSError,
    InvalidResponse,
)
FORMAT_CACHE_SIZE = 16
"""``response_format`` JSON texts kept (one per schema; structured requests without carried fields share one)."""
_COOLING_ERRORS = (ModelServerError, ModelTimeoutError, ModelTransportError)
"""Failures that take an endpoint out for ``cooldown_s`` (a 429 only sends the retry elsewhere)."""


def _usage_tokens(usage: Any, name: str) -> int:
    value = usage.get(name)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidResponse(f"usage.{name} is not a token count: {excerpt(repr(value), 80)}")
    return value


def chat_reply(body: str, calls: int = 1, endpoint: str = "") -> ChatReply:
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
        return ChatReply(None, "no choices", *tokens, calls=calls, endpoint=endpoint)
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
    return ChatReply(content or "", finish or "stop", *tokens, calls=calls, endpoint=endpoint)


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
    """Map an HTTP/aiohttp/asyncio exception to this package's error tree (the one place that does).

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
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):  # aiohttp's timeouts are both
        return ModelTimeoutError(f"{context}: the endpoint did not answer in time", **kwargs)
    if isinstance(exc, HTTPStatusError):
        status, detail = exc.status, text(exc)
        if status == 429:
            return ModelRateLimitError(f"{context}: rate limited (HTTP 429): {detail}", **kwargs)
        if status >= 500:
            return ModelServerError(f"{context}: server error (HTTP {status}): {detail}", **kwargs)
        return ModelRequestError(f"{context}: request refused (HTTP {status}): {detail}", **kwargs)
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError)):
        return ModelTransportError(f"{context}: could not reach the endpoint: {text(exc)}", **kwargs)
    return ModelTransportError(f"{context}: {type(exc).__name__}: {text(exc)}", **kwargs)


def retry_after(exc: BaseException, limit: float) -> float | None:
    """The server's ``Retry-After`` (seconds, capped at ``limit``), if it sent one."""
    headers = exc.headers if isinstance(exc, HTTPStatusError) else None
    value = headers.get("retry-after") if headers is not None else None
    try:
        return min(limit, max(0.0, float(value))) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class _Route:
    """Where the requests of one endpoint go: the URL (without credentials), headers, proxy."""

    url: str
    headers: Mapping[str, str]
    proxy: str | None


def _route(base_url: str, api_key: str, path: str = "/chat/completions") -> _Route:
    """The route to ``path`` of ``base_url``: a password in it is sent as HTTP Basic credentials, else the key.

    A proxy from the environment (``HTTP(S)_PROXY``, ``NO_PROXY``) is used as the ``openai``
    client did; it is looked up once here, not for every request.
    """
    parts = urlsplit(base_url)
    if parts.username is not None or parts.password is not None:
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    else:
        authorization = f"Bearer {api_key}"
    host = parts.hostname or ""
    proxy = None
    if not urllib.request.proxy_bypass(host):
        proxy = urllib.request.getproxies().get(parts.scheme)
    headers = {
        "Authorization": authorization,
        "Accept": "application/json",
        "Content-Type": "application/json",
    }
    host_port = parts.netloc.rpartition("@")[2]  # the credentials go in the header
    url = urlunsplit((parts.scheme, host_port, parts.path + path, parts.query, ""))
    return _Route(url, headers, proxy)


@dataclass
class _LoopBinding:
    """The HTTP session and the concurrency limit of one event loop.

    ``finalizer`` closes the session when the transport is collected or at interpreter exit, if
    nothing closed it before: aiohttp reports a session left open as an error.
    """

    loop: asyncio.AbstractEventLoop
    session: aiohttp.ClientSession
    semaphore: asyncio.Semaphore
    finalizer: weakref.finalize

    async def close(self) -> None:
        """Close the session (from the running loop); its loop may be closed already."""
        self.finalizer.detach()
        await self.session.close()


def _close_session(loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession) -> None:
    """Close ``session`` of ``loop`` from any thread, without a loop of its own running here."""
    if session.closed:
        return
    try:
        here = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    with contextlib.suppress(Exception):  # best effort: the process may be exiting
        if loop.is_running():
            future = asyncio.run_coroutine_threadsafe(session.close(), loop)
            if here is not loop:  # waiting from the loop's own thread would block it
                future.result(timeout=2)
        elif here is None:  # the loop is gone: its connections are dead, closing needs no I/O
            temporary = asyncio.new_event_loop()
            try:
                temporary.run_until_complete(session.close())
            finally:
                temporary.close()


class EndpointTransport:
    """Sends chat requests to the endpoints of one model, as the module docstring says.

    The HTTP session and the concurrency limit belong to the event loop that uses them; a
    transport used from another loop (a new ``asyncio.run``) gets a fresh session there. The
    structured-output mode and the token field are learnt once and kept for later calls. The
    running counts of each endpoint are :meth:`counts`.
    """

    def __init__(self, config: EndpointConfig) -> None:
        self.config = config
        self.pool = EndpointPool(config.base_urls, config.cooldown_s)
        key = config.api_key.get_secret_value()
        self._routes = {endpoint: _route(endpoint.url, key) for endpoint in self.pool.endpoints}
        self._backend, self._secrets = config.describe(), config.secrets  # the config is frozen
        self._mode: FormatMode = FORMAT_MODES[0]
        self._token_field = "max_tokens"
        self._formats: dict[tuple[str, str, bool, int], tuple[Mapping[str, Any], str]] = {}
        self._binding: _LoopBinding | None = None

    @property
    def format_mode(self) -> FormatMode:
        """The structured-output mode that later calls will use (downgraded when refused)."""
        return self._mode

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config.describe()!r})"

    def counts(self) -> dict[str, EndpointCounts]:
        """Requests sent to each endpoint and failed there, so far, by endpoint name."""
        return self.pool.counts()

    async def _bind(self) -> _LoopBinding:
        loop = asyncio.get_running_loop()
        old = self._binding
        if old is not None and old.loop is loop:
            return old
        connector = aiohttp.TCPConnector(limit=self.config.max_concurrency)
        # No session-wide timeout (aiohttp's default is 5 minutes): each attempt sets its own.
        session = aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout())
        finalizer = weakref.finalize(self, _close_session, loop, session)
        # Bound before the first await, so that concurrent calls share this binding.
        binding = self._binding = _LoopBinding(
            loop, session, asyncio.Semaphore(self.config.max_concurrency), finalizer
        )
        if old is not None:  # the session of a loop gone by (a finished ``asyncio.run``)
            if old.loop.is_closed():  # its connections are dead: closing them needs no loop
                await old.close()
            elif old.loop.is_running():
                old.finalizer.detach()
                asyncio.run_coroutine_threadsafe(old.session.close(), old.loop)
        return binding

    async def aclose(self) -> None:
        """Close the HTTP session of the running loop."""
        binding, self._binding = self._binding, None
        if binding is not None and binding.loop is asyncio.get_running_loop():
            await binding.close()

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
        backoff (``config.retry``; a ``Retry-After`` header sets the delay), on another endpoint
        where there are several (at once when one is available); a refused structured-output
        mode or token field is switched and the call sent again. Raises the typed error of the
        last failure when the retries are spent, and
        :class:`~dreamgym_env.errors.ModelTimeoutError` when ``deadline`` (default: a new one of
        ``config.deadline_s``; pass one to share it between the calls of one request) has passed,
        even if retries remain.
        """
        binding = await self._bind()
        pool, several = self.pool, len(self.pool) > 1
        backend, secrets = self._backend, self._secrets
        deadline = deadline if deadline is not None else Deadline(self.config.deadline_s)
        calls = failures = 0
        failed_at: Endpoint | None = None
        while True:
            mode = self._mode if schema is not None else "text"
            calls += 1
            async with binding.semaphore:
                deadline.start()
                timeout = deadline.bound(self.config.timeout_s)
                if timeout is not None and timeout <= 0:
                    raise self._deadline_error(deadline, context, calls - 1, None)
                endpoint = pool.choose(avoid=failed_at)
                pool.begin(endpoint)
                try:
                    reply = await self._call(
                        binding.session, endpoint, messages, schema, schema_name, strict, mode, timeout, calls
                    )
                except _CALL_ERRORS as exc:
                    caught = exc
                    where = f"{context} at {endpoint.name}" if several else context
                    error = translate_error(
                        exc, backend=backend, attempts=calls, context=where, secrets=secrets
                    )
                    failed = not isinstance(error, ModelRequestError)
                    pool.end(endpoint, failed=failed, cool_down=isinstance(error, _COOLING_ERRORS))
                except BaseException:  # cancelled: not the endpoint's failure
                    pool.end(endpoint)
                    raise
                else:
                    pool.end(endpoint)
                    return reply
            if isinstance(error, ModelRequestError):
                if self._adapt_to_refusal(mode, str(caught)):
                    continue
                raise error from None  # not from the library's error: see the module docstring
            failures += 1
            if failures >= self.config.retry.max_attempts:
                raise error from None
            failed_at = endpoint
            if isinstance(error, _COOLING_ERRORS) and pool.available_besides(endpoint):
                delay = 0.0  # fail over to a healthy endpoint at once
            else:
                hinted = retry_after(caught, self.config.retry.backoff_max_s)
                delay = self.config.retry.delay(failures) if hinted is None else hinted
            left = deadline.remaining()
            if left is not None and left <= delay:
                raise self._deadline_error(deadline, context, calls, error) from None
            logger.info(
                "%s: %s at %s; retry %d in %.2fs",
                backend,
                type(error).__name__,
                endpoint.name,
                failures,
                delay,
            )
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
        session: aiohttp.ClientSession,
        endpoint: Endpoint,
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
        payload = json.dumps(body)
        fmt = self._format_json(mode, schema, schema_name, strict) if schema is not None else ""
        if fmt:  # the schema's JSON is written once, not per request
            payload = f'{payload[:-1]}, "response_format": {fmt}}}'
        text = await self._post(session, endpoint, payload, timeout)
        # :func:`chat_reply` checks the body's shape (proxies answer HTTP 200 with anything).
        return chat_reply(text, calls, endpoint.name)

    def _format_json(self, mode: FormatMode, schema: Mapping[str, Any], name: str, strict: bool) -> str:
        """The ``response_format`` field's JSON (``""``: none in this mode), kept for the schemas seen last."""
        key = (mode, name, strict, id(schema))
        cached = self._formats.get(key)
        if cached is None or cached[0] is not schema:  # an id is only unique while its object lives
            if len(self._formats) >= FORMAT_CACHE_SIZE:
                self._formats.clear()
            fmt = response_format(mode, schema, name, strict)
            cached = self._formats[key] = (schema, json.dumps(fmt) if fmt is not None else "")
        return cached[1]

    async def _post(
        self, session: aiohttp.ClientSession, endpoint: Endpoint, body: str, timeout: float | None
    ) -> str:
        """POST ``body`` (a JSON text) to ``endpoint``'s ``/chat/completions``: the answer's text, or an error.

        Raises :class:`HTTPStatusError` for an HTTP error answer, and aiohttp's or asyncio's
        errors when there is no answer (:func:`translate_error` maps them all).
        """
        route = self._routes[endpoint]
        async with session.post(
            route.url,
            data=body.encode("utf-8"),
            headers=route.headers,
            proxy=route.proxy,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            data = await response.read()
            if response.status >= 400:
                raise HTTPStatusError.of(response.status, data, response.headers)
        return data.decode("utf-8", "replace")

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
