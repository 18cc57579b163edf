"""SQLite storage of the replay buffer: transitions, their vectors, episodes and tasks.

The default store (:func:`open_store` picks PostgreSQL for a ``postgresql://`` URL, see
:mod:`dreamgym_env.replay.postgres`); the queries live in :class:`~dreamgym_env.replay.sqlstore.SQLReplayStore`.

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

import importlib.util
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.replay.sqlstore import (
    DEFAULT_BUSY_TIMEOUT_S,
    DEFAULT_COMMIT_EVERY,
    DEFAULT_COMMIT_INTERVAL_S,
    SCHEMA_VERSION,
    TRANSITION_COLUMNS,
    NewTransition,
    SQLReplayStore,
    StoreSettings,
    database_errors_as_data_errors,
    transition_row,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_S",
    "DEFAULT_COMMIT_EVERY",
    "DEFAULT_COMMIT_INTERVAL_S",
    "SCHEMA_VERSION",
    "NewTransition",
    "ReplayStore",
    "SQLReplayStore",
    "is_postgres_url",
    "open_store",
]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")

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


def is_postgres_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL database (a ``postgresql://`` or ``postgres://`` URL)."""
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def open_store(
    location: str | os.PathLike[str] | None = None, **settings: Unpack[StoreSettings]
) -> SQLReplayStore:
    """The store of ``location``: PostgreSQL for a ``postgresql://`` URL, else an SQLite file (or memory).

    PostgreSQL needs the ``postgres`` extra (``pip install "dreamgym-env[postgres]"``).
    """
    if is_postgres_url(location):
        if importlib.util.find_spec("psycopg") is None:
            raise ConfigurationError(
                "a PostgreSQL replay buffer needs psycopg 3: pip install 'dreamgym-env[postgres]'"
            )
        from dreamgym_env.replay.postgres import PostgresReplayStore

        return PostgresReplayStore(str(location), **settings)
    return ReplayStore(location, **settings)


@database_errors_as_data_errors(sqlite3.Error)
class ReplayStore(SQLReplayStore):
    """The SQLite side of :class:`~dreamgym_env.replay.buffer.ExperienceReplayBuffer`.

    Args:
        path: a database file (created when missing) or ``None`` for an in-memory database.
        **settings: ``read_only``, ``commit_every``, ``commit_interval_s``, ``busy_timeout_s``
            (:class:`~dreamgym_env.replay.sqlstore.StoreSettings`).

    Not thread-safe by itself: the buffer serialises access with its lock. Every SQLite error
    of a public method is raised as a :class:`~dreamgym_env.errors.DataError` naming the file.
    """

    _instruction_sql = "COALESCE(json_extract(k.json, '$.instruction'), '')"
    _episode_order = "e.created, e.rowid"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        **settings: Unpack[StoreSettings],
    ) -> None:
        super().__init__(**settings)
        self.path = None if path is None else Path(path)
        self.location = str(self.path) if self.path is not None else ":memory:"
        options: dict[str, Any] = {
            "isolation_level": None,
            "check_same_thread": False,
            "timeout": self.busy_timeout_s,
        }
        if self.path is not None and self.path.exists():
            self._refuse_empty_file(self.path)
        try:
            if self.path is None:
                self._db = sqlite3.connect(":memory:", **options)
            elif self.read_only:
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

    def _data_error(self, exc: Exception) -> DataError:
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
            self._check_schema_version()
        else:
            tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "transitions" not in tables:
                raise DataError(f"{str(self.path)!r} is not a replay buffer (no transitions table)")

    # -- the hooks of SQLReplayStore ----------------------------------------------------------
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, params)

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._db.executemany(sql, rows)

    def _in_transaction(self) -> bool:
        return self._db.in_transaction

    def _begin_transaction(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")  # the file's write lock, now

    def _insert_transitions(self, rows: Sequence[NewTransition]) -> list[int]:
        before = self._last_id()
        self._db.executemany(
            f"INSERT INTO transitions ({TRANSITION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [transition_row(row) for row in rows],
        )
        after = self._last_id()
        if after - before != len(rows):  # AUTOINCREMENT ids of one connection's batch are consecutive
            raise DataError(f"replay buffer ids jumped from {before} to {after} inserting {len(rows)} rows")
        return list(range(before + 1, after + 1))

    def _last_id(self) -> int:
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'transitions'").fetchone()
        return 0 if row is None else int(row[0])

    def _close_connection(self) -> None:
        """Checkpoint the WAL and close (the ``-wal``/``-shm`` files go with the last connection)."""
        try:
            if self.path is not None and not self.read_only:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            self._db.close()
        if self.path is not None and self.read_only:
            self._remove_wal_files(self.path)

    def size_bytes(self) -> int:
        """The file and its WAL, in bytes (0 in memory)."""
        if self.path is None:
            return 0
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

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
