from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dreamgym_env.agents.rollouts import collect
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.replay.jsonl import read_trajectories
from dreamgym_env.types import Trajectory


@pytest.fixture(scope="session")
def offline_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Offline WebShop trajectories of the reference env (noisy expert, 60 episodes)."""
    path = tmp_path_factory.mktemp("offline") / "webshop.jsonl"
    collect("webshop", "noisy", 60, path, seed=7, progress=False)
    return path


@pytest.fixture(scope="session")
def offline_trajectories(offline_file: Path) -> list[Trajectory]:
    return read_trajectories(offline_file)


@pytest.fixture
def embedder() -> HashedEmbedder:
    return HashedEmbedder()


POSTGRES_URL_VARIABLE = "DREAMGYM_TEST_POSTGRES_URL"


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The test server's URL (``DREAMGYM_TEST_POSTGRES_URL``; ``.ci/run`` starts a server and sets it).

    Unset: the PostgreSQL tests skip. Set but unreachable: they fail (a server was asked for).
    """
    url = os.environ.get(POSTGRES_URL_VARIABLE)
    if not url:
        pytest.skip(f"no PostgreSQL server: set {POSTGRES_URL_VARIABLE} (.ci/run starts a throwaway one)")
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (the postgres extra)")
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error as exc:
        pytest.fail(f"{POSTGRES_URL_VARIABLE} is set but its server is not reachable: {exc}")
    return url


class Backend:
    """One database for the buffer's tests: fresh buffers, locations and raw reads, per test.

    SQLite: files under the test's ``tmp_path`` (``memory`` buffers in memory). PostgreSQL: a
    schema of its own for each location (``search_path`` in the URL), dropped after the test.
    """

    def __init__(self, name: str, tmp_path: Path, postgres_url: str | None) -> None:
        self.name = name
        self.tmp_path = tmp_path
        self._postgres_url = postgres_url
        self._schemas: dict[str, str] = {}
        self._opened: list[ExperienceReplayBuffer] = []
        self.error_type: type[Exception] = sqlite3.Error
        if postgres_url is not None:
            import psycopg

            self.error_type = psycopg.Error

    @property
    def is_postgres(self) -> bool:
        return self._postgres_url is not None

    def location(self, name: str = "buffer.db") -> str | Path:
        """A place for a buffer, the same one for the same name within a test."""
        if self._postgres_url is None:
            return self.tmp_path / name
        if name not in self._schemas:
            import psycopg

            schema = f"test_{uuid.uuid4().hex[:16]}"
            with psycopg.connect(self._postgres_url, autocommit=True) as connection:
                connection.execute(f"CREATE SCHEMA {schema}")
            self._schemas[name] = schema
        separator = "&" if "?" in self._postgres_url else "?"
        return f"{self._postgres_url}{separator}options=-csearch_path%3D{self._schemas[name]}"

    def memory(self, **kwargs: Any) -> ExperienceReplayBuffer:
        """A fresh buffer with the hashed embedder: in memory (SQLite) or in a new schema."""
        kwargs.setdefault("embedder", HashedEmbedder())
        if self._postgres_url is None:
            return ExperienceReplayBuffer(**kwargs)
        buffer = ExperienceReplayBuffer(self.location(f"memory-{len(self._schemas)}"), **kwargs)
        self._opened.append(buffer)
        return buffer

    @staticmethod
    def stored(buffer: ExperienceReplayBuffer, source: str | None = None) -> set[str]:
        """The states of ``buffer``'s stored transitions (of ``source``), read with SQL."""
        return states(buffer, source)

    def states(self, location: str | Path, source: str | None = None) -> set[str]:
        """The states stored at ``location`` (of ``source``), read by a read-only buffer."""
        with ExperienceReplayBuffer(location, read_only=True) as reader:
            return states(reader, source)

    @contextlib.contextmanager
    def write_lock_held(self, location: str | Path) -> Iterator[Callable[[], None]]:
        """Another connection holds the buffer's write lock; the yielded function releases it."""
        if self._postgres_url is None:
            holder = sqlite3.connect(location, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")  # another writer's open transaction
            try:
                yield lambda: holder.execute("COMMIT")
            finally:
                holder.close()
            return
        import psycopg

        from dreamgym_env.replay.postgres import LOCK_CLASS

        with psycopg.connect(str(location), autocommit=True) as connection:
            connection.execute("BEGIN")
            connection.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))", (LOCK_CLASS,))
            yield lambda: connection.execute("COMMIT")

    def close(self) -> None:
        for buffer in self._opened:
            buffer.close()
        if self._postgres_url is not None and self._schemas:
            import psycopg

            with psycopg.connect(self._postgres_url, autocommit=True) as connection:
                for schema in self._schemas.values():
                    connection.execute(f"DROP SCHEMA {schema} CASCADE")


def states(buffer: ExperienceReplayBuffer, source: str | None = None) -> set[str]:
    """The states of a buffer's stored transitions (of ``source``), read with SQL."""
    if source is None:
        rows = buffer.store._fetchall("SELECT state FROM transitions")
    else:
        rows = buffer.store._fetchall("SELECT state FROM transitions WHERE source = ?", (source,))
    return {row[0] for row in rows}


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Each database the buffer runs on, fresh for the test (PostgreSQL skips without a server)."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    backend = Backend(request.param, tmp_path, url)
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def postgres_db(postgres_url: str, tmp_path: Path) -> Iterator[Backend]:
    """PostgreSQL alone (skips without a server), for what only it has."""
    backend = Backend("postgresql", tmp_path, postgres_url)
    try:
        yield backend
    finally:
        backend.close()
