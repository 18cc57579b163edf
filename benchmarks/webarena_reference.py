"""Speed and baselines of the WebArena reference env.

1. Random steps/s: CPU time spent inside ``step`` only, and of the whole loop (policy, step,
   resets, the registered 30-step horizon), a random admissible action a step. Goal: >= 2,000.
2. Success per site on the held-out split (165 tasks): the expert and the random policy.
3. Time to collect N expert trajectories (train split, wall clock, resets included).

Run: python benchmarks/webarena_reference.py [--steps 20000] [--trajectories 500] [--observation axtree]
"""

from __future__ import annotations

import argparse
import random
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from dreamgym_env.envs.webarena.expert import WebArenaExpert
from dreamgym_env.envs.webarena.reference_env import MAX_EPISODE_STEPS, WebArenaRefEnv
from dreamgym_env.envs.webarena.world import SITES
from dreamgym_env.types import Task

Policy = Callable[[str, dict[str, Any]], str]


def random_steps_per_second(env: WebArenaRefEnv, steps: int, seed: int) -> float:
    rng = random.Random(seed)
    inside, done = 0.0, 0
    _, info = env.reset(seed=seed)
    while done < steps:
        action = rng.choice(info["admissible_actions"])
        start = time.process_time()
        _, _, terminated, truncated, info = env.step(action)
        inside += time.process_time() - start
        done += 1
        if terminated or truncated or done % MAX_EPISODE_STEPS == 0:
            _, info = env.reset()
    return steps / inside


def whole_loop_steps_per_second(env: WebArenaRefEnv, steps: int, seed: int) -> float:
    """CPU time of the whole loop: the policy's choice, ``step`` and the resets."""
    rng = random.Random(seed)
    start = time.process_time()
    _, info = env.reset(seed=seed)
    episode_steps = 0
    for _ in range(steps):
        _, _, terminated, truncated, info = env.step(rng.choice(info["admissible_actions"]))
        episode_steps += 1
        if terminated or truncated or episode_steps == MAX_EPISODE_STEPS:
            _, info = env.reset()
            episode_steps = 0
    return steps / (time.process_time() - start)


def episode(env: WebArenaRefEnv, policy: Policy, task: Task) -> tuple[bool, int]:
    obs, info = env.reset(options={"task": task})
    for step in range(1, MAX_EPISODE_STEPS + 1):
        obs, reward, terminated, _, info = env.step(policy(obs, info))
        if terminated:
            return reward == 1.0, step
    return False, MAX_EPISODE_STEPS


def success_by_site(env: WebArenaRefEnv, make_policy: Callable[[], Policy]) -> dict[str, tuple[int, int]]:
    wins: dict[str, list[bool]] = defaultdict(list)
    for task in env.tasks:
        wins[task.metadata["site"]].append(episode(env, make_policy(), task)[0])
    return {site: (sum(w), len(w)) for site, w in wins.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=20_000, help="random steps to time")
    parser.add_argument("--trajectories", type=int, default=500, help="expert trajectories to collect")
    parser.add_argument("--observation", choices=("axtree", "compact"), default="axtree")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    env = WebArenaRefEnv(split="train", observation=args.observation)
    rate = random_steps_per_second(env, args.steps, args.seed)
    loop_rate = whole_loop_steps_per_second(env, args.steps, args.seed)

    test = WebArenaRefEnv(split="test", observation=args.observation)
    expert = success_by_site(test, WebArenaExpert)
    rng = random.Random(args.seed)
    rand = success_by_site(test, lambda: lambda obs, info: rng.choice(info["admissible_actions"]))

    tasks = env.tasks[: args.trajectories]
    start = time.perf_counter()
    steps = sum(episode(env, WebArenaExpert(), task)[1] for task in tasks)
    collect = time.perf_counter() - start

    print(f"WebArena reference env ({args.observation} observations)")
    print(f"random policy: {rate:,.0f} steps/s inside step (CPU time, {args.steps:,} steps)")
    print(
        f"random policy: {loop_rate:,.0f} steps/s whole loop (CPU time, {args.steps:,} steps, resets included)"
    )
    print(f"{args.trajectories} expert trajectories ({steps:,} steps): {collect:.2f} s wall\n")
    print(f"{'site':<16}{'tasks':>7}{'expert':>10}{'random':>10}")
    totals = [0, 0, 0]
    for site in SITES:
        won, n = expert.get(site, (0, 0))
        rwon, _ = rand.get(site, (0, 0))
        totals = [totals[0] + n, totals[1] + won, totals[2] + rwon]
        print(f"{site:<16}{n:>7}{won / max(n, 1):>10.3f}{rwon / max(n, 1):>10.3f}")
    n = max(totals[0], 1)
    print(f"{'all (test)':<16}{totals[0]:>7}{totals[1] / n:>10.3f}{totals[2] / n:>10.3f}")


if __name__ == "__main__":
    main()
