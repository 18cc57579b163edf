"""Framework overhead of DreamEnv and throughput of DreamVectorEnv.

1. Per-step overhead: DreamEnv with an in-process model that answers at once (no latency), so
   the time is all parsing, request building, the event-loop hop and bookkeeping.
2. Vector throughput vs N at a fixed model latency: DreamVectorEnv (one event loop, concurrent
   calls) against the ideal N / latency, over an in-process model and over HTTP to the local
   test server (in its own process), and Gymnasium's AsyncVectorEnv (one process per sub-env) over the same envs.

``--http-client openai`` sends the HTTP requests through the ``openai`` client instead of the
package's aiohttp path (the path until 2026-12-01, from ``benchmarks/http_path.py``), to compare.

Run: python benchmarks/env_overhead.py [--steps 3000] [--latency 0.1] [--sizes 16,32,64,128,256]
     [--http-client aiohttp|openai]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import gymnasium as gym
from http_path import PATHS
from rich.console import Console
from rich.table import Table

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedExperienceModel

ACTIONS = ["search[long sleeve shirt]", "click[< Prev]", "click[Back to Search]"]


def step_overhead(steps: int) -> tuple[float, float]:
    env = DreamEnv("webshop", ScriptedExperienceModel())
    env.reset(seed=0)
    times = []
    for i in range(steps):
        start = time.perf_counter()
        env.step("search[long sleeve shirt navy]")
        times.append(time.perf_counter() - start)
        if i % 10 == 9:
            env.reset()
    times.sort()
    return statistics.median(times) * 1e3, times[int(0.99 * len(times))] * 1e3


def vector_rate(envs: gym.vector.VectorEnv, n: int, steps: int) -> float:
    """Sub-env steps per second over ``steps`` batched searches (each a model call; resets untimed)."""
    envs.reset(seed=0)
    envs.step(["search[warm up]"] * n)
    elapsed = 0.0
    for _ in range(steps):
        envs.reset(seed=0)
        start = time.perf_counter()
        _, _, _, _, infos = envs.step(["search[long sleeve shirt]"] * n)
        elapsed += time.perf_counter() - start
        assert all(infos["action_valid"]), "every timed step must reach the model"
    return n * steps / elapsed


def async_env_fn(latency: float) -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        return DreamEnv("webshop", ScriptedExperienceModel(latency_s=latency), max_steps=1000)

    return make


SERVER_SCRIPT = (
    "import sys; from dreamgym_env.testing import ScriptedOpenAIServer; "
    "server = ScriptedOpenAIServer(latency_s=float(sys.argv[1])).start(); "
    "print(server.url, flush=True); sys.stdin.read()"
)


@contextmanager
def server_process(latency: float) -> Iterator[str]:
    """The test server in its own process, so that its CPU does not share the client's GIL."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT, str(latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="single-env steps for the overhead")
    parser.add_argument("--latency", type=float, default=0.1, help="model latency in seconds")
    parser.add_argument("--sizes", default="16,32,64,128,256", help="vector sizes N")
    parser.add_argument("--vector-steps", type=int, default=10, help="batched steps per measurement")
    parser.add_argument(
        "--async-max", type=int, default=64, help="largest N for AsyncVectorEnv (a process each)"
    )
    parser.add_argument(
        "--http-client", choices=sorted(PATHS), default="aiohttp", help="the HTTP exchange of the transport"
    )
    args = parser.parse_args()
    console = Console()

    p50, p99 = step_overhead(args.steps)
    table = Table(title="DreamEnv per-step framework overhead (zero-latency in-process model)")
    for column in ("steps", "p50 ms", "p99 ms", "goal"):
        table.add_column(column)
    table.add_row(str(args.steps), f"{p50:.3f}", f"{p99:.3f}", "p50 <= 1 ms")
    console.print(table)

    table = Table(
        title=f"Vector throughput at {args.latency * 1e3:.0f} ms model latency (sub-env steps/s; "
        f"HTTP through {args.http_client})"
    )
    for column in ("N", "ideal", "in-process", "ratio", "HTTP server", "ratio", "AsyncVectorEnv", "ratio"):
        table.add_column(column)
    with server_process(args.latency) as url:
        http_model = OpenAIExperienceModel(base_url=url, model="bench", max_concurrency=512)
        http_model.transport = PATHS[args.http_client](http_model.config)
        for n in (int(s) for s in args.sizes.split(",")):
            ideal = n / args.latency
            local = vector_rate(
                DreamVectorEnv(n, "webshop", ScriptedExperienceModel(latency_s=args.latency)),
                n,
                args.vector_steps,
            )
            http = vector_rate(DreamVectorEnv(n, "webshop", http_model), n, args.vector_steps)
            row = [
                str(n),
                f"{ideal:.0f}",
                f"{local:.0f}",
                f"{local / ideal:.2f}",
                f"{http:.0f}",
                f"{http / ideal:.2f}",
            ]
            if n <= args.async_max:
                async_envs = gym.vector.AsyncVectorEnv([async_env_fn(args.latency)] * n, shared_memory=False)
                rate = vector_rate(async_envs, n, args.vector_steps)
                async_envs.close()
                row += [f"{rate:.0f}", f"{rate / ideal:.2f}"]
            else:
                row += ["-", "-"]
            table.add_row(*row)
            console.print(f"N={n} done", style="dim")
        http_model.close()
    console.print(table)


if __name__ == "__main__":
    main()
