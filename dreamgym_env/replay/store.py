"""SQLite storage of the replay buffer: transitions, their vectors, episodes and tasks.

One file (or ``:memory:``), WAL journal, ``synchronous=NORMAL``: a committed transaction
survives the writing process being killed (SIGKILL), and readers in other processes (``dreamgym
buffer stats``) never block the writer. Writes are batched: the store keeps one transaction open
and commits when ``commit_every`` writes are pending, when the buffer's timer finds the oldest
pending write ``commit_interval_s`` old (:meth:`ReplayStore.commit_due_in`), and on
:meth:`ReplayStore.commit` / :meth:`ReplayStore.close`. (A power cut, unlike a killed process,
may lose the last commits: ``synchronous=NORMAL`` does not sync the WAL at every commit.)

A write transaction takes the file's write lock when it begins (``BEGIN IMMEDIATE``); a second
writer waits up to ``busy_timeout_s`` for it, then gets a :class:`~dreamgym_env.errors.DataError`.
Every SQLite error (locked, damaged file, ...) leaves the store as a ``DataError`` naming the file.
Closing a file checkpoints the WAL, so that the ``-wal`` and ``-shm`` files go away with the last
connection.

Tables::

    meta(key, value)                     embedder spec, vector dimension, schema version
    tasks(id, domain, json)              each Task once
    episodes(id, task_id, source, policy, metadata, created)
    transitions(id, key, domain, source, task_id, episode_id, step_index, state, action,
                next_state, reward, done, action_valid, reasoning, timestamp)
                                         unique transitions; key = hash of the content
    episode_steps(episode_id, step_index, transition_id)
                                         every occurrence, so export restores each episode
    vectors(id, vector)                  float32 embedding of (state, action)
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np

from dreamgym_env.errors import DataError
from dreamgym_env.replay.records import ReplayRecord
from dreamgym_env.types import Step, Task

SCHEMA_VERSION = "1"
DEFAULT_COMMIT_EVERY = 256
DEFAULT_COMMIT_INTERVAL_S = 1.0
DEFAULT_BUSY_TIMEOUT_S = 10.0
"""How long a writer waits for another process's write transaction on the same file."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, domain TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    id TEXT PRIMARY KEY, task_id TEXT NOT NULL, source TEXT NOT NULL, policy TEXT NOT NULL,
    metadata TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key BLOB NOT NULL UNIQUE,
    domain TEXT NOT NULL, source TEXT NOT NULL, task_id TEXT NOT NULL,
    episode_id TEXT NOT NULL, step_index INTEGER NOT NULL,
    state TEXT NOT NULL, action TEXT NOT NULL, next_state TEXT NOT NULL,
    reward REAL NOT NULL, done INTEGER NOT NULL, action_valid INTEGER NOT NULL,
    reasoning TEXT NOT NULL, timestamp REAL NOT NULL);
