"""Seconds per WebShop transition of the embedded local model, on real pages, grounded as in the demo.

Usage: python benchmarks/local_model.py [--episodes 2] [--steps 3] [--preset qwen-0.5b]

Plays expert episodes of the reference env (test split) and asks the local model for each of
their first steps, from the real page, with 4 demonstrations from a replay buffer of 40 expert
episodes (training split). Prints one row a transition (latency, tokens, load average when it
started) and a summary. The load average matters: llama.cpp's threads slow down sharply when
other jobs share the cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from dreamgym_env.agents.expert import expert_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.domain import PROMPT as WEBSHOP_PROMPT
from dreamgym_env.experience.local import LocalExperienceModel
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.grounding import ReplayGrounder
from dreamgym_env.types import ExperienceRequest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="first steps of each episode to predict")
    parser.add_argument(
        "--preset", default=None, help="model preset (default: DREAMGYM_LOCAL_MODEL_PRESET or qwen-0.5b)"
    )
    args = parser.parse_args()

    pack = get_domain("webshop")
    reference = pack.make_reference_env(split="test", max_steps=pack.max_episode_steps)
    episodes = collect_trajectories(reference, expert_policy(pack), args.episodes, seed=1, progress=False)
    train = pack.make_reference_env(split="train", max_steps=pack.max_episode_steps)
    buffer = ExperienceReplayBuffer(None, embedder="hashed")
    for trajectory in collect_trajectories(train, expert_policy(pack), 40, seed=0, progress=False):
        buffer.add_trajectory(trajectory, source="offline")
    grounder = ReplayGrounder(buffer, write_back=False)

    model = LocalExperienceModel(preset=args.preset)
    started = time.perf_counter()
    model.load()
    print(
        f"model {model.model_id}, {model.settings.n_threads} threads, load {time.perf_counter() - started:.1f} s"
    )
    print(f"{'action':42} {'seconds':>8} {'prompt':>7} {'output':>7} {'load avg':>9}")
    rows = []
    try:
        for trajectory in episodes:
            for step in trajectory.steps[: args.steps]:
                request = ExperienceRequest(prompt=WEBSHOP_PROMPT, task=trajectory.task, state=step.state, action=step.action)
                request = request.model_copy(update={"demonstrations": grounder.demonstrations(request)})
                load = os.getloadavg()[0]
                usage = model.predict_one(request).usage
                rows.append(usage.latency_s)
                print(
                    f"{step.action[:42]:42} {usage.latency_s:8.1f} {usage.prompt_tokens:7d} "
                    f"{usage.completion_tokens:7d} {load:9.1f}",
                    flush=True,
                )
    finally:
        model.close()
        buffer.close()
    print(
        f"transitions {len(rows)}: mean {statistics.fmean(rows):.1f} s, median {statistics.median(rows):.1f} s"
    )


if __name__ == "__main__":
    main()
