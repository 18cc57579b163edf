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
from dreamgym_env.errors import ConfigurationError
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


class FakeClock:
    """A clock the test moves by hand: progress lines are checked without sleeping."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def drive(monitor: TrainingMonitor, clock: FakeClock, seconds: float, won: bool | None = None) -> None:
    """One vector step of two sub-envs, ``seconds`` after the last; the first ends an episode unless ``won`` is None."""
    clock.now += seconds
    monitor.num_timesteps += 2
    monitor.locals = {
        "infos": [{"won": bool(won), "source": "real"}, {"source": "real"}],
        "dones": np.array([won is not None, False]),
    }
    monitor._on_step()


def test_training_monitor_reports_progress_exactly_when_due():
    clock, lines = FakeClock(), []
    monitor = TrainingMonitor(progress_every_s=30.0, report=lines.append, clock=clock)
    monitor._on_training_start()
    drive(monitor, clock, 29.9)
    assert lines == []
    drive(monitor, clock, 0.1, won=True)  # 30 s after training started
    assert lines == ["4 steps, 1 episodes (success 100.0% over the last 1), 0.1 steps/s"]
    for _ in range(29):
        drive(monitor, clock, 1.0, won=False)
    assert len(lines) == 1  # 29 s after the last line
    drive(monitor, clock, 1.0)
    assert lines[1] == "64 steps, 30 episodes (success 3.3% over the last 30), 2.0 steps/s"


def test_training_monitor_progress_names_the_real_step_budget_and_is_off_by_default():
    clock, lines = FakeClock(), []
    budgeted = TrainingMonitor(real_step_budget=100, progress_every_s=5.0, report=lines.append, clock=clock)
    budgeted._on_training_start()
    drive(budgeted, clock, 5.0)
    assert lines == ["2 steps, 0 episodes (none finished yet), 2 of 100 real steps, 0.4 steps/s"]
    silent = TrainingMonitor(report=lines.append, clock=clock)
    silent._on_training_start()
    drive(silent, clock, 3_600.0)
    assert len(lines) == 1
    with pytest.raises(ConfigurationError, match="progress_every_s must be > 0"):
        TrainingMonitor(progress_every_s=0)


def test_episode_log_success_curve():
    log = EpisodeLog(timesteps=[5, 10, 15, 20], won=[True, False, True, True])
    steps, success = log.success_curve(window=2)
    assert steps.tolist() == [5, 10, 15, 20] and success.tolist() == [1.0, 0.5, 0.5, 1.0]
