"""Shared replay buffer: write rate and query latency, SQLite vs PostgreSQL, 1 and 4 writer processes.

Each writer process opens the buffer and stores ``--steps`` transitions one ``add`` at a time
(as an env's write-back does: default batching, a commit every 256 writes or 1 s), tagged
synthetic, with the hashed embedder (256 dims). Meanwhile the main process, a buffer of its own
on the same database, searches (k=4, any source) in a loop: its latency includes picking up
the rows the writers committed since its last query. Columns: writers, total writes/s (all
writes over the wall time from the start signal to the last writer's close), the slowest
writer's writes/s, query latency p50/p95 during the writes and p50 after them on the full
buffer, and the rows stored (checked: every write, once). Also the bulk rate: one process
storing ``--bulk`` episodes of 10 steps with ``add_trajectories``, 128 a call (as ``load_jsonl``).

SQLite: a fresh file in a temporary directory (WAL). PostgreSQL: a fresh schema in the database
of ``--postgres-url`` (default ``DREAMGYM_TEST_POSTGRES_URL``), dropped afterwards. Start a
throwaway server as in docs/scaling.md ("A shared replay buffer on PostgreSQL").

Run: python benchmarks/replay_postgres.py [--steps 2000] [--writers 1,4] [--bulk 1280] [--postgres-url URL]
[--json out.json]
(about a minute on 2 cores.)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.types import Step, Task, Trajectory


def _step(writer: int, i: int) -> Step:
    words = " ".join(f"w{(i * 7 + j) % 97}" for j in range(40))
    return Step(
        state=f"writer {writer} page {i}: {words}",
        action=f"click[item {i % 50}]",
        next_state=f"item {i} of {writer}",
    )


def _write(location: str, writer: int, steps: int, start: Any, done: Any) -> None:
    buffer = ExperienceReplayBuffer(location, embedder=HashedEmbedder())
    task = Task(id=f"task-{writer}", domain="webshop", instruction="buy it", initial_state="start")
    start.wait()
    began = time.perf_counter()
    for i in range(steps):
        buffer.add(task, _step(writer, i), source="synthetic", episode_id=f"writer-{writer}", step_index=i)
    buffer.close()
    done.put(steps / (time.perf_counter() - began))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run(location: str, writers: int, steps: int) -> dict[str, float]:
    """One measurement: ``writers`` processes writing while this process queries."""
    ExperienceReplayBuffer(location, embedder=HashedEmbedder()).close()  # the schema, before the writers
    context = multiprocessing.get_context("spawn")
    start, done = context.Event(), context.Queue()
    processes = [
        context.Process(target=_write, args=(location, w, steps, start, done)) for w in range(writers)
    ]
    for process in processes:
        process.start()
    reader = ExperienceReplayBuffer(location, embedder=HashedEmbedder())
    reader.search("warm up", "click[x]", k=4, sources=None)
    time.sleep(3.0)  # let every writer import and open the buffer
    during: list[float] = []
    began = time.perf_counter()
    start.set()
    query = 0
    while any(process.is_alive() for process in processes):
        probe = _step(query % writers, (query * 37) % steps)
        t0 = time.perf_counter()
        reader.search(probe.state, probe.action, k=4, sources=None)
        during.append(time.perf_counter() - t0)
        query += 1
        time.sleep(0.01)
    wall = time.perf_counter() - began
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise SystemExit(f"a writer failed (exit code {process.exitcode})")
    per_writer = [done.get() for _ in processes]
    after: list[float] = []
    for query in range(200):
        probe = _step(query % writers, (query * 37) % steps)
        t0 = time.perf_counter()
        hits = reader.search(probe.state, probe.action, k=4, sources=None)
        after.append(time.perf_counter() - t0)
        assert hits and hits[0].record.state == probe.state
    stored = len(reader)
    reader.close()
    if stored != writers * steps:
        raise SystemExit(f"{stored} rows stored, expected {writers * steps}")
    return {
        "writes_per_s": writers * steps / wall,
        "slowest_writer_per_s": min(per_writer),
        "query_p50_ms_during": 1000 * statistics.median(during) if during else float("nan"),
        "query_p95_ms_during": 1000 * _percentile(during, 0.95),
        "queries_during": len(during),
        "query_p50_ms_after": 1000 * statistics.median(after),
        "rows": stored,
    }


def bulk(location: str, episodes: int) -> float:
    """Transitions per second stored by ``add_trajectories``, 128 episodes of 10 steps a call."""
    trajectories = [
        Trajectory(
            task=Task(id=f"bulk-{e}", domain="webshop", instruction="buy it", initial_state="start"),
            steps=[_step(e, i) for i in range(10)],
            source="offline",
        )
        for e in range(episodes)
    ]
    with ExperienceReplayBuffer(location, embedder=HashedEmbedder()) as buffer:
        began = time.perf_counter()
        for start in range(0, episodes, 128):
            buffer.add_trajectories(trajectories[start : start + 128])
        buffer.commit()
        return len(buffer) / (time.perf_counter() - began)


def _postgres_location(url: str) -> tuple[str, str]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options=-csearch_path%3D{schema}", schema


def _drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=2000, help="transitions each writer stores")
    parser.add_argument("--writers", default="1,4", help="writer process counts, comma-separated")
    parser.add_argument("--bulk", type=int, default=1280, help="episodes of the bulk load (0: none)")
    parser.add_argument("--postgres-url", default=os.environ.get("DREAMGYM_TEST_POSTGRES_URL"))
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    if not args.postgres_url:
        raise SystemExit("give --postgres-url (or set DREAMGYM_TEST_POSTGRES_URL); see docs/scaling.md")
    counts = [int(n) for n in args.writers.split(",")]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for writers in counts:
            for backend in ("sqlite", "postgresql"):
                if backend == "sqlite":
                    location, schema = str(Path(tmp) / f"bench-{writers}.db"), ""
                else:
                    location, schema = _postgres_location(args.postgres_url)
                try:
                    result = run(location, writers, args.steps)
                finally:
                    if schema:
                        _drop_schema(args.postgres_url, schema)
                results.append({"backend": backend, "writers": writers, **result})
        bulk_rates: dict[str, float] = {}
        for backend in ("sqlite", "postgresql") if args.bulk else ():
            if backend == "sqlite":
                location, schema = str(Path(tmp) / "bulk.db"), ""
            else:
                location, schema = _postgres_location(args.postgres_url)
            try:
                bulk_rates[backend] = bulk(location, args.bulk)
            finally:
                if schema:
                    _drop_schema(args.postgres_url, schema)
    table = Table(title=f"shared replay buffer, {args.steps} adds per writer, {os.cpu_count()} CPUs")
    for column in (
        "backend",
        "writers",
        "writes/s",
        "slowest writer/s",
        "query p50 / p95 during (ms)",
        "query p50 after (ms)",
        "rows",
    ):
        table.add_column(column, justify="left" if column == "backend" else "right")
    for r in results:
        table.add_row(
            r["backend"],
            str(r["writers"]),
            f"{r['writes_per_s']:,.0f}",
            f"{r['slowest_writer_per_s']:,.0f}",
            f"{r['query_p50_ms_during']:.2f} / {r['query_p95_ms_during']:.2f} ({r['queries_during']})",
            f"{r['query_p50_ms_after']:.2f}",
            f"{r['rows']:,}",
        )
    console = Console(width=160)
    console.print(table)
    for backend, rate in bulk_rates.items():
        console.print(
            f"bulk load ({args.bulk * 10:,} transitions, add_trajectories): {backend} {rate:,.0f}/s"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": results, "bulk_per_s": bulk_rates}, indent=2))


if __name__ == "__main__":
    main()
