"""In-process experience-model doubles for tests and benchmarks (never a default backend)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.types import ExperienceRequest, Transition

Respond = Callable[[ExperienceRequest], Transition]


def echo_transition(request: ExperienceRequest) -> Transition:
    """Answer a transition whose next state is the current state plus a line naming the action."""
    return Transition(reasoning="scripted echo", next_state=f"{request.state}\n[after] {request.action}")


class ScriptedExperienceModel(ExperienceModel):
    """An experience model answering from a callable, with optional latency: a test double.

    ``respond`` may raise (e.g. a :class:`~dreamgym_env.errors.ModelTimeoutError`) to play a
    failing backend. Each request waits ``latency_s`` (``asyncio.sleep``), so a batch of N
    requests takes about ``latency_s``, not ``N * latency_s``, as with a concurrent endpoint.

    Attributes:
        calls: requests answered or attempted so far.
        batches: :meth:`predict` calls so far.
        requests: every request received, in order.
        in_flight, peak_in_flight: requests waiting on their latency now, and at most.

    """

    def __init__(
        self,
        respond: Respond = echo_transition,
        *,
        latency_s: float = 0.0,
        model_id: str = "scripted",
    ) -> None:
        self.model_id = model_id
        super().__init__()
        self.respond, self.latency_s = respond, latency_s
        self.calls = self.batches = self.in_flight = self.peak_in_flight = 0
        self.requests: list[ExperienceRequest] = []

    async def predict(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        """Answer each request after the latency, concurrently, in order."""
        self.batches += 1
        return list(await asyncio.gather(*(self._answer(request) for request in requests)))

    async def _answer(self, request: ExperienceRequest) -> Transition:
        self.calls += 1
        self.requests.append(request)
        started = time.perf_counter()
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            transition = self.respond(request)
        finally:
            self.in_flight -= 1
        # the answer's own token counts are kept (a test can script them); latency and model are measured
        usage = transition.usage.model_copy(
            update={"latency_s": time.perf_counter() - started, "model": self.model_id}
        )
        return transition.model_copy(update={"usage": usage})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r}, latency_s={self.latency_s})"
