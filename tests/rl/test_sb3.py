from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="needs the extra that ships stable_baselines3")
pytest.importorskip("sb3_contrib", reason="needs the extra that ships sb3_contrib")
from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.vec_env import DummyVecEnv

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.rl.sb3 import (
    CandidatePolicy,
    EpisodeLog,
    TrainingMonitor,
    evaluate_policy_on_tasks,
    is_maskable,
    wrap_for_sb3,
)

EMBEDDER = HashedEmbedder(32)


def synthetic(model) -> DreamEnv:
    return DreamEnv("webshop", model, max_steps=5, split="test")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sb3_check_env_passes_on_the_wrapped_envs(scripted_model):
    check_env(wrap_for_sb3(synthetic(scripted_model), EMBEDDER, max_actions=8))
    check_env(wrap_for_sb3(WebShopRefEnv(split="test", max_steps=5), EMBEDDER, max_actions=8))


@pytest.mark.slow
def test_ppo_runs_2000_steps_on_a_wrapped_synthetic_env_and_learns_to_buy(scripted_model):
    # the scripted model answers every action with an item page whose [Buy Now] wins
    venv = DummyVecEnv([lambda: wrap_for_sb3(synthetic(scripted_model), EMBEDDER, max_actions=8)] * 4)
    model = PPO(CandidatePolicy, venv, n_steps=64, batch_size=64, n_epochs=4, learning_rate=3e-3, seed=0)
    monitor = TrainingMonitor()
    model.learn(2_000, callback=monitor)
    assert model.num_timesteps >= 2_000 and monitor.log.timesteps
    assert not is_maskable(model)
    tasks = get_domain("webshop").tasks("test")[:20]
    result = evaluate_policy_on_tasks(
        model, wrap_for_sb3(synthetic(scripted_model), EMBEDDER, max_actions=8), tasks
    )
    assert result.episodes == 20 and result.success == 1.0 and result.mean_steps == pytest.approx(2.0)


def test_maskable_ppo_with_the_candidate_policy(scripted_model):
    sb3_contrib = pytest.importorskip("sb3_contrib")
    from dreamgym_env.rl.sb3 import MaskableCandidatePolicy

    venv = DummyVecEnv([lambda: wrap_for_sb3(synthetic(scripted_model), EMBEDDER, max_actions=8)] * 2)
    model = sb3_contrib.MaskablePPO(
        MaskableCandidatePolicy, venv, n_steps=32, batch_size=32, n_epochs=2, seed=0
    )
    model.learn(256)
    assert is_maskable(model)
    obs = venv.reset()
    masks = np.stack(venv.env_method("action_masks"))
    for _ in range(20):  # sampled actions never fall on padding
        actions, _ = model.predict(obs, action_masks=masks, deterministic=False)
        assert all(masks[i, a] for i, a in enumerate(actions))


def test_monitor_counts_real_steps_and_stops_at_the_budget():
    venv = DummyVecEnv(
        [lambda: wrap_for_sb3(WebShopRefEnv(split="train", max_steps=5), EMBEDDER, max_actions=8)] * 2
    )
    model = PPO(CandidatePolicy, venv, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    monitor = TrainingMonitor(real_step_budget=50)
    model.learn(1_000, callback=monitor)
    assert monitor.real_steps == 50 and model.num_timesteps == 50


def test_episode_log_success_curve():
    log = EpisodeLog(timesteps=[5, 10, 15, 20], won=[True, False, True, True])
    steps, success = log.success_curve(window=2)
    assert steps.tolist() == [5, 10, 15, 20] and success.tolist() == [1.0, 0.5, 0.5, 1.0]
