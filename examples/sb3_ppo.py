"""Train a PPO agent on a DreamGym env with Stable-Baselines3, then test it on the real env.

The text env is made RL-library-ready by two wrappers: ChoiceActions (Discrete over the
admissible actions, with masks) and EmbedObservation (task, page and one feature row per
candidate action). The candidate policy scores every candidate with one shared network.
The experience model is the one ``gym.make`` gives: an endpoint where ``DREAMGYM_BASE_URL`` is
set, else the pack's trained model, run offline.

    python examples/sb3_ppo.py                                  # synthetic WebShop, its default model
    python examples/sb3_ppo.py --model oracle                   # the reference env as the model (analysis)
    python examples/sb3_ppo.py --env-id DreamGym/WebShop-Ref-v0 # the reference env instead
    python examples/sb3_ppo.py --model endpoint                 # an LLM experience model (DREAMGYM_BASE_URL)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field, fields

import gymnasium as gym
import torch
from stable_baselines3.common.vec_env import DummyVecEnv

import dreamgym_env  # noqa: F401  (registers the DreamGym ids)
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.rl.sb3 import TrainingMonitor, evaluate_policy_on_tasks, wrap_for_sb3
from dreamgym_env.rl.sim2real import RewardKind, make_experience_model


@dataclass
class Options:
    env_id: str = field(default="DreamGym/WebShop-v0", metadata={"help": "Gymnasium id to train on"})
    model: str = field(
        default="auto",
        metadata={
            "help": "experience model of a synthetic id: auto (what gym.make gives), oracle, endpoint, local"
        },
    )
    error_rate: float = field(default=0.0, metadata={"help": "the oracle's share of corrupted transitions"})
    reward: str = field(
        default="score", metadata={"help": "score (WebShop's purchase score) or outcome (1 if completed)"}
    )
    total_steps: int = field(default=30_000, metadata={"help": "environment steps of training"})
    num_envs: int = field(
        default=8, metadata={"help": "envs stepped side by side (one batch through the policy)"}
    )
    n_steps: int = field(default=64, metadata={"help": "steps per env per PPO rollout"})
    learning_rate: float = field(default=2e-3, metadata={"help": "Adam learning rate"})
    embed_dim: int = field(default=64, metadata={"help": "width of the hashed text embeddings"})
    max_actions: int = field(default=32, metadata={"help": "candidate actions the policy chooses among"})
    eval_tasks: int = field(
        default=100, metadata={"help": "test tasks the trained agent is evaluated on (real env)"}
    )
    seed: int = field(default=0, metadata={"help": "seed of PPO, the envs and the evaluation"})
    save_path: str = field(
        default="", metadata={"help": "where to save the trained model (empty: not saved)"}
    )
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


def main(options: Options) -> float:
    # -- setup --------------------------------------------------------------------------------
    torch.set_num_threads(1)
    spec = gym.spec(options.env_id)
    domain = get_domain(spec.kwargs["domain"])  # every DreamGym id names its domain pack
    synthetic = spec.entry_point == "dreamgym_env.envs.synthetic:DreamEnv"
    env_kwargs: dict = {"reward": options.reward} if not synthetic else {}
    experience_model = None
    if synthetic:
        reward: RewardKind = "score" if options.reward == "score" else "outcome"
        experience_model = make_experience_model(
            options.model, domain.name, error_rate=options.error_rate, reward=reward, seed=options.seed
        )
        env_kwargs["experience_model"] = experience_model  # one model, shared by every sub-env
        print(f"experience model: {experience_model.describe()}")
    else:
        print(f"experience model: none, {options.env_id} is the reference env")
    embedder = HashedEmbedder(options.embed_dim)

    def make_env() -> gym.Env:
        return wrap_for_sb3(gym.make(options.env_id, **env_kwargs), embedder, max_actions=options.max_actions)

    envs = DummyVecEnv([make_env] * options.num_envs)
    try:
        from sb3_contrib import MaskablePPO as Algorithm

        from dreamgym_env.rl.sb3 import MaskableCandidatePolicy as Policy
    except ImportError:  # plain PPO: padding slots are left to the env (invalid actions)
        from stable_baselines3 import PPO as Algorithm  # type: ignore[assignment]

        from dreamgym_env.rl.sb3 import CandidatePolicy as Policy  # type: ignore[assignment]
    agent = Algorithm(
        Policy,
        envs,
        n_steps=options.n_steps,
        batch_size=128,
        n_epochs=4,
        learning_rate=options.learning_rate,
        ent_coef=0.01,
        seed=options.seed,
        verbose=0,
    )

    # -- the loop -----------------------------------------------------------------------------
    monitor = TrainingMonitor(progress_every_s=options.progress_every_s or None)
    started = time.perf_counter()
    agent.learn(options.total_steps, callback=monitor)
    recent = monitor.log.won[-200:]
    print(
        f"trained {agent.num_timesteps:,} steps in {time.perf_counter() - started:.0f} s; "
        f"training success over the last {len(recent)} episodes: {sum(recent) / max(1, len(recent)):.1%}"
    )

    # -- the result: success on the real env's test tasks ---------------------------------------
    test_env = wrap_for_sb3(
        domain.make_reference_env(split="test", max_steps=domain.max_episode_steps),
        embedder,
        max_actions=options.max_actions,
    )
    result = evaluate_policy_on_tasks(
        agent, test_env, domain.tasks("test")[: options.eval_tasks], seed=options.seed
    )
    print(
        f"real-env test success: {result.success:.1%} over {result.episodes} tasks "
        f"({result.mean_steps:.1f} steps per episode)"
    )
    if options.save_path:
        agent.save(options.save_path)
    if experience_model is not None:
        experience_model.close()
    return result.success


if __name__ == "__main__":
    main(parse_options())
