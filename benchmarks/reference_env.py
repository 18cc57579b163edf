"""Speed of the WebShop reference env (DreamGym/WebShop-Ref-v0) on one core.

1. Build: the catalog, its BM25 index and the 6,000 tasks, once per process; then the cost of
   constructing one more env.
2. Random policy: steps per second of the env alone (time inside ``step``) and of the whole loop
   (policy, step, resets), with the registered 15-step limit. Goal: >= 5,000 steps/s. Times are
   CPU seconds of this process (``time.process_time``), so that other load on the machine does
   not count; wall-clock steps/s is printed too.
3. Offline data: the time to collect 1,000 expert trajectories into a JSONL file (as
   ``dreamgym collect --domain webshop --policy expert --episodes 1000`` does), and their success.

Run: python benchmarks/reference_env.py [--steps 100000] [--episodes 1000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from dreamgym_env.agents import RandomPolicy
from dreamgym_env.agents.rollouts import collect
from dreamgym_env.envs.webshop.catalog import load_catalog
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.envs.webshop.tasks import load_tasks

MAX_STEPS = 15


def build_times() -> tuple[float, float, float]:
    start = time.process_time()
    load_catalog()
    catalog_s = time.process_time() - start
    start = time.process_time()
    load_tasks()
    tasks_s = time.process_time() - start
    start = time.process_time()
    for _ in range(100):
        WebShopRefEnv()
    construct_s = (time.process_time() - start) / 100
    return catalog_s, tasks_s, construct_s


def random_steps(steps: int) -> tuple[float, float, float, int]:
    env = WebShopRefEnv(max_steps=MAX_STEPS)
    policy = RandomPolicy(seed=0)
    obs, info = env.reset(seed=0)
    in_step = 0.0
    episodes = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        action = policy(obs, info)
        t = time.process_time()
        obs, _, terminated, truncated, info = env.step(action)
        in_step += time.process_time() - t
        if terminated or truncated:
            episodes += 1
            obs, info = env.reset()
    loop_cpu, loop_wall = time.process_time() - cpu, time.perf_counter() - wall
    return steps / in_step, steps / loop_cpu, steps / loop_wall, episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100_000, help="random-policy steps to time")
    parser.add_argument("--episodes", type=int, default=1_000, help="expert trajectories to collect")
    args = parser.parse_args()

    catalog_s, tasks_s, construct_s = build_times()
    env_sps, loop_sps, wall_sps, episodes = random_steps(args.steps)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "expert.jsonl"
        cpu = time.process_time()
        summary = collect("webshop", "expert", args.episodes, out, seed=0, split="train", progress=False)
        collect_cpu = time.process_time() - cpu
        size_mb = out.stat().st_size / 1e6

    table = Table(title="WebShop reference env (one process, one core)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("catalog + BM25 index build (2,000 products)", f"{catalog_s:.2f} s")
    table.add_row("task generation (6,000 tasks)", f"{tasks_s:.2f} s")
    table.add_row("construct one more env", f"{construct_s * 1e6:.0f} us")
    table.add_row(f"random policy, env.step only ({args.steps:,} steps)", f"{env_sps:,.0f} steps/s")
    table.add_row(f"random policy, whole loop ({episodes:,} episodes)", f"{loop_sps:,.0f} steps/s")
    table.add_row("random policy, whole loop, wall clock", f"{wall_sps:,.0f} steps/s")
    table.add_row(f"collect {summary.episodes:,} expert trajectories (CPU)", f"{collect_cpu:.2f} s")
    table.add_row("  the same, wall clock (with JSONL writing)", f"{summary.seconds:.2f} s")
    table.add_row("  expert success / mean steps", f"{summary.success_rate:.3f} / {summary.mean_steps:.2f}")
    table.add_row("  JSONL size", f"{size_mb:.1f} MB")
    Console().print(table)


if __name__ == "__main__":
    main()
