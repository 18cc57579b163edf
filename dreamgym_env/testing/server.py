"""A local OpenAI-compatible HTTP server with scripted answers: a test double for endpoint backends.

It serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 (an ephemeral port)
from a background thread, one thread per connection, HTTP/1.1 keep-alive::

    with ScriptedOpenAIServer([http_error(429), ok(transition)]) as server:
        model = OpenAIExperienceModel(base_url=server.url, model="m", api_key=None)
        ...
        assert server.requests_total == 2

Replies queued with :meth:`ScriptedOpenAIServer.enqueue` are used in order; when the queue is
empty the ``responder`` answers (by default :func:`~dreamgym_env.testing.replies.echo_responder`).
Everything the server received is kept in :attr:`ScriptedOpenAIServer.requests`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dreamgym_env.testing.loopback import LoopbackServer
from dreamgym_env.testing.replies import (
    Delay,
    Drop,
    HTTPError,
    Ok,
    Raw,
    Reply,
    Responder,
    as_reply,
    echo_responder,
    http_error,
)

DEFAULT_MODEL_NAME = "scripted-model"
LISTEN_BACKLOG = 1024
"""Pending connections the socket queues: enough for hundreds of clients connecting at once."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG
    owner: ScriptedOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once, not 40 ms apart
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read the counters, not stderr."""

    def setup(self) -> None:
        super().setup()
        self.server.owner._connected(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._disconnected(self.connection)

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path.rstrip("/") == "/v1/models":
            created = int(time.time())
            models = [
                {"id": name, "object": "model", "created": created, "owned_by": "testing"}
                for name in owner.served_models
            ]
            self._send_json(200, {"object": "list", "data": models})
        else:
            self._send_json(404, _error_body(f"no route GET {self.path}"))

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, _error_body(f"no route POST {self.path}"))
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send_json(400, _error_body("request body is not JSON"))
            return
        owner._enter(body, {name.lower(): value for name, value in self.headers.items()})
        try:
            self._answer(owner, body, owner._next_reply(body))
        finally:
            owner._leave()

    def _answer(self, owner: ScriptedOpenAIServer, body: dict[str, Any], reply: Reply) -> None:
        if owner.latency_s:
            owner._stopping.wait(owner.latency_s)
        while isinstance(reply, Delay):
            owner._stopping.wait(reply.seconds)
            reply = reply.then if reply.then is not None else owner._respond(body)
        if isinstance(reply, Drop):
            self.close_connection = True
            return
        if isinstance(reply, HTTPError):
            self._send_json(reply.status, reply.body, reply.headers)
            return
        if isinstance(reply, Raw):
            self._send(reply.status, reply.body, reply.content_type, reply.headers)
            return
        if body.get("stream"):
            self._send_json(400, _error_body("the scripted server does not stream"))
            return
        self._send_json(200, _completion(owner, body, reply))

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | Any = None) -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self._send(status, data, "application/json", headers)

    def _send(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | Any = None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in dict(headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. its timeout)
            self.close_connection = True


def _error_body(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


def _completion(owner: ScriptedOpenAIServer, body: dict[str, Any], reply: Ok) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-scripted-{owner.requests_total}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", owner.model_name),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


class ScriptedOpenAIServer(LoopbackServer):
    """A local OpenAI-compatible server answering scripted replies (a test double, never a default).

    Args:
        replies: replies to answer first, in order.
        responder: answers when the queue is empty (default: a valid transition echoing the action).
        latency_s: extra delay applied to every chat request.
        model_name: the model listed by ``GET /v1/models``.
        served_models: the models ``GET /v1/models`` lists instead (several, or none).

    Counters (thread-safe): :attr:`requests_total`, :attr:`in_flight`, :attr:`peak_in_flight`,
    :attr:`connections_total`; :attr:`requests` holds every chat request body received, in arrival
    order, and :attr:`request_headers` their headers. :meth:`kill` stops it as a crash would.

    """

    server_class = _Server
    handler_class = _Handler
    url_path = "/v1"

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        responder: Responder = echo_responder,
        latency_s: float = 0.0,
        model_name: str = DEFAULT_MODEL_NAME,
        served_models: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        self.responder, self.latency_s, self.model_name = responder, latency_s, model_name
        self.served_models = list(served_models) if served_models is not None else [model_name]
        self._queue: deque[Reply] = deque(replies)
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._in_flight = self._peak = self._connections = 0
        self._open: set[socket.socket] = set()

    def kill(self) -> None:
        """Stop as a crashed server does: the port closes and every open connection is cut.

        Unlike :meth:`close`, which leaves kept-alive connections served, no request gets an
        answer after this: those in flight see their connection reset.
        """
        self._cut_connections()  # first, so that no held request is answered
        self.close()
        self._cut_connections()  # any accepted before the port closed

    def _cut_connections(self) -> None:
        with self._lock:
            connections = list(self._open)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by its handler
                connection.shutdown(socket.SHUT_RDWR)

    def enqueue(self, *replies: Reply) -> None:
        """Queue replies to answer the next requests, in order."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """How many queued replies are not used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The chat request bodies received so far (a copy), in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The headers (lower-case names) of the chat requests received so far, in arrival order."""
        with self._lock:
            return list(self._headers)

    @property
    def connections_total(self) -> int:
        """How many TCP connections were accepted (fewer than requests when kept alive)."""
        with self._lock:
            return self._connections

    @property
    def requests_total(self) -> int:
        """How many chat requests arrived."""
        with self._lock:
            return len(self._requests)

    @property
    def in_flight(self) -> int:
        """Chat requests received and not yet answered."""
        with self._lock:
            return self._in_flight

    @property
    def peak_in_flight(self) -> int:
        """The most chat requests in flight at once."""
        with self._lock:
            return self._peak

    def _connected(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections += 1
            self._open.add(connection)

    def _disconnected(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.discard(connection)

    def _enter(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers)
            self._in_flight += 1
            self._peak = max(self._peak, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self._respond(body)

    def _respond(self, body: dict[str, Any]) -> Reply:
        try:
            return as_reply(self.responder(body))
        except Exception as exc:  # a broken responder answers 500 and says why
            return http_error(500, _error_body(f"responder failed: {type(exc).__name__}: {exc}"))
