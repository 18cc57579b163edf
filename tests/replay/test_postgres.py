"""What only the PostgreSQL buffer has: URLs, masked passwords, schemas, server errors."""

from __future__ import annotations

import logging
import traceback
from urllib.parse import urlsplit, urlunsplit

import pytest

from dreamgym_env.errors import DataError
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.replay.sqlite import ReplayStore, is_postgres_url, open_store
from dreamgym_env.types import Step, Task

PASSWORD = "pw-Zq81sEcret"


def test_postgres_urls_are_recognised_and_paths_stay_sqlite(tmp_path):
    assert is_postgres_url("postgresql://u@h/db") and is_postgres_url("postgres://h/db")
    assert not any(is_postgres_url(x) for x in ("buffer.db", tmp_path / "postgresql:", None, "sqlite:///x"))
    store = open_store(tmp_path / "b.db")
    assert isinstance(store, ReplayStore) and store.location == str(tmp_path / "b.db")
    store.close()


def test_redact_url_masks_the_password_wherever_it_is():
    pytest.importorskip("psycopg")
    from dreamgym_env.replay.postgres import password_of, redact_url

    for url in (
        f"postgresql://rl:{PASSWORD}@db.example:5432/replay?sslmode=require",
        f"postgresql://rl@db.example/replay?password={PASSWORD}&sslmode=require",
    ):
        assert password_of(url) == PASSWORD
        masked = redact_url(url)
        assert (
            PASSWORD not in masked
            and "***" in masked
            and "db.example" in masked
            and "sslmode=require" in masked
        )
    assert redact_url("postgresql://rl@db/replay") == "postgresql://rl@db/replay"
    assert password_of("postgresql://rl@db/replay") is None


def _with_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.username:
        netloc = f"{parts.username}:{PASSWORD}@{parts.netloc.rpartition('@')[2]}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    separator = "&" if parts.query else "?"
    return f"{url}{separator}password={PASSWORD}"


def test_the_password_appears_in_no_repr_log_or_error(postgres_db, caplog):
    db = postgres_db
    url = _with_password(str(db.location("secret")))  # the test server trusts: the password goes unchecked
    caplog.set_level(logging.DEBUG)
    with ExperienceReplayBuffer(url, embedder=HashedEmbedder()) as buffer:
        buffer.add(
            Task(id="t", domain="webshop", instruction="i", initial_state="s"),
            Step(state="s", action="a", next_state="n"),
            source="real",
        )
        shown = [repr(buffer), repr(buffer.store), buffer.location, buffer.stats().format()]
        assert all(PASSWORD not in text for text in shown) and "***" in buffer.location
        with db.write_lock_held(url), pytest.raises(DataError) as caught:
            buffer.store.busy_timeout_s = 0.1
            buffer.store._execute("SET lock_timeout = '100ms'")
            buffer.add(
                Task(id="t", domain="webshop", instruction="i", initial_state="s"),
                Step(state="s2", action="a", next_state="n"),
                source="real",
            )
        assert "locked by another writer" in str(caught.value)
        assert PASSWORD not in "".join(traceback.format_exception(caught.value))
    unreachable = _with_password("postgresql://dreamgym@/replay?host=/nonexistent-dreamgym-socket-dir")
    with pytest.raises(DataError, match="cannot use the database") as caught:
        ExperienceReplayBuffer(unreachable, embedder=HashedEmbedder())
    assert PASSWORD not in "".join(traceback.format_exception(caught.value))
    assert all(PASSWORD not in record.getMessage() for record in caplog.records)


def test_an_empty_schema_is_no_buffer_to_read(postgres_db):
    with pytest.raises(DataError, match="not a replay buffer"):
        ExperienceReplayBuffer(postgres_db.location("empty"), read_only=True)


def test_buffers_in_two_schemas_of_one_database_stay_apart(postgres_db):
    db = postgres_db
    task = Task(id="t", domain="webshop", instruction="i", initial_state="s")
    with (
        ExperienceReplayBuffer(db.location("one"), embedder=HashedEmbedder()) as one,
        ExperienceReplayBuffer(db.location("two"), embedder=HashedEmbedder()) as two,
    ):
        one.add(task, Step(state="one", action="a", next_state="n"), source="real")  # holds one's lock
        two.add(task, Step(state="two", action="a", next_state="n"), source="real")  # not two's
        one.commit()
        two.commit()
        assert db.stored(one) == {"one"} and db.stored(two) == {"two"}
