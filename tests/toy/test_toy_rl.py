"""RL adapters on the toy pack: ChoiceActions, EmbedObservation, SB3, SimToReal and the sim2real experiment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.wrappers.choice_actions import ChoiceActions
from dreamgym_env.wrappers.embed_observation import CANDIDATE_FEATURES, EmbedObservation
from dreamgym_env.wrappers.sim_to_real import SimToReal, SyntheticFirst

from .pack import ToyDomain, goal_of

COL = {name: i for i, name in enumerate(CANDIDATE_FEATURES)}
EMBEDDER = HashedEmbedder(32)


def steps_to_unlocked(env: ChoiceActions) -> None:
    """Take the expert's choices up to the door that wants the password (task: key in the library)."""
    for action in ("MOVE north", "GRAB key", "MOVE south", "UNLOCK door"):
        env.step(env.candidates.index(action))


def test_choice_actions_fill_the_password_slot_the_domains_way(toy, toy_task):
    env = ChoiceActions(toy.make_reference_env(max_steps=toy.max_episode_steps), max_actions=6)
    _, info = env.reset(options={"task": toy_task})
    assert info["action_candidates"] == ["MOVE north", "MOVE south"]
    assert env.action_masks().tolist() == [True, True, False, False, False, False]
    steps_to_unlocked(env)
    password = goal_of(toy_task).password
    assert env.candidates == ["MOVE north", "MOVE south", f"SAY {password}"]  # not the whole instruction
    _, _, _, _, info = env.step(2)
    assert info["action_text"] == f"SAY {password}" and info["action_valid"]
    assert "MOVE east" in info["action_candidates"]
    _, reward, terminated, _, info = env.step(5)  # a padding index: an invalid action
    assert info["action_text"] == "" and not info["action_valid"] and reward == 0.0 and not terminated


def test_choice_actions_play_the_synthetic_env(toy, toy_model, toy_task):
    env = ChoiceActions(DreamEnv(toy, toy_model, max_steps=4), max_actions=6)
    env.reset(options={"task": toy_task})
    env.step(0)  # MOVE north: the scripted model answers the vault
    claim = env.candidates.index(f"CLAIM {goal_of(toy_task).treasure}")
    _, reward, terminated, _, info = env.step(claim)
    assert terminated and reward == 1.0 and info["won"]


def test_embed_observation_takes_the_horizon_and_stop_words_from_the_domain(toy, toy_task):
    env = EmbedObservation(ChoiceActions(toy.make_reference_env(), max_actions=6), EMBEDDER)
    assert env.horizon == toy.max_episode_steps == 8
    assert env.domain_features == toy.observation_features() and "say" in env.domain_features.stopwords
    observation, _ = env.reset(options={"task": toy_task})
    assert env.observation_space.contains(observation) and observation["actions"].shape == (6, 32)
    assert observation["features"][:, COL["present"]].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert not observation["features"][2:].any() and not observation["actions"][2:].any()
    env.step(0)  # MOVE north, to the library
    observation, *_ = env.step(env.get_wrapper_attr("candidates").index("MOVE south"))
    assert env.get_wrapper_attr("candidates") == ["MOVE north", "MOVE south"]
    features = observation["features"]
    assert (
        features[0, COL["times_taken"]] == pytest.approx(1 / 3) and features[1, COL["is_last_action"]] == 1.0
    )
    assert observation["progress"][0] == pytest.approx(2 / 8)  # steps over the domain's horizon
    assert features[:2, COL["numbers_within"]].tolist() == [1.0, 1.0]  # no numeric bounds in this domain
    env.reset(options={"task": toy_task})
    for action in ("MOVE north", "GRAB key", "MOVE south", "UNLOCK door"):
        observation, *_ = env.step(env.get_wrapper_attr("candidates").index(action))
    candidates = env.get_wrapper_attr("candidates")
    say = candidates.index(f"SAY {goal_of(toy_task).password}")
    assert env.observation_space.contains(observation)
    # "say" is a stop word of the domain: the password is the whole label, and the instruction has it
    assert observation["features"][say, COL["label_recall"]] == 1.0
    assert observation["features"][candidates.index("MOVE north"), COL["label_recall"]] == 0.0


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sb3_check_env_passes_on_the_wrapped_toy_envs(toy, toy_model):
    from stable_baselines3.common.env_checker import check_env

    from dreamgym_env.rl.sb3 import wrap_for_sb3

    check_env(wrap_for_sb3(DreamEnv(toy, toy_model, max_steps=5), EMBEDDER, max_actions=6))
    check_env(wrap_for_sb3(toy.make_reference_env(max_steps=5), EMBEDDER, max_actions=6))


