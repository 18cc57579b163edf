"""A random policy on the default synthetic ids: exceptions out of ``step`` and episodes a model failure truncated.

Usage: python benchmarks/random_steps.py [--env DreamGym/WebShop-v0 ...] [--steps 10000] [--num-envs 8]

Each id is stepped as ``gym.make_vec(id, num_envs=N)`` on its default experience model (the pack's
own), one seeded :class:`~dreamgym_env.agents.RandomPolicy` a sub-env picking among its
``admissible_actions``, until ``--steps`` sub-env steps are done. A step that raises is counted
and the run goes on from a reset. An episode ends at a terminal action, at the id's step limit
(truncated) or, when the model cannot answer a step, truncated with ``info["error"]``
(``model_failures``). Progress every 30 s.

Prints a markdown table, one row an id:
``| id | sub-env steps | exceptions | episodes | truncated by a model failure | share | seconds |``.
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import dreamgym_env  # noqa: F401  (registers the envs)
from dreamgym_env.agents import RandomPolicy

DEFAULT_IDS = ("DreamGym/WebShop-v0", "DreamGym/ALFWorld-v0", "DreamGym/WebArena-v0")
PROGRESS_S = 30.0


def play(env_id: str, steps: int, num_envs: int) -> str:
    envs = gym.make_vec(env_id, num_envs=num_envs)
    base = envs.unwrapped
    policies = [RandomPolicy(seed=i) for i in range(num_envs)]
    observations, _ = envs.reset(seed=0)
    done = exceptions = episodes = 0
    started = shown = time.perf_counter()
    while done < steps:
        infos = base.sub_env_infos  # type: ignore[attr-defined]
        actions = [
            policy(o, i) if i.get("admissible_actions") else "stop"  # an ended sub-env's action is ignored
            for policy, o, i in zip(policies, observations, infos, strict=True)
        ]
        try:
            observations, _, terminations, truncations, _ = envs.step(actions)
        except Exception as exc:  # what this benchmark counts: nothing should come out of step
            exceptions += 1
            print(f"{env_id}: step raised {type(exc).__name__}: {str(exc)[:200]}", flush=True)
            observations, _ = envs.reset()
            continue
        done += num_envs
        episodes += int((terminations | truncations).sum())
        if time.perf_counter() - shown > PROGRESS_S:
            shown = time.perf_counter()
            failures = base.model_failures  # type: ignore[attr-defined]
            print(
                f"{env_id}: {done} sub-env steps, {episodes} episodes, {exceptions} exceptions, "
                f"{failures} truncated by a model failure",
                flush=True,
            )
    failures = base.model_failures  # type: ignore[attr-defined]
    envs.close()
    share = failures / max(1, episodes)
    seconds = time.perf_counter() - started
    return f"| {env_id} | {done:,} | {exceptions} | {episodes:,} | {failures} | {share:.1%} | {seconds:.0f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", help="a synthetic id (default: the three packs')")
    parser.add_argument("--steps", type=int, default=10_000, help="sub-env steps an id")
    parser.add_argument("--num-envs", type=int, default=8)
    args = parser.parse_args()
    rows = [play(env_id, args.steps, args.num_envs) for env_id in args.env or DEFAULT_IDS]
    print("| id | sub-env steps | exceptions | episodes | truncated by a model failure | share | seconds |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
