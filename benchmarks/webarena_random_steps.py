"""How often a random policy's step of the synthetic WebArena env raises (the shipped model failing).

Steps ``gym.make_vec("DreamGym/WebArena-v0", num_envs=8)`` with one seeded
:class:`~dreamgym_env.agents.RandomPolicy` a sub-env, each picking among its
``admissible_actions``. A vector step is all-or-nothing: when the model fails on any sub-env's
request the step raises, and the next try draws new actions for every sub-env.

Run: python benchmarks/webarena_random_steps.py [--steps 500] [--num-envs 8]
"""

from __future__ import annotations

import argparse
import collections
import time

import gymnasium as gym

import dreamgym_env  # noqa: F401  (registers the envs)
from dreamgym_env.agents import RandomPolicy
from dreamgym_env.errors import DreamGymError


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, default=500, help="sub-env steps in all (rounded up to whole vector steps)"
    )
    parser.add_argument("--num-envs", type=int, default=8)
    args = parser.parse_args()
    envs = gym.make_vec("DreamGym/WebArena-v0", num_envs=args.num_envs)
    policies = [RandomPolicy(seed=i) for i in range(args.num_envs)]
    observations, infos = envs.reset(seed=0)
    sub_infos = [{"admissible_actions": infos["admissible_actions"][i]} for i in range(args.num_envs)]
    tries = -(-args.steps // args.num_envs)
    raised, failed_requests, verbs = 0, 0, collections.Counter[str]()
    started = time.perf_counter()
    for step in range(tries):
        if step % 8 == 0:  # a long run on a shared machine: what it found so far
            print(f"{step} vector steps, {raised} raised", flush=True)
        actions = [
            policy(obs, info) for policy, obs, info in zip(policies, observations, sub_infos, strict=True)
        ]
        try:
            observations, _, _, _, infos = envs.step(actions)
        except DreamGymError as exc:
            raised += 1
            failed = list(getattr(exc, "sub_envs", ()) or range(args.num_envs))
            failed_requests += len(failed)
            verbs.update(actions[i].split(" ", 1)[0] for i in failed)
            continue
        sub_infos = [{"admissible_actions": infos["admissible_actions"][i]} for i in range(args.num_envs)]
    envs.close()
    print(
        f"{tries} vector steps ({tries * args.num_envs} sub-env actions) in {time.perf_counter() - started:.0f} s: "
        f"{raised} raised, {failed_requests} failed requests, by verb {dict(verbs)}"
    )


if __name__ == "__main__":
    main()
