"""Speed and baselines of the ALFWorld reference env (ALFWorldRefEnv) on one core.

1. Build: generating the 4,032 tasks (1,008 rooms), once per process; constructing one more env.
2. Random policy: steps per second of the env alone (CPU time inside ``step``) and of the whole
   loop (policy, step, resets) with the registered 50-step horizon. Goal: >= 5,000 steps/s.
   Times are CPU seconds of this process (``time.process_time``), so that other load on the
   machine does not count.
3. Baselines on the test split: expert, noisy expert (a random admissible action 30% of the
   time) and random success rates.
4. Offline data: the time to collect 1,000 expert trajectories of the train split into a JSONL
   file (one episode a line), CPU and wall clock.

Run: python benchmarks/alfworld_reference.py [--steps 100000] [--episodes 1000] [--test-tasks 504]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dreamgym_env.envs.alfworld.expert import ALFWorldExpert
from dreamgym_env.envs.alfworld.reference_env import MAX_EPISODE_STEPS, ALFWorldRefEnv
from dreamgym_env.envs.alfworld.tasks import generate_tasks, load_tasks
from dreamgym_env.types import Task

TextPolicy = Callable[[str, dict[str, Any]], str]


def random_policy(seed: int) -> TextPolicy:
    rng = np.random.default_rng(seed)

    def act(observation: str, info: dict[str, Any]) -> str:
        actions = info["admissible_actions"]
        return actions[int(rng.integers(len(actions)))]

    return act


def noisy_expert(epsilon: float, seed: int) -> TextPolicy:
    expert, rng, rand = ALFWorldExpert(), np.random.default_rng(seed), random_policy(seed + 1)

    def act(observation: str, info: dict[str, Any]) -> str:
        return rand(observation, info) if rng.random() < epsilon else expert(observation, info)

    return act


def build_times() -> tuple[float, float, int]:
    start = time.process_time()
    tasks = generate_tasks()
    tasks_s = time.process_time() - start
    load_tasks()
    start = time.process_time()
    for _ in range(100):
        ALFWorldRefEnv()
    construct_s = (time.process_time() - start) / 100
    return tasks_s, construct_s, len(tasks.train) + len(tasks.test)


def random_steps(steps: int) -> tuple[float, float, int]:
    env = ALFWorldRefEnv(max_steps=MAX_EPISODE_STEPS)
    policy = random_policy(0)
    obs, info = env.reset(seed=0)
    in_step, episodes = 0.0, 0
    cpu = time.process_time()
    for _ in range(steps):
        action = policy(obs, info)
        t = time.process_time()
        obs, _, terminated, truncated, info = env.step(action)
        in_step += time.process_time() - t
        if terminated or truncated:
            episodes += 1
            obs, info = env.reset()
    return steps / in_step, steps / (time.process_time() - cpu), episodes


def run_episode(env: ALFWorldRefEnv, policy: TextPolicy, task: Task) -> list[dict[str, Any]]:
    """One episode of at most the registered horizon, as a list of recorded steps."""
    obs, info = env.reset(options={"task": task})
    steps = []
    for _ in range(MAX_EPISODE_STEPS):
        action = policy(obs, info)
        next_obs, reward, terminated, _, info = env.step(action)
        steps.append(
            {
                "state": obs,
                "action": action,
                "next_state": next_obs,
                "reward": reward,
                "done": terminated,
                "action_valid": info["action_valid"],
            }
        )
        obs = next_obs
        if terminated:
            break
    return steps


def success(policy: TextPolicy, tasks: Sequence[Task]) -> tuple[float, float]:
    env = ALFWorldRefEnv(tasks=tasks)
    episodes = [run_episode(env, policy, task) for task in tasks]
    wins = sum(episode[-1]["reward"] == 1.0 for episode in episodes)
    return wins / len(tasks), sum(map(len, episodes)) / len(tasks)


def collect(episodes: int, out: Path) -> tuple[float, float, float]:
    """Expert trajectories of the train split to JSONL; CPU seconds, wall seconds, success rate."""
    tasks = load_tasks().train
    env, expert = ALFWorldRefEnv(), ALFWorldExpert()
    wins = 0
    cpu, wall = time.process_time(), time.perf_counter()
    with out.open("w", encoding="utf-8") as file:
        for i in range(episodes):
            task = tasks[i % len(tasks)]
            steps = run_episode(env, expert, task)
            wins += steps[-1]["reward"] == 1.0
            file.write(
                json.dumps({"task_id": task.id, "instruction": task.instruction, "steps": steps}) + "\n"
            )
    return time.process_time() - cpu, time.perf_counter() - wall, wins / episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100_000, help="random-policy steps to time")
    parser.add_argument("--episodes", type=int, default=1_000, help="expert trajectories to collect")
    parser.add_argument("--test-tasks", type=int, default=504, help="test tasks for the baselines")
    parser.add_argument("--epsilon", type=float, default=0.3, help="the noisy expert's random share")
    args = parser.parse_args()

    tasks_s, construct_s, num_tasks = build_times()
    env_sps, loop_sps, episodes = random_steps(args.steps)
    test = load_tasks().test[: args.test_tasks]
    expert_rate, expert_len = success(ALFWorldExpert(), test)
    noisy_rate, noisy_len = success(noisy_expert(args.epsilon, 0), test)
    random_rate, random_len = success(random_policy(0), test)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "expert.jsonl"
        collect_cpu, collect_wall, collect_rate = collect(args.episodes, out)
        size_mb = out.stat().st_size / 1e6

    rows = [
        (f"task generation ({num_tasks:,} tasks)", f"{tasks_s:.2f} s"),
        ("construct one more env", f"{construct_s * 1e6:.0f} us"),
        (f"random policy, env.step only ({args.steps:,} steps)", f"{env_sps:,.0f} steps/s"),
        (f"random policy, whole loop ({episodes:,} episodes)", f"{loop_sps:,.0f} steps/s"),
        (f"expert success / mean steps ({len(test)} test tasks)", f"{expert_rate:.3f} / {expert_len:.1f}"),
        (
            f"noisy expert (epsilon {args.epsilon}) success / mean steps",
            f"{noisy_rate:.3f} / {noisy_len:.1f}",
        ),
        ("random success / mean steps", f"{random_rate:.3f} / {random_len:.1f}"),
        (f"collect {args.episodes:,} expert trajectories (CPU)", f"{collect_cpu:.2f} s"),
        ("  the same, wall clock (with JSONL writing)", f"{collect_wall:.2f} s"),
        ("  their success / JSONL size", f"{collect_rate:.3f} / {size_mb:.1f} MB"),
    ]
    width = max(len(name) for name, _ in rows)
    print("ALFWorld reference env (one process, one core)")
    for name, value in rows:
        print(f"{name:<{width}}  {value:>16}")


if __name__ == "__main__":
    main()