def test_sim_to_real_moves_the_agent_from_the_oracle_to_the_reference_env(toy, oracle):
    synthetic = DreamEnv(toy, oracle, max_steps=toy.max_episode_steps, split="test")
    real = toy.make_reference_env(split="test", max_steps=toy.max_episode_steps)
    env = SimToReal(synthetic, real, schedule=SyntheticFirst(episodes=2))
    assert env.domain is toy
    recorded = []
    env.add_real_step_listener(lambda task, step: recorded.append(step))
    sources, wins = [], 0
    for episode in range(4):
        observation, info = env.reset(seed=episode if episode == 0 else None)
        expert, done, step_sources = toy.expert_policy(), False, []
        while not done:
            observation, reward, terminated, truncated, info = env.step(expert(observation, info))
            step_sources.append(info["source"])
            done = terminated or truncated
        assert set(step_sources) == {info["source"]}
        sources.append(info["source"])
        wins += info["won"]
    assert sources == ["synthetic", "synthetic", "real", "real"] and wins == 4
    assert env.counts.real_episodes == 2 and env.counts.real_steps == len(recorded) > 0
    assert all(step.action_valid for step in recorded)


def test_the_sim2real_experiment_runs_on_the_toy_pack(toy, tmp_path: Path):
    pytest.importorskip("sb3_contrib")
    pytest.importorskip("matplotlib")
    from dreamgym_env.rl.sim2real import Sim2RealConfig, run_sim2real, with_overrides

    config = Sim2RealConfig(
        toy, real_steps=200, eval_tasks=3, workers=1, error_rates=(0.0, 0.3), out_dir=tmp_path
    )
    config = with_overrides(
        config, n_envs=2, n_steps=32, batch_size=32, n_epochs=1, max_actions=6, embed_dim=32
    )
    assert config.reward == "score"  # the toy reference env has a shaped score
    report = run_sim2real(config, log=lambda line: None)
    methods = sorted((r.method, r.error_rate or 0.0) for r in report.runs)
    assert methods == sorted(
        [
            ("PPO (real env)", 0.0),
            ("DreamGym-PPO", 0.0),
            ("DreamGym-PPO", 0.3),
            ("DreamGym-S2R-PPO", 0.0),
            ("DreamGym-S2R-PPO", 0.3),
            ("Random policy", 0.0),
        ]
    )
    assert report.find("PPO (real env)").real_steps == 200
    assert (
        report.find("DreamGym-PPO", 0.0).real_steps == 0
        and report.find("DreamGym-PPO", 0.0).synthetic_steps >= 200
    )
    assert 20 <= report.find("DreamGym-S2R-PPO", 0.3).real_steps < 20 + 2
    assert report.find("DreamGym-PPO", 0.3).model_stats["answers"] > 0
    assert all(r.eval_episodes == 3 for r in report.runs)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["config"]["domain"] == "toy" and len(saved["runs"]) == 6
    assert report.plot_path is not None and report.plot_path.read_bytes()[:4] == b"\x89PNG"


class Annex(ToyDomain):
    """The toy house under another name, never registered (module level: worker processes unpickle it)."""

    name = "annex"
    display_name = "Annex"


def test_sim2real_workers_take_an_unregistered_domain(tmp_path: Path):
    pytest.importorskip("sb3_contrib")
    pytest.importorskip("matplotlib")
    from dreamgym_env.rl.sim2real import Sim2RealConfig, run_sim2real, test_tasks, with_overrides

    config = Sim2RealConfig(Annex(), real_steps=64, eval_tasks=2, workers=2, out_dir=tmp_path)
    config = with_overrides(
        config, n_envs=2, n_steps=32, batch_size=32, n_epochs=1, max_actions=6, embed_dim=32
    )
    assert [t.domain for t in test_tasks(config)] == ["annex"] * 2
    report = run_sim2real(config, log=lambda line: None)  # two jobs in two worker processes
    assert report.find("PPO (real env)").real_steps == 64 and len(report.runs) == 4
    assert json.loads((tmp_path / "results.json").read_text())["config"]["domain"] == "annex"