CREATE INDEX IF NOT EXISTS transitions_by_source ON transitions (source, id);
CREATE TABLE IF NOT EXISTS episode_steps (
    episode_id TEXT NOT NULL, step_index INTEGER NOT NULL, transition_id INTEGER NOT NULL,
    PRIMARY KEY (episode_id, step_index)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS episode_steps_by_transition ON episode_steps (transition_id);
CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, vector BLOB NOT NULL);
"""

_RECORD_COLUMNS = (
    "t.id, t.domain, t.source, t.task_id, t.episode_id, t.step_index, t.state, t.action, t.next_state, "
    "t.reward, t.done, t.action_valid, t.reasoning, t.timestamp, "
    "COALESCE(json_extract(k.json, '$.instruction'), '')"
)
_SQL_CHUNK = 500
"""Ids per ``IN (...)`` clause (SQLite allows 999 parameters in old builds)."""


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


def _sqlite_errors_as_data_errors(cls: C) -> C:
    """Wrap every public method of ``cls`` (generators included): SQLite errors leave as DataError.

    The error names the file (``self._data_error``); a method added later is covered too.
    """

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.isgeneratorfunction(method):

            @functools.wraps(method)
            def generator(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
                try:
                    yield from method(self, *args, **kwargs)
                except sqlite3.Error as exc:
                    raise self._data_error(exc) from exc

            return generator

        @functools.wraps(method)
        def function(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except sqlite3.Error as exc:
                raise self._data_error(exc) from exc

        return function

    for name, value in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(value):
            setattr(cls, name, wrap(value))
    return cls


@_sqlite_errors_as_data_errors
class ReplayStore:
    """The SQLite side of :class:`~dreamgym_env.replay.buffer.ExperienceReplayBuffer`.

    Args:
        path: a database file (created when missing) or ``None`` for an in-memory database.
        read_only: open an existing file without writing (for statistics while a writer runs).
        commit_every: commit after this many writes.
        commit_interval_s: commit when the oldest uncommitted write is this old (checked at the
            next write, and by the buffer's timer through :meth:`commit_due_in`).
        busy_timeout_s: how long to wait for another writer's transaction before a ``DataError``.

    Not thread-safe by itself: the buffer serialises access with its lock. Every SQLite error
    of a public method is raised as a :class:`~dreamgym_env.errors.DataError` naming the file.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        commit_every: int = DEFAULT_COMMIT_EVERY,
        commit_interval_s: float = DEFAULT_COMMIT_INTERVAL_S,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
    ) -> None:
        self.path = None if path is None else Path(path)
        self.read_only = read_only
        self.commit_every = max(1, commit_every)
        self.commit_interval_s = commit_interval_s
        self.busy_timeout_s = busy_timeout_s
        self._pending = 0
        self._pending_since = 0.0
        self._closed = False
        options: dict[str, Any] = {
            "isolation_level": None,
            "check_same_thread": False,
            "timeout": busy_timeout_s,
        }
        if self.path is not None and self.path.exists():
            self._refuse_empty_file(self.path)
        try:
            if self.path is None:
                self._db = sqlite3.connect(":memory:", **options)
            elif read_only:
                if not self.path.exists():
                    raise DataError(f"replay buffer {str(self.path)!r} does not exist")
                uri = f"file:{self.path.resolve()}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, **options)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(str(self.path), **options)
        except sqlite3.Error as exc:
            raise self._data_error(exc) from exc
        try:
            self._setup()
        except sqlite3.Error as exc:
            self._db.close()
            raise self._data_error(exc) from exc
        except BaseException:
            self._db.close()
            raise

    @staticmethod
    def _refuse_empty_file(path: Path) -> None:
        """A zero-length file is no buffer (SQLite would silently start a new one in it)."""
        wal = Path(f"{path}-wal")
        if path.stat().st_size == 0 and not (wal.exists() and wal.stat().st_size > 0):
            raise DataError(
                f"replay buffer {str(path)!r} is an empty file (0 bytes), not a replay buffer; "
                "delete it to start a new buffer there"
            )

    def _data_error(self, exc: sqlite3.Error) -> DataError:
        """The :class:`DataError` for an SQLite error on this file."""
        where = repr(str(self.path or ":memory:"))
        message = str(exc)
        if "locked" in message or "busy" in message:
            return DataError(
                f"replay buffer {where} is locked by another writer (waited {self.busy_timeout_s:g} s, "
                f"busy_timeout_s): {message}; use one writing process per file"
            )
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(
            exc, sqlite3.OperationalError | sqlite3.IntegrityError
        ):
            return DataError(
                f"replay buffer {where} is damaged or not a replay buffer ({message}); "
                "restore it from a copy or build it again"
            )
        return DataError(f"replay buffer {where}: {type(exc).__name__}: {message}")

    def _setup(self) -> None:
        if not self.read_only:
            if self.path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            stored = self.get_meta("schema")
            if stored is None:
                self.set_meta("schema", SCHEMA_VERSION)
            elif stored != SCHEMA_VERSION:
                raise DataError(f"replay buffer schema {stored!r} is not the supported {SCHEMA_VERSION!r}")
        else:
            tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "transitions" not in tables:
                raise DataError(f"{str(self.path)!r} is not a replay buffer (no transitions table)")

    # -- transactions -------------------------------------------------------------------------
    def begin(self) -> None:
        """Start the write transaction now (taking the file's write lock) unless one is open.

        Reads that decide what to write (e.g. which keys are already stored) belong after this.
        """
        if not self._db.in_transaction:
            self._db.execute("BEGIN IMMEDIATE")
            self._pending_since = time.monotonic()

    def _write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        self.begin()
        return self._db.execute(sql, params)

    def _write_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.begin()
            self._db.executemany(sql, rows)

    def wrote(self, count: int = 1) -> None:
        """Count writes and commit when the batch is full or old enough."""
        self._pending += count
        if self._pending >= self.commit_every or (
            self._pending and time.monotonic() - self._pending_since >= self.commit_interval_s
        ):
            self.commit()

    def commit_due_in(self) -> float | None:
        """Seconds until the pending writes are due for their interval commit (``None``: none pending)."""
        if self._closed or not self._db.in_transaction:
            return None
        return max(0.0, self._pending_since + self.commit_interval_s - time.monotonic())

    def commit(self) -> None:
        """Commit everything written so far (durable against a process kill once this returns)."""
        if self._closed:
            return
        if self._db.in_transaction:
            self._db.execute("COMMIT")
        self._pending = 0

    def close(self) -> None:
        """Commit, checkpoint the WAL and close the database (the ``-wal``/``-shm`` files go with it)."""
        if self._closed:
            return
        try:
            self.commit()
            if self.path is not None and not self.read_only:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            self._closed = True
            self._db.close()
        if self.path is not None and self.read_only:
            self._remove_wal_files(self.path)

    @staticmethod
    def _remove_wal_files(path: Path) -> None:
        """Let SQLite remove the ``-wal``/``-shm`` files a read-only connection leaves behind.

        A read-only connection cannot delete them; a brief writable one can, and SQLite does so
        on its close only when it is the file's last connection (never under a running writer).
        """
        if not (Path(f"{path}-wal").exists() or Path(f"{path}-shm").exists()) or not os.access(path, os.W_OK):
            return
        try:
            cleaner = sqlite3.connect(str(path), timeout=0)
            try:
                cleaner.execute("PRAGMA schema_version").fetchone()
            finally:
                cleaner.close()
        except sqlite3.Error:
            pass  # another connection holds the file: its last close will clean up

    # -- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        self._write("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    # -- writes -------------------------------------------------------------------------------
    def put_task(self, task: Task) -> None:
        self._write(
            "INSERT OR IGNORE INTO tasks (id, domain, json) VALUES (?, ?, ?)",
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
            "INSERT OR IGNORE INTO episodes (id, task_id, source, policy, metadata, created) VALUES (?, ?, ?, ?, ?, ?)",
            (episode_id, task_id, source, policy, json.dumps(metadata, ensure_ascii=False), created),
        )

    def find_keys(self, keys: Sequence[bytes]) -> dict[bytes, int]:
        """The ids of transitions already stored under these content keys."""
        found: dict[bytes, int] = {}
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start : start + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(self._db.execute(f"SELECT key, id FROM transitions WHERE key IN ({marks})", chunk))
        return {bytes(key): value for key, value in found.items()}

    def put_transitions(self, rows: Sequence[NewTransition]) -> list[int]:
        """Insert new transitions; return their ids, in order."""
        if not rows:
            return []
        before = self._last_id()
        self._write_many(
            "INSERT INTO transitions (key, domain, source, task_id, episode_id, step_index, state, action, "
            "next_state, reward, done, action_valid, reasoning, timestamp) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
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
                for row in rows
            ],
        )
        after = self._last_id()
        if after - before != len(rows):  # AUTOINCREMENT ids of one connection's batch are consecutive
            raise DataError(f"replay buffer ids jumped from {before} to {after} inserting {len(rows)} rows")
        return list(range(before + 1, after + 1))

    def _last_id(self) -> int:
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'transitions'").fetchone()
        return 0 if row is None else int(row[0])

    def link_steps(self, rows: Sequence[tuple[str, int, int]]) -> None:
        """Record ``(episode_id, step_index, transition_id)`` occurrences (repeats ignored)."""
        self._write_many(
            "INSERT OR IGNORE INTO episode_steps (episode_id, step_index, transition_id) VALUES (?, ?, ?)",
            rows,
        )

    def put_vectors(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        rows = [
            (int(i), np.ascontiguousarray(v, dtype=np.float32).tobytes())
            for i, v in zip(ids, vectors, strict=True)
        ]
        self._write_many("INSERT OR REPLACE INTO vectors (id, vector) VALUES (?, ?)", rows)

    def clear_vectors(self) -> None:
        self._write("DELETE FROM vectors")

    def oldest(self, source: str, limit: int) -> list[tuple[int, str]]:
        """The ``(id, domain)`` of the ``limit`` oldest transitions of ``source``."""
        query = "SELECT id, domain FROM transitions WHERE source = ? ORDER BY id LIMIT ?"
        return list(self._db.execute(query, (source, limit)))

    def delete(self, ids: Sequence[int]) -> None:
        """Delete transitions with their vectors, occurrences, and episodes left empty."""
        for start in range(0, len(ids), _SQL_CHUNK):
            chunk = [int(i) for i in ids[start : start + _SQL_CHUNK]]
            marks = ",".join("?" * len(chunk))
            episodes = [
                row[0]
                for row in self._db.execute(
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
        return int(self._db.execute(query, (episode_id,)).fetchone()[0])

    def records(self, ids: Sequence[int]) -> list[ReplayRecord]:
        """The records of ``ids``, in that order (ids no longer stored are left out)."""
        by_id: dict[int, ReplayRecord] = {}
        for start in range(0, len(ids), _SQL_CHUNK):
            chunk = [int(i) for i in ids[start : start + _SQL_CHUNK]]
            marks = ",".join("?" * len(chunk))
            query = (
                f"SELECT {_RECORD_COLUMNS} FROM transitions t LEFT JOIN tasks k ON k.id = t.task_id "
                f"WHERE t.id IN ({marks})"
            )
            by_id.update((row[0], _record(row)) for row in self._db.execute(query, chunk))
        return [by_id[int(i)] for i in ids if int(i) in by_id]

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM transitions").fetchone()[0])

    def count_by(self, column: str) -> dict[str, int]:
        if column not in ("source", "domain"):
            raise ValueError(column)
        query = f"SELECT {column}, COUNT(*) FROM transitions GROUP BY {column}"
        return {str(key): int(n) for key, n in self._db.execute(query)}

    def count_table(self, table: str) -> int:
        if table not in ("episodes", "tasks", "vectors"):
            raise ValueError(table)
        return int(self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def iter_vectors(
        self, dim: int, chunk: int = 50_000
    ) -> Iterator[tuple[np.ndarray, list[str], list[str], np.ndarray]]:
        """Yield ``(ids, domains, sources, vectors)`` of stored vectors, in id order, a chunk at a time."""
        last = -1
        while True:
            rows = self._db.execute(
                "SELECT t.id, t.domain, t.source, v.vector FROM transitions t JOIN vectors v ON v.id = t.id "
                "WHERE t.id > ? ORDER BY t.id LIMIT ?",
                (last, chunk),
            ).fetchall()
            if not rows:
                return
            ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            blob = b"".join(row[3] for row in rows)
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
            rows = self._db.execute(
                "SELECT t.id, t.domain, t.source, t.state, t.action FROM transitions t "
                "LEFT JOIN vectors v ON v.id = t.id WHERE v.id IS NULL AND t.id > ? ORDER BY t.id LIMIT ?",
                (last, chunk),
            ).fetchall()
            if not rows:
                return
            yield rows
            last = rows[-1][0]

    def iter_episodes(
        self, sources: Sequence[str] | None = None
    ) -> Iterator[tuple[Task, str, str, dict[str, Any], list[Step]]]:
        """Yield ``(task, source, policy, metadata, steps)`` of each stored episode, oldest first."""
        query = "SELECT e.id, e.source, e.policy, e.metadata, k.json FROM episodes e JOIN tasks k ON k.id = e.task_id"
        params: list[Any] = []
        if sources is not None:
            query += f" WHERE e.source IN ({','.join('?' * len(sources))})"
            params = list(sources)
        query += " ORDER BY e.created, e.rowid"
        reader = self._db.cursor()
        for episode_id, source, policy, metadata, task_json in reader.execute(query, params):
            rows = self._db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM episode_steps s JOIN transitions t ON t.id = s.transition_id "
                "LEFT JOIN tasks k ON k.id = t.task_id WHERE s.episode_id = ? ORDER BY s.step_index",
                (episode_id,),
            ).fetchall()
            if rows:
                steps = [_record(row).to_step() for row in rows]
                yield Task.model_validate_json(task_json), source, policy, json.loads(metadata), steps
