"""A persistent transition cache that works in front of any experience-model backend.

Opt-in: a cost saver for demos, fidelity runs and tests, not the default for training (an env
that RL samples from must not replay yesterday's answers). Turn it on with ``cache=True`` or
``DREAMGYM_CACHE=1``, or wrap a backend yourself.

A transition is stored under a key made of everything that shapes the answer: the request
(the domain's prompt, task, history, state, action, demonstrations), the model id, the prompt
version and the sampling settings (temperature, max tokens), so that a changed domain rule, a
new model or a changed prompt misses. Only deterministic answers are cached: when the backend
samples (temperature > 0) the cache steps aside, since one stored sample would stand for every
future answer.

Example::

    model = CachedExperienceModel(LocalExperienceModel())   # ~/.cache/dreamgym/transitions.sqlite
    first = model.predict_one(request)    # a model call; usage.cached is False
    again = model.predict_one(request)    # from the cache; usage.cached is True, no model call
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from dreamgym_env.errors import DataError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.prompt import utf8_safe
from dreamgym_env.experience.provision import cache_dir
from dreamgym_env.types import ExperienceRequest, Transition, Usage

logger = logging.getLogger(__name__)
T = TypeVar("T")

CACHE_FILE: Final = "transitions.sqlite"
CACHE_VARIABLE: Final = "DREAMGYM_CACHE"
"""Set to ``1`` / ``on`` / ``true`` to turn the cache on where the package builds the model itself."""
_ON_VALUES: Final = {"1", "on", "true", "yes"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS transitions (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    transition TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``DREAMGYM_CACHE`` turns the cache on (set to 1/on/true/yes; off otherwise)."""
    env = os.environ if environ is None else environ
    return env.get(CACHE_VARIABLE, "").strip().lower() in _ON_VALUES


