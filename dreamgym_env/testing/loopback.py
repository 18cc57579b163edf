"""The life cycle the test servers share: an HTTP server on an ephemeral loopback port, served from a daemon thread.

A subclass gives its ``ThreadingHTTPServer`` class and handler (:attr:`LoopbackServer.server_class`,
:attr:`LoopbackServer.handler_class`; the server gets an ``owner`` attribute, the test
server) and the path its URL ends with; it is a context manager. ``_stopping`` is set while
the server shuts down, so that a handler holding a request (a scripted delay) lets it go.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, TypeVar

_Self = TypeVar("_Self", bound="LoopbackServer")


class LoopbackServer:
    """Start, stop and address a test server on ``127.0.0.1``."""

    server_class: ClassVar[type[ThreadingHTTPServer]]
    handler_class: ClassVar[type[BaseHTTPRequestHandler]]
    url_path: ClassVar[str] = ""
    """What the base URL ends with (``/v1`` for an OpenAI-compatible server)."""

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._httpd: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL to give a client: ``http://127.0.0.1:PORT`` and :attr:`url_path`."""
        if self._httpd is None:
            raise RuntimeError("the server is not started; use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.url_path}"

    def start(self: _Self) -> _Self:
        """Bind an ephemeral port and serve from a daemon thread."""
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = self.server_class(("127.0.0.1", 0), self.handler_class)
            self._httpd.owner = self
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; requests still held by a delay are released at once."""
        if self._httpd is not None:
            self._stopping.set()
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd = self._thread = None

    def __enter__(self: _Self) -> _Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
