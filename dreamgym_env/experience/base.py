"""The experience-model interface shared by every backend."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from dreamgym_env.types import ExperienceRequest, Transition

T = TypeVar("T")

PROMPT_VERSION = "6"
"""Bumped whenever the prompt assembly changes, so that cached transitions of older prompts miss."""
WAKE_S = 0.1
"""How long a sync caller waits at a time for work of another thread (:func:`wait_interruptibly`)."""


def wait_interruptibly(future: concurrent.futures.Future[T]) -> T:
    """``future``'s result, waited for in waits of :data:`WAKE_S`, so that Ctrl-C is seen at once.

    SIGINT lands in whichever thread the kernel picks; Python raises ``KeyboardInterrupt`` in the
    main thread only when that thread wakes, and a wait without timeout may never wake.
    """
    while not concurrent.futures.wait([future], timeout=WAKE_S).done:
        pass
    return future.result()


async def gather_or_cancel(calls: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """Run ``calls`` concurrently, results in order; the first failure cancels the others and is raised.

    The cancelled ones are awaited before the failure propagates, so none is left running (the
    embedded model's threads stop at their next token and give back their slots).
    """
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:  # on success there is nothing to cancel: no second gather on the hot path
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class BackgroundLoop:
    """An event loop of this object's own, in a daemon thread, for sync callers of async code.

    Sync callers (Gymnasium's ``step``) work even inside a running loop (e.g. Jupyter), and
    async clients keep their connection pool across calls. :meth:`close` awaits :meth:`aclose`
    on the loop, then stops it.
    """

    loop_name: str = "dreamgym"

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._loop_lock = threading.Lock()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on this object's event loop and wait for its result.

        An interrupted wait (Ctrl-C) cancels the coroutine: an embedded model's generations stop
        at their next token instead of running on behind the ``KeyboardInterrupt``.
        """
        future = asyncio.run_coroutine_threadsafe(coroutine, self._ensure_loop())
        try:
            return wait_interruptibly(future)
        except BaseException:
            future.cancel()
            raise

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(
                    target=self._loop.run_forever, name=self.loop_name, daemon=True
                )
                self._loop_thread.start()
            return self._loop

    async def aclose(self) -> None:
        """Release the resources of the running loop (HTTP clients, model weights); nothing by default."""
        return None

    def close(self) -> None:
        """Release resources and stop the background loop."""
        with self._loop_lock:
            loop, self._loop = self._loop, None
        if loop is None:
            return
        wait_interruptibly(asyncio.run_coroutine_threadsafe(self.aclose(), loop))
        loop.call_soon_threadsafe(loop.stop)
        if self._loop_thread is not None:
            self._loop_thread.join(timeout=5)
        loop.close()


class ExperienceModel(BackgroundLoop, ABC):
    """Predicts the next state and reward of an environment from the interaction so far.

    Backends implement :meth:`predict` (async, a batch at a time, concurrent inside). The sync
    :meth:`predict_sync` runs it on an event loop that the model owns in a background thread
    (:class:`BackgroundLoop`).

    A backend never returns an invented transition: when the model fails it retries, then raises
    an :class:`~dreamgym_env.errors.ExperienceModelError`.
    """

    model_id: str = "unknown"
    prompt_version: str = PROMPT_VERSION

    @property
    def loop_name(self) -> str:  # type: ignore[override]
        return f"dreamgym-{self.model_id}"

    @abstractmethod
    async def predict(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        """Answer each request with a transition, in order."""

    def predict_sync(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        """Blocking form of :meth:`predict`."""
        return self.run(self.predict(requests))

    def predict_one(self, request: ExperienceRequest) -> Transition:
        """Blocking prediction of a single request."""
        return self.predict_sync([request])[0]

    def __deepcopy__(self, memo: dict[int, Any]) -> ExperienceModel:
        # A model is a shared handle (connections, weights): Gymnasium deep-copies env kwargs,
        # and every copy must keep using the same backend.
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r})"

    def describe(self) -> str:
        """Which model answers, in one line for people (what a script prints before it trains)."""
        return repr(self)