def default_cache_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the cache lives by default: ``cache_dir()/transitions.sqlite``."""
    return cache_dir(environ) / CACHE_FILE


def request_key(
    request: ExperienceRequest,
    *,
    model_id: str,
    prompt_version: str,
    sampling: Mapping[str, Any] | None = None,
) -> str:
    r"""The cache key: a sha256 of everything that shapes the answer.

    That is the canonical JSON of the request (its domain prompt included), the model id, the
    prompt version and the sampling settings. Text with surrogates (an agent's action such as
    ``"search[shoes \ud800]"``) is keyed as the model sees it: a lone surrogate as U+FFFD (see
    :func:`~dreamgym_env.experience.prompt.utf8_safe`).
    """
    payload = {
        "request": request.model_dump(mode="json"),
        "model": model_id,
        "prompt_version": prompt_version,
        "sampling": dict(sampling or {}),
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(utf8_safe(canonical).encode("utf-8")).hexdigest()


class TransitionCache:
    """Transitions in an SQLite file, by key; safe to share between threads and processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise DataError(f"cannot open the transition cache {self.path}: {exc}") from exc

    def get(self, key: str) -> Transition | None:
        """The stored transition of ``key``, or ``None``."""
        with self._lock:
            row = self._db.execute("SELECT transition FROM transitions WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return Transition.model_validate_json(row[0])
        except ValueError:
            logger.warning("ignoring an unreadable cache entry %s in %s", key[:12], self.path)
            return None

    def put(self, key: str, transition: Transition, *, model_id: str, prompt_version: str) -> None:
        """Store ``transition`` under ``key`` (replacing an older one)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO transitions VALUES (?, ?, ?, ?, ?)",
                (key, model_id, prompt_version, transition.model_dump_json(), time.time()),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM transitions").fetchone()[0])

    def clear(self) -> None:
        """Delete every stored transition."""
        with self._lock:
            self._db.execute("DELETE FROM transitions")
            self._db.commit()

    def close(self) -> None:
        """Close the database file."""
        with self._lock:
            self._db.close()


def _setting(model: ExperienceModel, name: str) -> Any:
    """A backend setting: on the model itself, else on its ``config`` (endpoint) or ``settings`` (local)."""
    for holder in (model, getattr(model, "config", None), getattr(model, "settings", None)):
        value = getattr(holder, name, None)
        if value is not None:
            return value
    return None


def sampling_temperature(model: ExperienceModel) -> float:
    """The backend's sampling temperature where it exposes one (``temperature`` or ``config``), else 0."""
    value = _setting(model, "temperature")
    return float(value) if isinstance(value, (int, float)) else 0.0


def sampling_settings(model: ExperienceModel) -> dict[str, Any]:
    """The settings of a backend that shape its answers (temperature, max tokens), for the cache key."""
    max_tokens = _setting(model, "max_tokens")
    return {
        "temperature": sampling_temperature(model),
        "max_tokens": int(max_tokens) if isinstance(max_tokens, int) else None,
    }


class CachedExperienceModel(ExperienceModel):
    """Wraps any backend: answers a repeated request from a persistent cache, without a model call.

    Each answer's usage carries ``cached`` (whether it came from the cache) and the wrapper's
    running ``cache_hits`` / ``cache_misses``; a hit reports no tokens. Identical requests within
    one batch make one model call. With ``enabled=False``, or when the inner backend samples
    (temperature > 0), every request goes to the inner backend and nothing is stored.

    Arguments:
        inner: the backend to call on a miss.
        path: the SQLite file (default :func:`default_cache_path`), or an open :class:`TransitionCache`.
        enabled: ``False`` passes everything through.
    """

    def __init__(
        self,
        inner: ExperienceModel,
        path: str | os.PathLike[str] | TransitionCache | None = None,
        *,
        enabled: bool = True,
    ) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.prompt_version = inner.prompt_version
        super().__init__()
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self._store: TransitionCache | None = None
        if enabled:
            self._store = (
                path if isinstance(path, TransitionCache) else TransitionCache(path or default_cache_path())
            )
        self._bypass_logged = False

    @property
    def store(self) -> TransitionCache | None:
        """The cache file, or ``None`` when the cache is off."""
        return self._store

    @property
    def temperature(self) -> float:
        """The inner backend's sampling temperature."""
        return sampling_temperature(self.inner)

    def __repr__(self) -> str:
        where = str(self._store.path) if self._store is not None else "off"
        return f"{type(self).__name__}({self.inner!r}, cache={where!r})"

    def describe(self) -> str:
        """The inner model's description, and the cache file where the cache is on."""
        inner = self.inner.describe()
        return inner if self._store is None else f"{inner}, cached in {self._store.path}"

    def _active(self) -> bool:
        if self._store is None:
            return False
        if self.temperature > 0:
            if not self._bypass_logged:
                logger.info(
                    "transition cache bypassed: %r samples at temperature %g", self.inner, self.temperature
                )
                self._bypass_logged = True
            return False
        return True

    async def predict(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        """Answer from the cache where possible; send the rest, deduplicated, to the inner backend."""
        if not self._active():
            return await self.inner.predict(requests)
        assert self._store is not None
        started = time.perf_counter()
        sampling = sampling_settings(self.inner)
        keys = [
            request_key(r, model_id=self.model_id, prompt_version=self.prompt_version, sampling=sampling)
            for r in requests
        ]
        answers: dict[str, Transition] = {}
        missing: dict[str, ExperienceRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            if key in answers or key in missing:
                continue
            stored = self._store.get(key)
            if stored is None:
                missing[key] = request
            else:
                answers[key] = stored
        hit_keys = set(answers)
        lookup_s = time.perf_counter() - started
        if missing:
            fresh = await self.inner.predict(list(missing.values()))
            for key, transition in zip(missing, fresh, strict=True):
                self._store.put(key, transition, model_id=self.model_id, prompt_version=self.prompt_version)
                answers[key] = transition
        results: list[Transition] = []
        for key in keys:
            transition = answers[key]
            if key in hit_keys:
                self.hits += 1
                usage = Usage(latency_s=lookup_s, attempts=0, cached=True, model=transition.usage.model)
            else:
                self.misses += 1
                usage = transition.usage.model_copy()
            usage.cache_hits, usage.cache_misses = self.hits, self.misses
            results.append(transition.model_copy(update={"usage": usage}))
            hit_keys.add(key)  # a repeat of a request within the batch is answered by its first call
        return results

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run on the inner backend's event loop, so that both share one loop and one client."""
        return self.inner.run(coroutine)

    async def aclose(self) -> None:
        """Close the inner backend's resources of the running loop."""
        await self.inner.aclose()

    def close(self) -> None:
        """Close the inner backend and the cache file."""
        self.inner.close()
        if self._store is not None:
            self._store.close()
