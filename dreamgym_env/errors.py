"""One error tree for the whole package.

Failures of the outside world (a model endpoint, its output) are kept apart from misuse
(bad arguments, wrong spaces, missing configuration)::

    DreamGymError
    ├── ConfigurationError          misuse: bad arguments, unknown names, missing settings
    │   └── SpaceMismatchError      a wrapper or switch got spaces it does not accept
    ├── UnknownNameError            an unknown env id, domain, preset or task (suggests one)
    ├── DataError                   a data file (offline JSONL, buffer, model file) is unusable
    ├── WorkerLostError             a worker process holding sub-envs (a Ray actor) died
    ├── RealServerError             a real-benchmark server could not be reached or answered an error
    │   └── RealServerTimeoutError  it did not answer within the env's timeout
    └── ExperienceModelError        the experience model failed after its retries
        ├── ModelTransportError     the endpoint could not be reached or kept failing
        │   ├── ModelTimeoutError   every attempt timed out, or the request's deadline passed
        │   ├── ModelRateLimitError the endpoint kept answering 429
        │   └── ModelServerError    the endpoint kept answering 5xx, or 200 without a completion
        ├── ModelRequestError       the endpoint refused the request (4xx other than 429)
        └── ModelOutputError        the model kept answering text that is not a transition

Errors carry context (which backend, which attempt, an excerpt of bad output), never a secret.

One warning: ``StaleModelWarning`` (a ``UserWarning``), a trained experience model loaded after its
domain's prompt changed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

EXCERPT_CHARS = 300


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """Return ``text`` cut to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


class DreamGymError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigurationError(DreamGymError, ValueError):
    """The package was called or configured in a way it cannot honour."""


class SpaceMismatchError(ConfigurationError):
    """A wrapper or env switch was given spaces it does not accept."""


class UnknownNameError(DreamGymError, KeyError):
    """A name (env id, domain, preset, task id) is unknown; suggests the nearest known one."""

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        shown = ", ".join(known[:10]) + (" ..." if len(known) > 10 else "")
        super().__init__(f"unknown {kind} {name!r}.{hint} Known: {shown}")
        self.kind, self.name, self.suggestion = kind, name, close[0] if close else None

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class StaleModelWarning(UserWarning):
    """A trained experience model was trained on requests its domain no longer sends (its prompt changed)."""


class DataError(DreamGymError):
    """A data file (offline trajectories, replay buffer, model weights) cannot be used."""


class WorkerLostError(DreamGymError):
    """A worker process that held sub-envs (a Ray actor, its process or its node) died.

    Attributes:
        sub_envs: the indices of the sub-envs that were lost with it.
        completed: the results that the other workers returned for the same step, by sub-env
            index: ``(observation, reward, terminated, truncated, info)``; their sub-envs have
            recorded that step.
    """

    def __init__(
        self,
        message: str,
        *,
        sub_envs: Iterable[int] = (),
        completed: dict[int, tuple[object, ...]] | None = None,
    ) -> None:
        super().__init__(message)
        self.sub_envs = list(sub_envs)
        self.completed = dict(completed or {})


class RealServerError(DreamGymError):
    """A real-benchmark server (an AgentGym env server) failed: unreachable, an error, or off-protocol.

    Raised by the ``DreamGym/<X>-Real-v0`` envs (:mod:`dreamgym_env.envs.real`) instead of an
    invented step: the message names the URL and how to start the server.

    Attributes:
        url: the URL of the request that failed.
        status: the HTTP status of the answer (``None`` when no answer came).
    """

    def __init__(self, message: str, *, url: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.url, self.status = url, status


class RealServerTimeoutError(RealServerError):
    """The real-benchmark server did not answer within the env's ``timeout_s``."""


class ExperienceModelError(DreamGymError):
    """The experience model failed to produce a transition after its retries.

    Attributes:
        backend: a description of the backend (model id and endpoint, never a key).
        attempts: how many attempts were made.
    """

    def __init__(self, message: str, *, backend: str = "", attempts: int = 0) -> None:
        details = ", ".join(
            p for p in (backend and f"backend={backend}", attempts and f"attempts={attempts}") if p
        )
        super().__init__(f"{message} ({details})" if details else message)
        self.backend, self.attempts = backend, attempts


class ModelTransportError(ExperienceModelError):
    """The endpoint could not be reached, or kept failing at the transport level."""


class ModelTimeoutError(ModelTransportError):
    """Every attempt timed out, or the request's total deadline (``deadline_s``) passed."""


class ModelRateLimitError(ModelTransportError):
    """The endpoint kept answering HTTP 429."""


class ModelServerError(ModelTransportError):
    """The endpoint kept answering HTTP 5xx, or HTTP 200 with a body that is not a chat completion."""


class ModelRequestError(ExperienceModelError):
    """The endpoint refused the request itself (HTTP 4xx other than 429); retrying will not help."""


class ModelOutputError(ExperienceModelError):
    """The model kept answering text that is not a whole, valid transition.

    A missing field, a reward outside [0, 1], a next state over its length limit: each is
    re-asked, then raised as this error; none is defaulted or clamped.

    Attributes:
        output_excerpt: the start of the last bad output.
    """

    def __init__(self, message: str, *, output: str = "", backend: str = "", attempts: int = 0) -> None:
        self.output_excerpt = excerpt(output)
        shown = f"; last output: {self.output_excerpt!r}" if output else ""
        super().__init__(message + shown, backend=backend, attempts=attempts)
