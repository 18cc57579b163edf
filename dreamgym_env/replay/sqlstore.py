"""The contract of the replay buffer's storage, and the SQL both databases share.

:class:`SQLReplayStore` holds every query of the buffer (tasks, episodes, transitions, their
vectors, eviction, statistics), written once in the SQL that SQLite and PostgreSQL both speak
(``?`` placeholders, ``INSERT ... ON CONFLICT``). A database subclass overrides the small set of
hooks below and nothing else:

===========================  ====================================================================
hook                         what it does
===========================  ====================================================================
``_execute``                 run one statement, return a cursor (iterable rows, ``fetchone``)
``_executemany``             run one statement for many parameter rows
``_in_transaction``          whether a write transaction is open
``_begin_transaction``       open one, taking the buffer's write lock (one writer at a time)
``_insert_transitions``      insert transitions, return their ids
``_data_error``              the :class:`~dreamgym_env.errors.DataError` for a database error
``_close_connection``        close the connection (after the final commit)
``size_bytes``               the space the buffer takes
===========================  ====================================================================

Implementations: :class:`~dreamgym_env.replay.sqlite.ReplayStore` (SQLite, one file or memory)
and :class:`~dreamgym_env.replay.postgres.PostgresReplayStore` (a PostgreSQL database shared
by writers on several hosts); :func:`~dreamgym_env.replay.sqlite.open_store` picks one.
"""

from __future__ import annotations

import functools
import inspect
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, TypedDict, TypeVar

import numpy as np

from dreamgym_env.errors import DataError
from dreamgym_env.replay.records import ReplayRecord
from dreamgym_env.types import Step, Task

SCHEMA_VERSION = "1"
DEFAULT_COMMIT_EVERY = 256
DEFAULT_COMMIT_INTERVAL_S = 1.0
DEFAULT_BUSY_TIMEOUT_S = 10.0
"""How long a writer waits for another process's write transaction on the same buffer."""
TABLES = ("meta", "tasks", "episodes", "transitions", "episode_steps", "vectors")
_SQL_CHUNK = 500
"""Ids per ``IN (...)`` clause (SQLite allows 999 parameters in old builds)."""


class StoreSettings(TypedDict, total=False):
    """How a store opens and batches its writes: the keywords of :class:`SQLReplayStore` (defaults there).

    Every store and :func:`~dreamgym_env.replay.sqlite.open_store` take them and pass them on.
    """

    read_only: bool
    """Read an existing buffer without writing (statistics while a writer runs)."""
    commit_every: int
    """Commit after this many writes."""
    commit_interval_s: float
    """Commit when the oldest uncommitted write is this old (checked at the next write, and by
    the buffer's timer through :meth:`SQLReplayStore.commit_due_in`)."""
    busy_timeout_s: float
    """How long to wait for another writer's transaction (PostgreSQL: and for the connection)
    before a :class:`~dreamgym_env.errors.DataError`."""


class NewTransition(NamedTuple):
    """A transition to insert: its content key, where it belongs, and the step itself."""

    key: bytes
    domain: str
    source: str
    task_id: str
    episode_id: str
    step_index: int
    step: Step
    timestamp: float


def transition_row(row: NewTransition) -> tuple[Any, ...]:
    """The column values of ``row``, in the order of :data:`TRANSITION_COLUMNS`."""
    return (
        row.key,
        row.domain,
        row.source,
        row.task_id,
        row.episode_id,
        row.step_index,
        row.step.state,
        row.step.action,
        row.step.next_state,
        float(row.step.reward),
        int(row.step.done),
        int(row.step.action_valid),
        row.step.reasoning,
        row.timestamp,
    )


TRANSITION_COLUMNS = (
    "key, domain, source, task_id, episode_id, step_index, state, action, next_state, reward, done, "
    "action_valid, reasoning, timestamp"
)


def _record(row: Sequence[Any]) -> ReplayRecord:
    return ReplayRecord(
        id=row[0],
        domain=row[1],
        source=row[2],
        task_id=row[3],
        episode_id=row[4],
        step_index=row[5],
        state=row[6],
        action=row[7],
        next_state=row[8],
        reward=row[9],
        done=bool(row[10]),
        action_valid=bool(row[11]),
        reasoning=row[12],
        timestamp=row[13],
        task_instruction=row[14],
    )


C = TypeVar("C", bound=type)


