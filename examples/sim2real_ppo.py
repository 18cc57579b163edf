"""Sim-to-real with PPO, top to bottom: real PPO vs DreamGym-PPO vs DreamGym-S2R-PPO on one domain.

Three agents, each tested on the reference env's test tasks:
1. PPO on the real env (the reference env) for N steps;
2. DreamGym-PPO: the same PPO on the synthetic env only (an experience model answers every
   step), N synthetic steps and no real one;
3. DreamGym-S2R-PPO: agent 2, then N/10 more steps on the real env (SimToReal switches the
   source at the next reset).

The experience model is the one ``gym.make`` gives: an endpoint where ``DREAMGYM_BASE_URL`` is
set, else the pack's trained model, run offline.

    python examples/sim2real_ppo.py                              # WebShop, its default model
    python examples/sim2real_ppo.py --model oracle               # the reference env as the model (analysis)
    python examples/sim2real_ppo.py --domain alfworld --reward outcome

`dreamgym experiment sim2real` runs the same experiment with more (error-rate sweeps, runs in
parallel, a table, learning curves): `dreamgym_env.rl.sim2real`.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field, fields

import gymnasium as gym
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import DummyVecEnv

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.rl.sb3 import (
    MaskableCandidatePolicy,
    TrainingMonitor,
    evaluate_policy_on_tasks,
    wrap_for_sb3,
)
from dreamgym_env.rl.sim2real import RewardKind, Sim2RealConfig, make_experience_model, synthetic_settings
from dreamgym_env.wrappers import SimToReal


@dataclass
class Options:
    domain: str = field(default="webshop", metadata={"help": "domain pack: webshop, alfworld, webarena"})
    model: str = field(
        default="auto",
        metadata={
            "help": "experience model: auto (what gym.make gives), oracle, local, local:distilled, endpoint"
        },
    )
    error_rate: float = field(default=0.0, metadata={"help": "the oracle's share of corrupted transitions"})
    reward: str = field(
        default="score", metadata={"help": "score (the domain's score) or outcome (1 if completed)"}
    )
    real_steps: int = field(default=30_000, metadata={"help": "N: steps of real PPO and of DreamGym-PPO"})
    num_envs: int = field(default=8, metadata={"help": "envs stepped side by side"})
    n_steps: int = field(default=64, metadata={"help": "steps per env per PPO rollout"})
    max_actions: int = field(default=32, metadata={"help": "K: candidate actions the policy chooses among"})
    eval_tasks: int = field(default=500, metadata={"help": "test tasks every agent is evaluated on"})
    seed: int = field(default=0, metadata={"help": "seed of PPO, the envs, the model and the evaluation"})
    progress_every_s: float = field(
        default=30.0, metadata={"help": "seconds between progress lines while training (0: none)"}
    )


def parse_options() -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for f in fields(Options):
        parser.add_argument(
            f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default, help=f.metadata["help"]
        )
    return Options(**vars(parser.parse_args()))


def main(options: Options) -> dict[str, float]:
    # -- setup ----------------------------------------------------------------------------------
    torch.set_num_threads(1)
    domain = get_domain(options.domain)
    embedder = HashedEmbedder(64)
    reward: RewardKind = "score" if options.reward == "score" else "outcome"
    experience_model = make_experience_model(
        options.model, domain, error_rate=options.error_rate, reward=reward, seed=options.seed
    )
    print(f"experience model: {experience_model.describe()}")
    # the state mode and history the experiment gives this model (a trained model: the mode it learned)
    settings = synthetic_settings(Sim2RealConfig(domain=domain.name, model=options.model, reward=reward))

    def real_env(split: str) -> gym.Env:
        return domain.make_reference_env(split=split, max_steps=domain.max_episode_steps, reward=reward)

    def synthetic_env() -> DreamEnv:
        # a step the model cannot answer ends that episode truncated (info["error"]), not the run
        return DreamEnv(
            domain,
            experience_model,
            max_steps=domain.max_episode_steps,
            split="train",
            state_mode=settings.state_mode,
            history_len=settings.history_len,
        )

    def ppo(envs: DummyVecEnv) -> MaskablePPO:
        return MaskablePPO(
            MaskableCandidatePolicy,
            envs,
            n_steps=options.n_steps,
            batch_size=128,
            n_epochs=4,
            learning_rate=2e-3,
            ent_coef=0.01,
            seed=options.seed,
            verbose=0,
        )

    test_env = wrap_for_sb3(real_env("test"), embedder, max_actions=options.max_actions)
    test_tasks = domain.tasks("test")[: options.eval_tasks]

    def monitor(agent_name: str, real_step_budget: int | None = None) -> TrainingMonitor:
        return TrainingMonitor(
            real_step_budget,
            progress_every_s=options.progress_every_s or None,
            report=lambda line: print(f"  {agent_name}: {line}"),
        )

    def test(agent: MaskablePPO, name: str, started: float) -> float:
        result = evaluate_policy_on_tasks(agent, test_env, test_tasks, seed=options.seed)
        print(
            f"{name}: {result.success:.1%} of {result.episodes} test tasks ({time.perf_counter() - started:.0f} s)"
        )
        return result.success

    results: dict[str, float] = {}

    # -- 1. PPO on the real env -------------------------------------------------------------------
    started = time.perf_counter()
    real = DummyVecEnv(
        [lambda: wrap_for_sb3(real_env("train"), embedder, max_actions=options.max_actions)]
        * options.num_envs
    )
    agent = ppo(real)
    agent.learn(options.real_steps, callback=monitor("PPO"))
    results["PPO (real env)"] = test(agent, f"PPO, {agent.num_timesteps:,} real steps", started)

    # -- 2. DreamGym-PPO: synthetic steps only ------------------------------------------------------
    started = time.perf_counter()
    sides: list[SimToReal] = []

    def sim_to_real() -> gym.Env:
        sides.append(SimToReal(synthetic_env(), real_env("train")))  # synthetic until switched
        return wrap_for_sb3(sides[-1], embedder, max_actions=options.max_actions)

    agent = ppo(DummyVecEnv([sim_to_real] * options.num_envs))
    agent.learn(options.real_steps, callback=monitor("DreamGym-PPO"))
    synthetic_steps = agent.num_timesteps
    results["DreamGym-PPO"] = test(agent, f"DreamGym-PPO, {synthetic_steps:,} synthetic steps", started)

    # -- 3. DreamGym-S2R-PPO: the same agent, then a tenth of the real steps -----------------------------
    for side in sides:
        side.switch("real")  # every sub-env moves to the real env at its next reset
    s2r = monitor("DreamGym-S2R-PPO", real_step_budget=options.real_steps // 10)
    agent.learn(options.real_steps, callback=s2r, reset_num_timesteps=False)  # the budget stops it
    results["DreamGym-S2R-PPO"] = test(
        agent, f"DreamGym-S2R-PPO, then {s2r.real_steps:,} real steps", started
    )
    failed = sum(side.synthetic_env.unwrapped.model_failures for side in sides)  # type: ignore[attr-defined]
    print(f"synthetic steps the model could not answer (episode ended): {failed}")
    experience_model.close()
    return results


if __name__ == "__main__":
    main(parse_options())
