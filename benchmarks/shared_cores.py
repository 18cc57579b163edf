"""Aggregate env steps per second when one or two processes step a synthetic vector env on the same cores.

Usage: python benchmarks/shared_cores.py [--env DreamGym/WebShop-v0] [--num-envs 16] [--seconds 60]
       [--setting poll=50 ...]

Each process builds ``gym.make_vec(env, num_envs=N)`` on the default experience model (the pack's
own, in-process), plays a random admissible action in every sub-env (``RandomPolicy``) and counts
sub-env steps for ``--seconds`` after a warm-up of a few vector steps, the whole loop timed
(policy, model and env). The processes start their clocks together (a barrier). ``--setting
k=v`` passes a model setting to ``gym.make_vec`` (e.g. ``poll=50`` for llama.cpp's old
busy-polling, ``n_threads=2``), to compare.

The last line is always::

    one_process X two_processes Y ratio Z

with X and Y in aggregate env steps/s (Y summed over both processes), Z = Y / X.
"""

from __future__ import annotations

import argparse
import multiprocessing
import queue
import time
from typing import Any

WARMUP_STEPS = 3


def play(env_id: str, num_envs: int, seconds: float, settings: dict[str, Any], barrier: Any, out: Any) -> None:
    import gymnasium as gym

    import dreamgym_env  # noqa: F401
    from dreamgym_env.agents.random import RandomPolicy

    envs = gym.make_vec(env_id, num_envs=num_envs, **settings)
    policies = [RandomPolicy(seed=i) for i in range(num_envs)]
    observations, _ = envs.reset(seed=0)

    def step() -> None:
        nonlocal observations
        infos = envs.unwrapped.sub_env_infos  # type: ignore[attr-defined]
        actions = [
            policy(o, i) if i.get("admissible_actions") else "search[x]"  # an ended sub-env's action is ignored
            for policy, o, i in zip(policies, observations, infos, strict=True)
        ]
        observations, *_ = envs.step(actions)

    for _ in range(WARMUP_STEPS):
        step()
    barrier.wait()
    started, steps = time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        step()
        steps += num_envs
    out.put((steps, time.perf_counter() - started, envs.unwrapped.model_failures))  # type: ignore[attr-defined]
    envs.close()


def run(processes: int, args: argparse.Namespace, settings: dict[str, Any]) -> float:
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(processes), context.Queue()
    workers = [
        context.Process(target=play, args=(args.env, args.num_envs, args.seconds, settings, barrier, out))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    results = []
    while len(results) < processes:
        try:
            results.append(out.get(timeout=5))
        except queue.Empty:
            lost = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
            if lost:
                raise SystemExit(f"a worker process died (exit codes {lost})") from None
    for worker in workers:
        worker.join()
    rates = [steps / elapsed for steps, elapsed, _ in results]
    failures = sum(failed for _, _, failed in results)
    print(
        f"{processes} process(es): " + ", ".join(f"{r:.1f}" for r in rates) + f" env steps/s each, "
        f"{sum(rates):.1f} in all ({failures} episodes truncated by a model failure)",
        flush=True,
    )
    return sum(rates)


def setting(text: str) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    try:
        return key, int(value)
    except ValueError:
        return key, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="DreamGym/WebShop-v0")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--setting", type=setting, action="append", default=[], help="a model setting, k=v")
    args = parser.parse_args()
    settings = dict(args.setting)
    one = run(1, args, settings)
    two = run(2, args, settings)
    print(f"one_process {one:.1f} two_processes {two:.1f} ratio {two / one:.2f}")


if __name__ == "__main__":
    main()
