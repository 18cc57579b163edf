"""The buffer's suite, run on SQLite and on PostgreSQL (the ``db`` fixture; PostgreSQL skips without a server)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.types import Step, Task, Trajectory


def make_task(i: int = 0, domain: str = "webshop") -> Task:
    return Task(
        id=f"{domain}-t{i}", domain=domain, instruction=f"buy thing number {i}", initial_state="start"
    )


def make_step(i: int, *, action: str | None = None) -> Step:
    return Step(
        state=f"page {i} with item B0{i:08d}", action=action or f"click[B0{i:08d}]", next_state=f"item {i}"
    )


def test_stored_key_retrieves_its_own_transition(db, offline_file, offline_trajectories):
    buffer = db.memory()
    assert buffer.load_jsonl(offline_file) == len(offline_trajectories)
    seen: set[tuple[str, str]] = set()
    checked = 0
    for trajectory in offline_trajectories[:20]:
        for step in trajectory.steps:
            if (step.state, step.action) in seen:
                continue  # a key stored twice (another next state) has two exact matches
            seen.add((step.state, step.action))
            top = buffer.search(step.state, step.action, k=1, domain="webshop")[0]
            assert (top.record.state, top.record.action, top.record.next_state) == (
                step.state,
                step.action,
                step.next_state,
            )
            assert top.score == pytest.approx(1.0, abs=1e-5)
            checked += 1
    assert checked > 50


def test_domain_and_source_filters_hold(db):
    buffer = db.memory()
    stored = [("webshop", "offline"), ("webshop", "real"), ("webshop", "synthetic"), ("alfworld", "offline")]
    for i, (domain, source) in enumerate(stored):
        buffer.add_steps(make_task(i, domain), [make_step(j) for j in range(5)], source=source)
    query = make_step(2)
    for domain in ("webshop", "alfworld"):
        for sources in (["offline"], ["real"], ["synthetic"], ["offline", "real"]):
            hits = buffer.search(query.state, query.action, k=20, domain=domain, sources=sources)
            expected = 5 * sum((domain, source) in stored for source in sources)
            assert len(hits) == expected
            assert all(h.record.domain == domain and h.record.source in sources for h in hits)
    default = buffer.search(query.state, query.action, k=20)  # default: real data of any domain
    assert {h.record.source for h in default} == {"offline", "real"}
    everything = buffer.search(query.state, query.action, k=20, sources=None)
    assert len(everything) == 20 and {h.record.source for h in everything} == {"offline", "real", "synthetic"}


def test_exact_repeats_are_stored_once_but_episodes_keep_them(db, tmp_path):
    buffer = db.memory()
    task = make_task()
    steps = [make_step(0), make_step(1), make_step(0)]  # the same transition twice in one episode
    ids = buffer.add_steps(task, steps, source="offline", episode_id="e1")
    assert ids[0] == ids[2] and len(buffer) == 2 and buffer.duplicates == 1
    buffer.add_steps(task, steps, source="offline", episode_id="e2")
    assert len(buffer) == 2 and buffer.duplicates == 4
    buffer.add(task, make_step(0), source="synthetic")  # same content, other source: kept apart
    assert buffer.counts() == {"offline": 2, "real": 0, "synthetic": 1}
    out = tmp_path / "export.jsonl"
    assert buffer.export_jsonl(out, sources=["offline"]) == 2
    for line in out.read_text().splitlines():
        assert [s.action for s in Trajectory.model_validate_json(line).steps] == [s.action for s in steps]


def test_load_export_round_trip(db, offline_file, offline_trajectories, tmp_path):
    buffer = db.memory()
    buffer.load_jsonl(offline_file, source=None)
    assert buffer.load_jsonl(offline_file, source=None) == len(offline_trajectories)  # idempotent
    assert buffer.stats().episodes == len(offline_trajectories)
    out = tmp_path / "again.jsonl"
    assert buffer.export_jsonl(out) == len(offline_trajectories)
    exported = [Trajectory.model_validate_json(line) for line in out.read_text().splitlines()]
    assert exported == offline_trajectories


def test_offline_tag_and_bad_file(db, tmp_path, offline_file):
    buffer = db.memory()
    buffer.load_jsonl(offline_file)
    assert set(buffer.stats().by_source) == {"offline"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(offline_file.read_text().splitlines()[0] + "\n{not json\n")
    with pytest.raises(DataError, match=r"bad.jsonl:2"):
        buffer.load_jsonl(bad)
    with pytest.raises(DataError):
        buffer.load_jsonl(tmp_path / "missing.jsonl")


def test_persistence_survives_reopen(db, offline_file):
    path = db.location()
    with ExperienceReplayBuffer(path, embedder=HashedEmbedder()) as buffer:
        buffer.load_jsonl(offline_file)
        buffer.add(make_task(), make_step(1), source="synthetic", episode_id="live")
        buffer.add(make_task(), make_step(2), source="synthetic", episode_id="live")
        before = buffer.counts()
        probe = buffer.search(make_step(1).state, make_step(1).action, k=3, sources=None)
    with ExperienceReplayBuffer(path) as reopened:  # the embedder comes from the file
        assert reopened.counts() == before
        assert reopened.embedder.spec == HashedEmbedder().spec
        again = reopened.search(make_step(1).state, make_step(1).action, k=3, sources=None)
        assert [h.record for h in again] == [h.record for h in probe]
        assert reopened.store.next_step_index("live") == 2


def test_other_embedder_re_embeds(db):
    path = db.location()
    with ExperienceReplayBuffer(path, embedder=HashedEmbedder()) as buffer:
        buffer.add_steps(make_task(), [make_step(i) for i in range(10)], source="offline")
    with ExperienceReplayBuffer(path, embedder=HashedEmbedder(dim=64)) as buffer:
        top = buffer.search(make_step(4).state, make_step(4).action, k=1)[0]
        assert top.record.action == make_step(4).action
    with ExperienceReplayBuffer(path, read_only=True) as readonly:
        assert readonly.embedder.spec == HashedEmbedder(dim=64).spec
        assert (
            readonly.search(make_step(4).state, make_step(4).action, k=1)[0].record.action
            == make_step(4).action
        )
        with pytest.raises(ConfigurationError, match="read-only"):
            readonly.add(make_task(), make_step(99), source="real")


def test_not_a_buffer_is_a_data_error(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DataError):
        ExperienceReplayBuffer(junk, embedder=HashedEmbedder())
    with pytest.raises(DataError, match="does not exist"):
        ExperienceReplayBuffer(tmp_path / "none.db", read_only=True)


def test_eviction_drops_oldest_synthetic_and_never_offline_while_synthetic_remains(db):
    buffer = db.memory(capacity=30, evict_fraction=0.0)
    buffer.add_steps(make_task(0), [make_step(i) for i in range(10)], source="offline")
    buffer.add_steps(make_task(1), [make_step(i) for i in range(5)], source="real")
    for i in range(100):
        buffer.add(make_task(2), make_step(1000 + i), source="synthetic", episode_id=f"s{i}")
        assert len(buffer) <= 30
        assert buffer.counts()["offline"] == 10 and buffer.counts()["real"] == 5
    kept = sorted(int(s.split()[1]) for s in db.stored(buffer, "synthetic"))
    assert kept == list(range(1085, 1100))  # the newest 15 synthetic transitions
    # the index forgot the evicted ones too
    hits = buffer.search(make_step(1000).state, make_step(1000).action, k=30, sources=["synthetic"])
    assert {h.record.state for h in hits} == db.stored(buffer, "synthetic")
    # only when no synthetic is left does protected data go, real before offline
    buffer.add_steps(make_task(3), [make_step(2000 + i) for i in range(20)], source="real")
    assert buffer.counts() == {"offline": 10, "real": 20, "synthetic": 0}


def test_eviction_in_batches_and_on_reopen(db):
    path = db.location("b.db")
    with ExperienceReplayBuffer(path, embedder=HashedEmbedder(), capacity=200, evict_fraction=0.1) as buffer:
        buffer.add_steps(make_task(), [make_step(i) for i in range(201)], source="synthetic")
        assert len(buffer) == 180  # 1 over, plus a batch of 10% of the capacity
    with ExperienceReplayBuffer(path, capacity=100, evict_fraction=0.0) as smaller:
        assert len(smaller) == 100 and smaller.store.count() == 100


def test_stats_and_repr(db, offline_file):
    with ExperienceReplayBuffer(db.location("s.db"), embedder=HashedEmbedder(), capacity=10_000) as buffer:
        buffer.load_jsonl(offline_file)
        stats = buffer.stats()
        assert stats.transitions == len(buffer) == stats.by_source["offline"] == stats.by_domain["webshop"]
        assert stats.tasks <= stats.episodes and stats.file_bytes > 0
        text = stats.format()
        assert "offline" in text and f"{len(buffer):,}" in text and "10,000" in text
        assert "transitions=" in repr(buffer)


def test_bad_arguments(db):
    with pytest.raises(ConfigurationError):
        db.memory(capacity=0)
    buffer = db.memory()
    with pytest.raises(ConfigurationError, match="source"):
        buffer.add(make_task(), make_step(0), source="imagined")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        buffer.search("s", "a", k=-1)
    assert buffer.search("s", "a") == [] and buffer.search_many([]) == []


WRITER = textwrap.dedent(
    """
    import sys
    from dreamgym_env.replay.buffer import ExperienceReplayBuffer
    from dreamgym_env.replay.embedders import HashedEmbedder
    from dreamgym_env.types import Step, Task

    buffer = ExperienceReplayBuffer(sys.argv[1], embedder=HashedEmbedder(dim=32), commit_every=10**9,
                                    commit_interval_s=10**9)
    task = Task(id="t", domain="webshop", instruction="i", initial_state="s")
    i = 0
    while True:
        buffer.add(task, Step(state=f"state {i}", action=f"click[{i}]", next_state=f"next {i}"),
                   source="synthetic", episode_id="e", step_index=i)
        i += 1
        if i % 7 == 0:
            buffer.commit()
            print(i, flush=True)
    """
)


def test_sigkill_loses_no_committed_transition(db):
    path = db.location("killed.db")
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True, env={**os.environ}
    )
    committed = 0
    assert process.stdout is not None
    for line in process.stdout:
        committed = int(line)
        if committed >= 700:  # well inside the loop; uncommitted writes are in flight
            break
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    if not db.is_postgres:
        with sqlite3.connect(path) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with ExperienceReplayBuffer(path, embedder=HashedEmbedder(dim=32)) as reopened:
        stored = db.stored(reopened)
        assert {f"state {i}" for i in range(committed)} <= stored
        assert len(reopened) == len(stored) >= committed
        top = reopened.search(f"state {committed - 1}", f"click[{committed - 1}]", k=1, sources=None)[0]
        assert top.record.next_state == f"next {committed - 1}"
        assert json.loads(json.dumps(reopened.counts()))["synthetic"] == len(stored)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    capacity=st.integers(min_value=1, max_value=12),
    adds=st.lists(st.sampled_from(["offline", "real", "synthetic"]), min_size=1, max_size=40),
)
def test_eviction_order_holds_for_any_sequence(db, capacity, adds):
    buffer = db.memory(embedder=HashedEmbedder(dim=32), capacity=capacity, evict_fraction=0.0)
    for i, source in enumerate(adds):
        before = buffer.counts()
        buffer.add(make_task(), make_step(i), source=source)
        after = buffer.counts()
        assert len(buffer) <= capacity
        if after["offline"] < before["offline"]:  # offline goes only when nothing else is left
            assert after["synthetic"] == after["real"] == 0
        if after["real"] < before["real"]:
            assert after["synthetic"] == 0
    assert (
        buffer.store.count()
        == len(buffer)
        == buffer.store.count_table("vectors")
        == len(buffer._ensure_index())
    )
    buffer.close()


IDLE_WRITER = textwrap.dedent(
    """
    import sys, time
    from dreamgym_env.replay.buffer import ExperienceReplayBuffer
    from dreamgym_env.replay.embedders import HashedEmbedder
    from dreamgym_env.types import Step, Task

    buffer = ExperienceReplayBuffer(sys.argv[1], embedder=HashedEmbedder(dim=32), commit_every=10**9,
                                    commit_interval_s=float(sys.argv[2]))
    task = Task(id="t", domain="webshop", instruction="i", initial_state="s")
    for i in range(5):
        buffer.add(task, Step(state=f"state {i}", action=f"click[{i}]", next_state=f"next {i}"),
                   source="synthetic", episode_id="e", step_index=i)
    print("written", flush=True)
    time.sleep(600)  # idle, never closes: only the interval commit can save the writes
    """
)


def test_writes_of_an_idle_writer_are_committed_on_time_and_survive_sigkill(db):
    """Five adds, then the writer idles past commit_interval_s: a reader sees them, SIGKILL keeps them."""
    path = db.location("idle.db")
    interval = 0.3
    process = subprocess.Popen(
        [sys.executable, "-c", IDLE_WRITER, str(path), str(interval)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "written"
        written_at = time.monotonic()
        expected = {f"state {i}" for i in range(5)}
        seen: set[str] = set()
        while time.monotonic() - written_at < 10 and seen != expected:
            time.sleep(0.05)
            seen = db.states(path)
        waited = time.monotonic() - written_at
        assert seen == expected, f"a reader saw {len(seen)} of 5 rows {waited:.1f} s after the writes"
        assert waited < interval + 5  # committed by the timer, not at some later write
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert db.states(path) == expected


def test_interval_commit_without_further_writes_in_process(db):
    path = db.location("b.db")
    with ExperienceReplayBuffer(
        path, embedder=HashedEmbedder(), commit_every=10**9, commit_interval_s=0.05
    ) as buffer:
        buffer.add(make_task(), make_step(1), source="real")
        assert buffer.store.commit_due_in() is not None
        deadline = time.monotonic() + 5
        while buffer.store.commit_due_in() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert buffer.store.commit_due_in() is None  # the timer committed
        assert len(db.states(path)) == 1
        buffer.add(make_task(), make_step(2), source="real")  # a new batch arms a new timer
        time.sleep(0.3)
        assert len(db.states(path)) == 2


TWO_WRITERS = textwrap.dedent(
    """
    import sys
    from dreamgym_env.replay.buffer import ExperienceReplayBuffer
    from dreamgym_env.replay.embedders import HashedEmbedder
    from dreamgym_env.types import Step, Task

    name = sys.argv[2]
    with ExperienceReplayBuffer(sys.argv[1], embedder=HashedEmbedder(dim=32), commit_every=5,
                                commit_interval_s=0.02, busy_timeout_s=30) as buffer:
        task = Task(id=f"t-{name}", domain="webshop", instruction="i", initial_state="s")
        for i in range(200):
            buffer.add(task, Step(state=f"{name} state {i}", action=f"click[{i}]", next_state=f"next {i}"),
                       source="synthetic", episode_id=name, step_index=i)
    print("done", flush=True)
    """
)


def test_two_writer_processes_wait_for_each_other(db):
    path = db.location("shared.db")
    ExperienceReplayBuffer(path, embedder=HashedEmbedder(dim=32)).close()  # created before both start
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", TWO_WRITERS, str(path), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    outputs = [writer.communicate(timeout=120) for writer in writers]
    for writer, (out, err) in zip(writers, outputs, strict=True):
        assert writer.returncode == 0 and out.strip() == "done", err
        assert "OperationalError" not in err
    states = db.states(path)
    assert states == {f"{name} state {i}" for name in ("a", "b") for i in range(200)}
    with ExperienceReplayBuffer(path) as reader:  # every row once, with its vector, under its own id
        assert len(reader) == reader.store.count_table("vectors") == 400
        top = reader.search("b state 7", "click[7]", k=1, sources=None)[0]
        assert top.record.state == "b state 7" and top.score == pytest.approx(1.0, abs=1e-5)


def test_a_writer_blocked_past_its_busy_timeout_gets_a_data_error_naming_the_buffer(db):
    path = db.location("locked.db")
    ExperienceReplayBuffer(path, embedder=HashedEmbedder()).close()
    with (
        db.write_lock_held(path) as release,  # another writer's open transaction
        ExperienceReplayBuffer(path, embedder=HashedEmbedder(), busy_timeout_s=0.2) as blocked,
    ):
        started = time.monotonic()
        name = "locked.db" if not db.is_postgres else "search_path"
        with pytest.raises(DataError, match=rf"{name}.*locked by another writer") as caught:
            blocked.add(make_task(), make_step(1), source="real")
        assert time.monotonic() - started >= 0.15  # it waited before giving up
        assert isinstance(caught.value.__cause__, db.error_type)
        release()
        blocked.add(make_task(), make_step(1), source="real")  # free again: the write goes through
    assert len(db.states(path)) == 1


def test_zero_length_file_is_a_data_error_naming_the_file(tmp_path):
    empty = tmp_path / "empty.db"
    empty.touch()
    for read_only in (False, True):
        with pytest.raises(DataError, match=r"empty\.db.*empty file"):
            ExperienceReplayBuffer(empty, embedder=HashedEmbedder(), read_only=read_only)
    assert empty.stat().st_size == 0  # left as it was


def _built(path, steps: int = 3000) -> None:
    with ExperienceReplayBuffer(path, embedder=HashedEmbedder(dim=64)) as buffer:
        long_text = " ".join(f"word{j}" for j in range(60))
        buffer.add_steps(
            make_task(),
            [
                Step(state=f"page {i} {long_text}", action=f"click[{i}]", next_state=f"item {i}")
                for i in range(steps)
            ],
            source="offline",
        )


def test_corrupted_page_is_a_data_error_naming_the_file(tmp_path):
    path = tmp_path / "corrupt.db"
    _built(path)
    size = path.stat().st_size
    assert size > 1_000_000 and not (tmp_path / "corrupt.db-wal").exists()
    with open(path, "r+b") as handle:  # overwrite a run of pages in the middle; the header stays intact
        handle.seek(size // 3)
        handle.write(b"\xff" * (size // 3))
    with (
        pytest.raises(DataError, match=r"corrupt\.db.*damaged") as caught,
        ExperienceReplayBuffer(path, embedder=HashedEmbedder(dim=64)) as buffer,
    ):
        buffer.search("page 1", "click[1]", k=2)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


def test_truncated_file_is_a_data_error_naming_the_file(tmp_path):
    path = tmp_path / "truncated.db"
    _built(path)
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    with (
        pytest.raises(DataError, match=r"truncated\.db"),
        ExperienceReplayBuffer(path, embedder=HashedEmbedder(dim=64), read_only=True) as buffer,
    ):
        buffer.search("page 1", "click[1]", k=2, sources=None)


def test_close_leaves_no_wal_files(tmp_path):
    path = tmp_path / "b.db"
    _built(path, steps=50)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.db"]
    with ExperienceReplayBuffer(path, read_only=True) as reader:
        assert len(reader) == 50
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.db"]  # a reader's files go too


def test_a_search_sees_the_rows_another_writer_committed(db):
    """Two buffers on one database: each one's index follows the other's committed rows."""
    path = db.location("shared.db")
    ExperienceReplayBuffer(path, embedder=HashedEmbedder()).close()  # created before both open it
    with (
        ExperienceReplayBuffer(path, embedder=HashedEmbedder(), commit_every=1) as first,
        ExperienceReplayBuffer(path, embedder=HashedEmbedder(), commit_every=1) as second,
    ):
        first.add_steps(make_task(0), [make_step(i) for i in range(3)], source="real")
        assert (
            second.search(make_step(1).state, make_step(1).action, k=1)[0].record.state == make_step(1).state
        )
        assert len(second) == 3 and second.counts()["real"] == 3
        ids = second.add_steps(make_task(1), [make_step(10), make_step(1)], source="real")
        assert ids[1] == first.search(make_step(1).state, make_step(1).action, k=1)[0].record.id  # a repeat
        assert second.duplicates == 1 and len(first) == len(second) == 4
        top = first.search(make_step(10).state, make_step(10).action, k=1)[0]
        assert top.record.id == ids[0] and top.score == pytest.approx(1.0, abs=1e-5)
