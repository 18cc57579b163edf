"""ExperienceReplayBuffer: persistent transitions with cosine top-k retrieval by (state, action).

The buffer of the DreamGym paper: seeded with offline real trajectories, enriched online with
fresh transitions (real ones from a reference env, synthetic ones from the experience model),
and searched for the k transitions most similar to the one the experience model must predict.

    >>> from dreamgym_env.replay import ExperienceReplayBuffer, HashedEmbedder
    >>> buffer = ExperienceReplayBuffer("runs/webshop.db", embedder=HashedEmbedder())  # doctest: +SKIP
    >>> buffer.load_jsonl("webshop_offline.jsonl")                                     # doctest: +SKIP
    >>> hits = buffer.search(state, "click[Buy Now]", k=4, domain="webshop")         # doctest: +SKIP

Shared by writers on several hosts, in PostgreSQL (the ``postgres`` extra):

    >>> buffer = ExperienceReplayBuffer("postgresql://rl@db-host/replay")             # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.replay.embedders import Embedder, KeyPair, make_embedder
from dreamgym_env.replay.index import APPROXIMATE_ABOVE, DEFAULT_NPROBE, PartitionedIndex
from dreamgym_env.replay.jsonl import iter_trajectories
from dreamgym_env.replay.records import (
    EVICTION_ORDER,
    GROUNDING_SOURCES,
    SOURCES,
    BufferStats,
    ReplayHit,
    ReplayRecord,
)
from dreamgym_env.replay.sqlite import (
    DEFAULT_BUSY_TIMEOUT_S,
    DEFAULT_COMMIT_EVERY,
    DEFAULT_COMMIT_INTERVAL_S,
    NewTransition,
    SQLReplayStore,
    open_store,
)
from dreamgym_env.types import Source, Step, Task, Trajectory

logger = logging.getLogger(__name__)

DEFAULT_EVICT_FRACTION = 0.01
"""When full, the buffer evicts this share of its capacity at once (eviction in batches)."""
LOAD_BATCH_TRAJECTORIES = 128
"""Trajectories stored (and embedded) together when loading offline data."""


def content_key(domain: str, source: str, step: Step) -> bytes:
    """The dedup key of a transition: a hash of its domain, source and content (not its episode)."""
    fields = (
        domain,
        source,
        step.state,
        step.action,
        step.next_state,
        repr(float(step.reward)),
        str(step.done),
    )
    return hashlib.blake2b("\x00".join(fields).encode("utf-8"), digest_size=16).digest()


@dataclass
class _Episode:
    """Steps of one episode on their way into the buffer."""

    task: Task
    steps: list[Step]
    source: Source
    episode_id: str
    indices: list[int]
    policy: str
    metadata: dict[str, Any]
    timestamp: float


def _check_source(source: str) -> Source:
    if source not in SOURCES:
        raise ConfigurationError(f"source must be one of {SOURCES}, got {source!r}")
    return source  # type: ignore[return-value]


class ExperienceReplayBuffer:
    """Transitions of one or more domains, stored in SQLite or PostgreSQL, searchable by (state, action).

    Each transition is stored once (exact repeats of the same domain, source and content are
    deduplicated; each episode still remembers all its steps, so export restores it), with its
    source (``offline``, ``real`` or ``synthetic``), task, episode and time. Its key ``(state,
    action)`` is embedded by ``embedder`` and indexed per ``(domain, source)`` partition (see
    :mod:`dreamgym_env.replay.index`), so filters by domain and source are exact.

    When ``capacity`` is set and exceeded, the oldest synthetic transitions are evicted first;
    real ones only when no synthetic remain, offline ones last. Eviction runs in batches of
    ``evict_fraction * capacity``.

    When a write is durable (survives the writer being killed, SIGKILL included) and visible to
    readers in other processes: when it is committed, which happens

    - at the latest ``commit_interval_s`` seconds after the first uncommitted write, whether or
      not more writes follow (a background timer commits; default 1 s),
    - as soon as ``commit_every`` writes are pending (default 256),
    - when :meth:`commit` or :meth:`close` returns (``add`` itself does not wait for the disk).

    Use one writing process per file; other processes may read it (e.g. ``dreamgym buffer
    stats``). A second writer waits up to ``busy_timeout_s`` for the first one's transaction and
    then raises :class:`~dreamgym_env.errors.DataError`; so do a damaged or empty file, each
    naming the file. Closing checkpoints the WAL, so no ``-wal``/``-shm`` files stay behind.

    Given a ``postgresql://`` URL, the buffer lives in that database instead (see
    :mod:`dreamgym_env.replay.postgres`), with the same guarantees, for writers on many hosts:
    writers take turns per transaction as on a file, and before each search and write a buffer
    adds the rows other writers committed since to its index (and to :meth:`counts`).
    Deletions are not followed: with ``capacity``, let one writer evict, and a search leaves out
    hits that another writer evicted. Errors name the URL with its password masked.

    Args:
        path: the SQLite file (created when missing), a ``postgresql://`` URL, or ``None`` to
            keep everything in memory.
        embedder: an :class:`~dreamgym_env.replay.embedders.Embedder` or a spec string; default:
            the one the buffer was built with, else ``DREAMGYM_EMBEDDER``, else ``"auto"``.
        capacity: most transitions kept (``None``: unbounded).
        approximate_above: partition size above which the index goes approximate (needs faiss);
            ``None``: always exact.
        nprobe: inverted lists an approximate query scans.
        commit_every, commit_interval_s: the write batch (see above).
        busy_timeout_s: how long a write waits for another process's write transaction.
        evict_fraction: share of the capacity evicted at once when full.
        read_only: open an existing file for reading only.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | str | None = None,
        capacity: int | None = None,
        approximate_above: int | None = APPROXIMATE_ABOVE,
        nprobe: int = DEFAULT_NPROBE,
        commit_every: int = DEFAULT_COMMIT_EVERY,
        commit_interval_s: float = DEFAULT_COMMIT_INTERVAL_S,
        evict_fraction: float = DEFAULT_EVICT_FRACTION,
        read_only: bool = False,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ) -> None:
        if capacity is not None and capacity < 1:
            raise ConfigurationError(f"capacity must be >= 1 or None, got {capacity}")
        if not 0.0 <= evict_fraction < 1.0:
            raise ConfigurationError(f"evict_fraction must be in [0, 1), got {evict_fraction}")
        self._lock = threading.RLock()
        self.store: SQLReplayStore = open_store(
            path,
            read_only=read_only,
            commit_every=commit_every,
            commit_interval_s=commit_interval_s,
            busy_timeout_s=busy_timeout_s,
        )
        self._commit_timer: threading.Timer | None = None
        self.path = self.store.path
        self.location = self.store.location
        """Where the buffer lives: the file, ``":memory:"`` or the URL (password masked)."""
        self.read_only = read_only
        self.capacity = capacity
        self.evict_fraction = evict_fraction
        self.duplicates = 0
        """Transitions skipped as exact repeats since this buffer was opened."""
        self._embedder_arg = embedder
        self._embedder: Embedder | None = None
        self._index: PartitionedIndex | None = None
        self._index_options = {"approximate_above": approximate_above, "nprobe": nprobe}
        self._seen_id = -1
        """The highest transition id in the index: rows above it were added by other writers."""
        self._counts: dict[str, int] = {source: 0 for source in SOURCES} | self.store.count_by("source")
        self._warned_protected = False
        if capacity is not None and not read_only:
            with self._lock:
                self._evict_if_full()

    # -- lifecycle ----------------------------------------------------------------------------
    def commit(self) -> None:
        """Make every write so far durable."""
        with self._lock:
            self.store.commit()

    def close(self) -> None:
        """Commit, checkpoint and close the file (a second call does nothing)."""
        with self._lock:
            if self._commit_timer is not None:
                self._commit_timer.cancel()
                self._commit_timer = None
            self.store.close()

    def _schedule_commit(self) -> None:
        """Arm the timer that commits pending writes when they are ``commit_interval_s`` old."""
        due = self.store.commit_due_in()
        if due is None or self._commit_timer is not None:
            return
        timer = threading.Timer(min(due, threading.TIMEOUT_MAX), self._commit_when_due)
        timer.daemon = True
        timer.name = "dreamgym-buffer-commit"
        self._commit_timer = timer
        timer.start()

    def _commit_when_due(self) -> None:
        with self._lock:
            self._commit_timer = None
            due = self.store.commit_due_in()
            if due is None:
                return  # committed meanwhile, or closed
            if due > 0:  # a commit and newer writes came in between: wait for those
                self._schedule_commit()
                return
            try:
                self.store.commit()
            except DataError as exc:  # e.g. the disk is full: the next commit tries again
                logger.warning("replay buffer interval commit failed: %s", exc)

    def __enter__(self) -> ExperienceReplayBuffer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __len__(self) -> int:
        return sum(self._counts.values())

    def __repr__(self) -> str:
        return f"ExperienceReplayBuffer({self.location!r}, transitions={len(self)}, capacity={self.capacity})"

    def counts(self) -> dict[str, int]:
        """Transitions per source (every source listed, zeros included)."""
        return dict(self._counts)

    # -- embedder and index -------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The embedder of the keys (resolved on first use: loading a model can take seconds)."""
        if self._embedder is None:
            stored = self.store.get_meta("embedder")
            if self._embedder_arg is None and stored is not None:
                try:
                    self._embedder = make_embedder(stored)
                except ConfigurationError as exc:
                    logger.warning("buffer embedder %r unavailable here (%s); using the default", stored, exc)
            if self._embedder is None:
                self._embedder = make_embedder(self._embedder_arg)
        return self._embedder

    def _ensure_index(self) -> PartitionedIndex:
        if self._index is not None:
            return self._index
        embedder = self.embedder
        spec, dim = self.store.get_meta("embedder"), self.store.get_meta("dim")
        if (spec, dim) != (embedder.spec, str(embedder.dim)):
            if self.read_only and self.store.count_table("vectors"):
                raise DataError(
                    f"buffer vectors were made by {spec!r}, not {embedder.spec!r}; open it writable to re-embed"
                )
            if not self.read_only:
                if spec is not None:
                    logger.info(
                        "re-embedding the buffer: its vectors were made by %r, now %r", spec, embedder.spec
                    )
                self.store.clear_vectors()
                self.store.set_meta("embedder", embedder.spec)
                self.store.set_meta("dim", str(embedder.dim))
        index = PartitionedIndex(embedder.dim, **self._index_options)  # type: ignore[arg-type]
        counts: dict[str, int] = dict.fromkeys(SOURCES, 0)
        for ids, domains, sources, vectors in self.store.iter_vectors(embedder.dim):
            self._add_grouped(index, ids, domains, sources, vectors)
            self._seen_id = max(self._seen_id, int(ids[-1]))
            for source in sources:
                counts[source] += 1
        for rows in self.store.iter_unembedded():
            ids = np.array([row[0] for row in rows], dtype=np.int64)
            vectors = embedder.embed([(row[3], row[4]) for row in rows])
            if not self.read_only:
                self.store.put_vectors(ids.tolist(), vectors)
            self._add_grouped(index, ids, [row[1] for row in rows], [row[2] for row in rows], vectors)
            self._seen_id = max(self._seen_id, int(ids.max()))
            for row in rows:
                counts[row[2]] += 1
        if not self.read_only:
            self.store.commit()
        self._counts = counts  # what the index holds (other writers may have added rows since __init__)
        self._index = index
        return index

    def _catch_up(self, index: PartitionedIndex) -> None:
        """Add to the index (and the counts) the rows other writers committed since the last look.

        Writers take turns per transaction, so ids grow in commit order: the rows above the
        highest id seen are exactly the ones this buffer has not indexed yet.
        """
        for ids, domains, sources, vectors in self.store.iter_vectors(self.embedder.dim, after=self._seen_id):
            self._add_grouped(index, ids, domains, sources, vectors)
            self._seen_id = int(ids[-1])
            for source in sources:
                self._counts[source] += 1

    @staticmethod
    def _add_grouped(
        index: PartitionedIndex, ids: np.ndarray, domains: list[str], sources: list[str], vectors: np.ndarray
    ) -> None:
        keys = list(zip(domains, sources, strict=True))
        for key in dict.fromkeys(keys):
            mask = np.fromiter((k == key for k in keys), dtype=bool, count=len(keys))
            index.add(key, ids[mask], vectors[mask])

    # -- writes -------------------------------------------------------------------------------
    def add(
        self,
        task: Task,
        step: Step,
        *,
        source: Source,
        episode_id: str | None = None,
        step_index: int | None = None,
        timestamp: float | None = None,
    ) -> int:
        """Store one step of an episode; return its transition id (the existing one for a repeat).

        ``step_index`` defaults to the next index of ``episode_id`` (a new episode when ``None``).
        """
        if step_index is None:
            step_index = self.store.next_step_index(episode_id) if episode_id is not None else 0
        return self.add_steps(
            task, [step], source=source, episode_id=episode_id, step_indices=[step_index], timestamp=timestamp
        )[0]

    def add_trajectory(
        self, trajectory: Trajectory, *, source: Source | None = None, episode_id: str | None = None
    ) -> list[int]:
        """Store every step of a trajectory (tagged ``source``, default its own); return the ids."""
        return self.add_steps(
            trajectory.task,
            trajectory.steps,
            source=source or trajectory.source,
            episode_id=episode_id,
            policy=trajectory.policy,
            metadata=trajectory.metadata,
        )

    def add_steps(
        self,
        task: Task,
        steps: Sequence[Step],
        *,
        source: Source,
        episode_id: str | None = None,
        step_indices: Sequence[int] | None = None,
        policy: str = "",
        metadata: dict[str, Any] | None = None,
        timestamp: float | None = None,
    ) -> list[int]:
        """Store steps of one episode (embedded together); return their transition ids, in order."""
        if step_indices is not None and len(step_indices) != len(steps):
            raise ConfigurationError(f"got {len(step_indices)} step indices for {len(steps)} steps")
        episode = _Episode(
            task=task,
            steps=list(steps),
            source=_check_source(source),
            episode_id=episode_id or uuid.uuid4().hex,
            indices=list(step_indices) if step_indices is not None else list(range(len(steps))),
            policy=policy,
            metadata=dict(metadata or {}),
            timestamp=time.time() if timestamp is None else timestamp,
        )
        return self._add_episodes([episode])[0]

    def add_trajectories(
        self,
        trajectories: Sequence[Trajectory],
        *,
        source: Source | None = None,
        episode_ids: Sequence[str] | None = None,
    ) -> int:
        """Store many trajectories in one batch (one embedding call); return the new transitions."""
        if episode_ids is not None and len(episode_ids) != len(trajectories):
            raise ConfigurationError(
                f"got {len(episode_ids)} episode ids for {len(trajectories)} trajectories"
            )
        now = time.time()
        episodes = [
            _Episode(
                task=trajectory.task,
                steps=list(trajectory.steps),
                source=_check_source(source or trajectory.source),
                episode_id=episode_ids[i] if episode_ids is not None else uuid.uuid4().hex,
                indices=list(range(len(trajectory.steps))),
                policy=trajectory.policy,
                metadata=dict(trajectory.metadata),
                timestamp=now,
            )
            for i, trajectory in enumerate(trajectories)
        ]
        before = len(self)
        self._add_episodes(episodes)
        return len(self) - before

    def _add_episodes(self, episodes: Sequence[_Episode]) -> list[list[int]]:
        if self.read_only:
            raise ConfigurationError("this replay buffer was opened read-only")
        with self._lock:
            index = self._ensure_index()
            keys = [[content_key(e.task.domain, e.source, step) for step in e.steps] for e in episodes]
            self.store.begin()  # the write lock first: another writer cannot add these keys meanwhile
            self._catch_up(index)  # then other writers' rows, so that the new ids follow them
            known = self.store.find_keys(list(dict.fromkeys(key for row in keys for key in row)))
            new_rows: list[NewTransition] = []
            for episode, episode_keys in zip(episodes, keys, strict=True):
                self.store.put_task(episode.task)
                self.store.put_episode(
                    episode.episode_id,
                    episode.task.id,
                    episode.source,
                    episode.policy,
                    episode.metadata,
                    episode.timestamp,
                )
                for key, step, step_index in zip(episode_keys, episode.steps, episode.indices, strict=True):
                    if key in known:
                        self.duplicates += 1
                        continue
                    known[key] = -1  # a repeat inside this batch is a duplicate too
                    new_rows.append(
                        NewTransition(
                            key,
                            episode.task.domain,
                            episode.source,
                            episode.task.id,
                            episode.episode_id,
                            step_index,
                            step,
                            episode.timestamp,
                        )
                    )
            new_ids = self.store.put_transitions(new_rows)
            known.update((row.key, tid) for row, tid in zip(new_rows, new_ids, strict=True))
            if new_rows:
                self._seen_id = max(self._seen_id, *new_ids)
                vectors = self.embedder.embed([(row.step.state, row.step.action) for row in new_rows])
                self.store.put_vectors(new_ids, vectors)
                self._add_grouped(
                    index,
                    np.array(new_ids, dtype=np.int64),
                    [row.domain for row in new_rows],
                    [row.source for row in new_rows],
                    vectors,
                )
                for row in new_rows:
                    self._counts[row.source] += 1
            ids = [[known[key] for key in episode_keys] for episode_keys in keys]
            self.store.link_steps(
                [
                    (episode.episode_id, step_index, tid)
                    for episode, episode_ids in zip(episodes, ids, strict=True)
                    for step_index, tid in zip(episode.indices, episode_ids, strict=True)
                ]
            )
            self.store.wrote(max(1, sum(len(e.steps) for e in episodes)))
            self._evict_if_full()
            self._schedule_commit()
        return ids

    def _evict_if_full(self) -> None:
        if self.capacity is None or len(self) <= self.capacity:
            return
        want = len(self) - self.capacity + int(self.capacity * self.evict_fraction)
        index = self._index
        for source in EVICTION_ORDER:
            if want <= 0:
                break
            rows = self.store.oldest(source, want)
            if not rows:
                continue
            if source != "synthetic" and not self._warned_protected:
                self._warned_protected = True
                logger.warning(
                    "replay buffer full of %s data: evicting the oldest %s transitions", source, source
                )
            self.store.delete([row[0] for row in rows])
            if index is not None:
                for domain in {row[1] for row in rows}:
                    ids = np.array([row[0] for row in rows if row[1] == domain], dtype=np.int64)
                    index.remove((domain, source), ids)
            self._counts[source] -= len(rows)
            want -= len(rows)
        self.store.commit()

    # -- offline data -------------------------------------------------------------------------
    def load_jsonl(self, path: str | os.PathLike[str], *, source: Source | None = "offline") -> int:
        """Load an offline JSONL file (``dreamgym collect`` output); return the trajectories read.

        Every transition is tagged ``source`` (default ``"offline"``; ``None`` keeps each
        trajectory's own). Loading the same file twice adds nothing: episode ids derive from
        the line content, and transitions are deduplicated.
        """
        count = 0
        batch: list[Trajectory] = []
        for trajectory in iter_trajectories(Path(path)):
            batch.append(trajectory)
            if len(batch) >= LOAD_BATCH_TRAJECTORIES:
                count += self._load_batch(batch, source)
                batch = []
        count += self._load_batch(batch, source)
        self.commit()
        return count

    def _load_batch(self, batch: list[Trajectory], source: Source | None) -> int:
        ids = [
            "traj-" + hashlib.blake2b(t.model_dump_json().encode("utf-8"), digest_size=12).hexdigest()
            for t in batch
        ]
        if batch:
            self.add_trajectories(batch, source=source, episode_ids=ids)
        return len(batch)

    def export_jsonl(self, path: str | os.PathLike[str], *, sources: Sequence[Source] | None = None) -> int:
        """Write the stored episodes as offline JSONL (one Trajectory a line); return how many."""
        count = 0
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(target, "w", encoding="utf-8") as handle:
            for task, source, policy, metadata, steps in self.store.iter_episodes(sources):
                trajectory = Trajectory(
                    task=task, steps=steps, source=_check_source(source), policy=policy, metadata=metadata
                )
                handle.write(trajectory.model_dump_json() + "\n")
                count += 1
        return count

    # -- retrieval ----------------------------------------------------------------------------
    def search(
        self,
        state: str,
        action: str,
        k: int = 4,
        *,
        domain: str | Sequence[str] | None = None,
        sources: Sequence[Source] | None = GROUNDING_SOURCES,
    ) -> list[ReplayHit]:
        """The ``k`` stored transitions whose ``(state, action)`` is most similar, best first.

        ``domain`` and ``sources`` filter exactly (``None``: any). By default only real
        transitions (``offline`` and ``real``) are returned, as the paper grounds on real data.
        """
        return self.search_many([(state, action)], k, domain=domain, sources=sources)[0]

    def search_many(
        self,
        pairs: Sequence[KeyPair],
        k: int = 4,
        *,
        domain: str | Sequence[str] | None = None,
        sources: Sequence[Source] | None = GROUNDING_SOURCES,
    ) -> list[list[ReplayHit]]:
        """:meth:`search` for a batch of keys at once (one embedding call, one index pass)."""
        if k < 0:
            raise ConfigurationError(f"k must be >= 0, got {k}")
        if not pairs:
            return []
        domains = [domain] if isinstance(domain, str) else domain
        with self._lock:
            index = self._ensure_index()
            self._catch_up(index)
            if k == 0 or len(index) == 0:
                return [[] for _ in pairs]
            scores, ids = index.search(self.embedder.embed(pairs), k, domains=domains, sources=sources)
            wanted = [int(i) for i in dict.fromkeys(ids[ids >= 0].tolist())]
            records = {record.id: record for record in self.store.records(wanted)}
        return [
            [
                ReplayHit(records[int(i)], float(s))
                for s, i in zip(row_scores, row_ids, strict=True)
                if int(i) in records
            ]
            for row_scores, row_ids in zip(scores, ids, strict=True)
        ]

    def get(self, transition_id: int) -> ReplayRecord | None:
        """The record of one transition id, or ``None`` when it is not stored."""
        with self._lock:
            found = self.store.records([transition_id])
        return found[0] if found else None

    # -- statistics ---------------------------------------------------------------------------
    def stats(self) -> BufferStats:
        """Sizes by source and domain, episodes, tasks, embedder and index kinds."""
        with self._lock:
            kinds = {
                f"{d}/{s}": kind for (d, s), kind in (self._index.kinds() if self._index else {}).items()
            }
            return BufferStats(
                path=self.location,
                transitions=len(self),
                by_source={source: n for source, n in self._counts.items() if n},
                by_domain=self.store.count_by("domain"),
                episodes=self.store.count_table("episodes"),
                tasks=self.store.count_table("tasks"),
                capacity=self.capacity,
                embedder=self._embedder.spec
                if self._embedder is not None
                else (self.store.get_meta("embedder") or ""),
                file_bytes=self.store.size_bytes(),
                index_kinds=kinds,
            )
