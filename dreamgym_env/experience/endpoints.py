"""Several endpoints of one model: which one gets the next request, and which are left out.

:class:`EndpointPool` holds the endpoints of a model (one or more base URLs serving the same
model, e.g. several vLLM servers) and their state: requests in flight, running counts, and the
time until which a failed endpoint is left out. The transport asks it for an endpoint before
each attempt (:meth:`EndpointPool.choose`) and reports how the attempt ended::

    pool = EndpointPool(["http://a:8000/v1", "http://b:8000/v1"], cooldown_s=5.0)
    endpoint = pool.choose()          # the one with the fewest requests in flight
    pool.begin(endpoint)
    ...                               # send the request
    pool.end(endpoint, failed=False)  # or failed=True, cool_down=True: left out for 5 s

The choice: among the endpoints not cooling down, the one with the fewest requests in flight
(ties go round in turn, the first endpoint first); when every endpoint is cooling down, the one that returns first, so that
a request is never refused here (the transport's retry budget and deadline decide when to stop).
The pool does no I/O and holds no lock: it is used from one event loop at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dreamgym_env.experience.config import endpoint_name
from dreamgym_env.types import EndpointCounts


@dataclass(eq=False)
class Endpoint:
    """One base URL and its state.

    ``name`` (the URL without credentials) is how logs and usage counts name it; ``url`` may
    hold a password and is never shown.
    """

    url: str
    name: str
    in_flight: int = 0
    requests: int = 0
    failures: int = 0
    cooling_until: float = 0.0

    def __repr__(self) -> str:
        return f"Endpoint({self.name!r}, in_flight={self.in_flight}, requests={self.requests}, failures={self.failures})"


class EndpointPool:
    """The endpoints of one model, chosen by fewest requests in flight, failed ones left out a while.

    Args:
        urls: the base URLs (at least one; a password in one is never shown).
        cooldown_s: how long an endpoint is left out after a failure that cools it down.
        clock: monotonic seconds (a test passes its own).
    """

    def __init__(
        self, urls: Sequence[str], cooldown_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not urls:
            raise ValueError("an endpoint pool needs at least one URL")
        self.endpoints = [Endpoint(url, endpoint_name(url)) for url in urls]
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._turn = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}({[e.name for e in self.endpoints]!r}, cooldown_s={self.cooldown_s:g})"

    def __len__(self) -> int:
        return len(self.endpoints)

    def choose(self, avoid: Endpoint | None = None) -> Endpoint:
        """The endpoint for the next attempt (see the module docstring).

        ``avoid`` (the endpoint whose attempt just failed) is taken only when no other is
        available, so that a retry goes elsewhere even before a cooldown is set (HTTP 429).
        """
        endpoints = self.endpoints
        if len(endpoints) == 1:
            return endpoints[0]
        now = self._clock()
        ready = [e for e in endpoints if e.cooling_until <= now and e is not avoid]
        if not ready:
            ready = [e for e in endpoints if e.cooling_until <= now]
        if not ready:
            return min(endpoints, key=lambda e: e.cooling_until)
        fewest = min(e.in_flight for e in ready)
        start = self._turn % len(ready)
        self._turn += 1
        for endpoint in ready[start:] + ready[:start]:
            if endpoint.in_flight == fewest:
                return endpoint
        raise AssertionError("unreachable: one endpoint has the fewest requests in flight")

    def available_besides(self, endpoint: Endpoint) -> bool:
        """Whether another endpoint is not cooling down (a retry can go there at once)."""
        now = self._clock()
        return any(e is not endpoint and e.cooling_until <= now for e in self.endpoints)

    def begin(self, endpoint: Endpoint) -> None:
        """Count a request sent to ``endpoint``."""
        endpoint.in_flight += 1
        endpoint.requests += 1

    def end(self, endpoint: Endpoint, *, failed: bool = False, cool_down: bool = False) -> None:
        """Count the end of a request; ``cool_down``: leave ``endpoint`` out for ``cooldown_s``."""
        endpoint.in_flight -= 1
        if failed:
            endpoint.failures += 1
        if cool_down and len(self.endpoints) > 1:
            endpoint.cooling_until = self._clock() + self.cooldown_s

    def cooling(self) -> list[str]:
        """The names of the endpoints left out now."""
        now = self._clock()
        return [e.name for e in self.endpoints if e.cooling_until > now]

    def counts(self) -> dict[str, EndpointCounts]:
        """The running counts of each endpoint, by name (a snapshot, for ``Usage.endpoints``)."""
        return {e.name: EndpointCounts(requests=e.requests, failures=e.failures) for e in self.endpoints}