def database_errors_as_data_errors(error: type[Exception]) -> Callable[[C], C]:
    """A class decorator: ``error`` raised by any public method (generators too) leaves as DataError.

    The methods a class inherits are covered as well as its own, and so is a method added
    later; the :class:`~dreamgym_env.errors.DataError` comes from ``self._data_error`` (it
    names the buffer) and is raised ``from`` the database's error.
    """

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.isgeneratorfunction(method):

            @functools.wraps(method)
            def generator(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
                try:
                    yield from method(self, *args, **kwargs)
                except error as exc:
                    raise self._data_error(exc) from exc

            return generator

        @functools.wraps(method)
        def function(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except error as exc:
                raise self._data_error(exc) from exc

        return function

    def decorate(cls: C) -> C:
        for name, value in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith("_"):
                setattr(cls, name, wrap(value))
        return cls

    return decorate


class SQLReplayStore(ABC):
    """The storage side of :class:`~dreamgym_env.replay.buffer.ExperienceReplayBuffer`.

    Writes are batched: the store keeps one write transaction open and commits when
    ``commit_every`` writes are pending, when the buffer's timer finds the oldest pending write
    ``commit_interval_s`` old (:meth:`commit_due_in`), and on :meth:`commit` / :meth:`close`.
    A write transaction holds the buffer's write lock from :meth:`begin` to its commit, so
    writers in several processes take turns (ids grow in commit order) and a second writer
    waits up to ``busy_timeout_s`` before a :class:`~dreamgym_env.errors.DataError`.

    Not thread-safe by itself: the buffer serialises access with its lock.

    Attributes:
        path: the SQLite file, or ``None`` (in memory, or not a file).
        location: where the buffer lives, for messages (never with a password).
    """

    _instruction_sql: ClassVar[str]
    """The SQL expression of a task's instruction from its JSON (``k.json``)."""
    _episode_order: ClassVar[str]
    """The ``ORDER BY`` of episodes: oldest first, then in insertion order."""

    path: Path | None
    location: str

    def __init__(
        self,
        *,
        read_only: bool = False,
        commit_every: int = DEFAULT_COMMIT_EVERY,
        commit_interval_s: float = DEFAULT_COMMIT_INTERVAL_S,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ) -> None:
        self.read_only = read_only
        self.commit_every = max(1, commit_every)
        self.commit_interval_s = commit_interval_s
        self.busy_timeout_s = busy_timeout_s
        self._pending = 0
        self._pending_since = 0.0
        self._closed = False

    # -- the hooks of a database --------------------------------------------------------------
    @abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement (``?`` placeholders); return its cursor."""

    @abstractmethod
    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each parameter row."""

    @abstractmethod
    def _in_transaction(self) -> bool:
        """Whether a write transaction is open."""

    @abstractmethod
    def _begin_transaction(self) -> None:
        """Open a write transaction holding the buffer's write lock (waiting ``busy_timeout_s``)."""

    @abstractmethod
    def _insert_transitions(self, rows: Sequence[NewTransition]) -> list[int]:
        """Insert ``rows`` (inside the write transaction); return their ids, in order."""

    @abstractmethod
    def _data_error(self, exc: Exception) -> DataError:
        """The :class:`DataError` for a database error of this buffer."""

    @abstractmethod
    def _close_connection(self) -> None:
        """Close the connection (pending writes are committed already)."""

    @abstractmethod
    def size_bytes(self) -> int:
        """The space the buffer takes on disk, in bytes (0 in memory)."""

    # -- shared helpers -----------------------------------------------------------------------
    def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return list(self._execute(sql, params).fetchall())

    def _check_schema_version(self) -> None:
        stored = self.get_meta("schema")
        if stored is None:
            self.set_meta("schema", SCHEMA_VERSION)
        elif stored != SCHEMA_VERSION:
            raise DataError(f"replay buffer schema {stored!r} is not the supported {SCHEMA_VERSION!r}")

    def _record_columns(self) -> str:
        return (
            "t.id, t.domain, t.source, t.task_id, t.episode_id, t.step_index, t.state, t.action, "
            "t.next_state, t.reward, t.done, t.action_valid, t.reasoning, t.timestamp, "
            + self._instruction_sql
        )

    # -- transactions -------------------------------------------------------------------------
    def begin(self) -> None:
        """Start the write transaction now (taking the write lock) unless one is open.

        Reads that decide what to write (e.g. which keys are already stored) belong after this.
        """
        if not self._in_transaction():
            self._begin_transaction()
            self._pending_since = time.monotonic()

    def _write(self, sql: str, params: Sequence[Any] = ()) -> Any:
        self.begin()
        return self._execute(sql, params)

    def _write_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.begin()
            self._executemany(sql, rows)

    def wrote(self, count: int = 1) -> None:
        """Count writes and commit when the batch is full or old enough."""
        self._pending += count
        if self._pending >= self.commit_every or (
            self._pending and time.monotonic() - self._pending_since >= self.commit_interval_s
        ):
            self.commit()

    def commit_due_in(self) -> float | None:
        """Seconds until the pending writes are due for their interval commit (``None``: none pending)."""
        if self._closed or not self._in_transaction():
            return None
        return max(0.0, self._pending_since + self.commit_interval_s - time.monotonic())

    def commit(self) -> None:
        """Commit everything written so far (durable against a process kill once this returns)."""
        if self._closed:
            return
        if self._in_transaction():
            self._execute("COMMIT")
        self._pending = 0

    def close(self) -> None:
        """Commit and close the connection (a second call does nothing)."""
        if self._closed:
            return
        try:
            self.commit()
        finally:
            self._closed = True
            self._close_connection()

    # -- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._write(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- writes -------------------------------------------------------------------------------
    def put_task(self, task: Task) -> None:
        self._write(
            "INSERT INTO tasks (id, domain, json) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (task.id, task.domain, task.model_dump_json()),
        )

    def put_episode(
        self,
        episode_id: str,
        task_id: str,
        source: str,
        policy: str,
        metadata: dict[str, Any],
        created: float,
    ) -> None:
        self._write(
            "INSERT INTO episodes (id, task_id, source, policy, metadata, created) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (episode_id, task_id, source, policy, json.dumps(metadata, ensure_ascii=False), created),
        )

    def find_keys(self, keys: Sequence[bytes]) -> dict[bytes, int]:
        """The ids of transitions already stored under these content keys."""
        found: dict[bytes, int] = {}
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start : start + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, id FROM transitions WHERE key IN ({marks})"
            found.update((bytes(key), int(tid)) for key, tid in self._execute(query, chunk))
        return found

    def put_transitions(self, rows: Sequence[NewTransition]) -> list[int]:
        """Insert new transitions; return their ids, in order."""
        if not rows:
            return []
        self.begin()
        return self._insert_transitions(rows)

    def link_steps(self, rows: Sequence[tuple[str, int, int]]) -> None:
        """Record ``(episode_id, step_index, transition_id)`` occurrences (repeats ignored)."""
        self._write_many(
            "INSERT INTO episode_steps (episode_id, step_index, transition_id) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            rows,
        )

    def put_vectors(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        rows = [
            (int(i), np.ascontiguousarray(v, dtype=np.float32).tobytes())
            for i, v in zip(ids, vectors, strict=True)
        ]
        self._write_many(
            "INSERT INTO vectors (id, vector) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET vector = excluded.vector",
            rows,
        )

    def clear_vectors(self) -> None:
        self._write("DELETE FROM vectors")

    def oldest(self, source: str, limit: int) -> list[tuple[int, str]]:
        """The ``(id, domain)`` of the ``limit`` oldest transitions of ``source``."""
        query = "SELECT id, domain FROM transitions WHERE source = ? ORDER BY id LIMIT ?"
        return [(int(tid), str(domain)) for tid, domain in self._execute(query, (source, limit))]

    def delete(self, ids: Sequence[int]) -> None:
        """Delete transitions with their vectors, occurrences, and episodes left empty."""
        for start in range(0, len(ids), _SQL_CHUNK):
            chunk = [int(i) for i in ids[start : start + _SQL_CHUNK]]
            marks = ",".join("?" * len(chunk))
            episodes = [
                row[0]
                for row in self._fetchall(
                    f"SELECT DISTINCT episode_id FROM episode_steps WHERE transition_id IN ({marks})", chunk
                )
            ]
            self._write(f"DELETE FROM transitions WHERE id IN ({marks})", chunk)
            self._write(f"DELETE FROM vectors WHERE id IN ({marks})", chunk)
            self._write(f"DELETE FROM episode_steps WHERE transition_id IN ({marks})", chunk)
            for episode in episodes:
                self._write(
                    "DELETE FROM episodes WHERE id = ? AND NOT EXISTS "
                    "(SELECT 1 FROM episode_steps WHERE episode_id = ?)",
                    (episode, episode),
                )

    # -- reads --------------------------------------------------------------------------------
    def next_step_index(self, episode_id: str) -> int:
        """The step index after the last one recorded for ``episode_id`` (0 for a new episode)."""
        query = "SELECT COALESCE(MAX(step_index) + 1, 0) FROM episode_steps WHERE episode_id = ?"
        return int(self._execute(query, (episode_id,)).fetchone()[0])

    def records(self, ids: Sequence[int]) -> list[ReplayRecord]:
        """The records of ``ids``, in that order (ids no longer stored are left out)."""
        by_id: dict[int, ReplayRecord] = {}
        for start in range(0, len(ids), _SQL_CHUNK):
            chunk = [int(i) for i in ids[start : start + _SQL_CHUNK]]
            marks = ",".join("?" * len(chunk))
            query = (
                f"SELECT {self._record_columns()} FROM transitions t LEFT JOIN tasks k ON k.id = t.task_id "
                f"WHERE t.id IN ({marks})"
            )
            by_id.update((row[0], _record(row)) for row in self._execute(query, chunk))
        return [by_id[int(i)] for i in ids if int(i) in by_id]

    def count(self) -> int:
        return int(self._execute("SELECT COUNT(*) FROM transitions").fetchone()[0])

    def count_by(self, column: str) -> dict[str, int]:
        if column not in ("source", "domain"):
            raise ValueError(column)
        query = f"SELECT {column}, COUNT(*) FROM transitions GROUP BY {column}"
        return {str(key): int(n) for key, n in self._execute(query)}

    def count_table(self, table: str) -> int:
        if table not in ("episodes", "tasks", "vectors"):
            raise ValueError(table)
        return int(self._execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def iter_vectors(
        self, dim: int, chunk: int = 50_000, *, after: int = -1
    ) -> Iterator[tuple[np.ndarray, list[str], list[str], np.ndarray]]:
        """Yield ``(ids, domains, sources, vectors)`` of stored vectors with ids above ``after``.

        In id order, a chunk at a time.
        """
        last = after
        while True:
            rows = self._fetchall(
                "SELECT t.id, t.domain, t.source, v.vector FROM transitions t JOIN vectors v ON v.id = t.id "
                "WHERE t.id > ? ORDER BY t.id LIMIT ?",
                (last, chunk),
            )
            if not rows:
                return
            ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            blob = b"".join(bytes(row[3]) for row in rows)
            if len(blob) != len(rows) * dim * 4:
                raise DataError(
                    f"replay buffer vectors are not of dimension {dim}; rebuild the buffer's vectors"
                )
            vectors = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), dim)
            yield ids, [row[1] for row in rows], [row[2] for row in rows], vectors
            last = int(ids[-1])

    def iter_unembedded(self, chunk: int = 2_000) -> Iterator[list[tuple[int, str, str, str, str]]]:
        """Yield ``(id, domain, source, state, action)`` of transitions without a vector, in chunks."""
        last = -1
        while True:
            rows = self._fetchall(
                "SELECT t.id, t.domain, t.source, t.state, t.action FROM transitions t "
                "LEFT JOIN vectors v ON v.id = t.id WHERE v.id IS NULL AND t.id > ? ORDER BY t.id LIMIT ?",
                (last, chunk),
            )
            if not rows:
                return
            yield [tuple(row) for row in rows]
            last = rows[-1][0]

    def iter_episodes(
        self, sources: Sequence[str] | None = None
    ) -> Iterator[tuple[Task, str, str, dict[str, Any], list[Step]]]:
        """Yield ``(task, source, policy, metadata, steps)`` of each stored episode, oldest first."""
        query = "SELECT e.id, e.source, e.policy, e.metadata, k.json FROM episodes e JOIN tasks k ON k.id = e.task_id"
        params: list[Any] = []
        if sources is not None and not sources:
            return
        if sources is not None:
            query += f" WHERE e.source IN ({','.join('?' * len(sources))})"
            params = list(sources)
        query += f" ORDER BY {self._episode_order}"
        for episode_id, source, policy, metadata, task_json in self._execute(query, params):
            rows = self._fetchall(
                f"SELECT {self._record_columns()} FROM episode_steps s "
                "JOIN transitions t ON t.id = s.transition_id "
                "LEFT JOIN tasks k ON k.id = t.task_id WHERE s.episode_id = ? ORDER BY s.step_index",
                (episode_id,),
            )
            if rows:
                steps = [_record(row).to_step() for row in rows]
                yield Task.model_validate_json(task_json), source, policy, json.loads(metadata), steps
