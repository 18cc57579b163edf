from __future__ import annotations

import json

import pytest

pytest.importorskip("stable_baselines3", reason="needs the extra that ships stable_baselines3")
pytest.importorskip("sb3_contrib", reason="needs the extra that ships sb3_contrib")
pytest.importorskip("matplotlib", reason="needs the extra that ships matplotlib")

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.rl.sim2real import (
    RunResult,
    Sim2RealConfig,
    Sim2RealReport,
    SyntheticSettings,
    _synthetic_env,
    choose_max_actions,
    make_experience_model,
    parse_error_rates,
    plot,
    random_baseline,
    run_sim2real,
    score_paid_at_end,
    synthetic_settings,
    with_overrides,
)


def tiny(tmp_path, **kwargs) -> Sim2RealConfig:
    config = Sim2RealConfig("webshop", real_steps=128, eval_tasks=3, workers=1, out_dir=tmp_path, **kwargs)
    return with_overrides(config, n_envs=2, n_steps=32, batch_size=32, n_epochs=1)


@pytest.mark.slow
def test_a_tiny_experiment_writes_the_table_the_results_and_the_plot(tmp_path):
    report = run_sim2real(tiny(tmp_path, error_rates=(0.0, 0.3)), log=lambda line: None)
    methods = [(r.method, r.error_rate) for r in report.runs]
    assert methods == [
        ("PPO (real env)", None),
        ("DreamGym-PPO", 0.0),
        ("DreamGym-PPO", 0.3),
        ("DreamGym-S2R-PPO", 0.0),
        ("DreamGym-S2R-PPO", 0.3),
        ("Random policy", None),
    ]
    reference = report.find("PPO (real env)")
    assert reference.real_steps == 128 and reference.synthetic_steps == 0
    synthetic = report.find("DreamGym-PPO", 0.0)
    assert synthetic.real_steps == 0 and synthetic.synthetic_steps >= 128
    s2r = report.find("DreamGym-S2R-PPO", 0.3)
    assert 12 <= s2r.real_steps < 12 + 2 and s2r.synthetic_steps >= synthetic.synthetic_steps
    assert all(r.eval_episodes == 3 and round(r.success * 3, 9) in (0, 1, 2, 3) for r in report.runs)
    assert report.find("Random policy").success == 0.0  # random buys the right item with p ~ 0.002
    stats = report.find("DreamGym-PPO", 0.3).model_stats
    assert stats["answers"] > 0 and "fallbacks" not in stats and not reference.model_stats
    assert stats["synthetic_steps_asked"] == s2r.synthetic_steps
    # a corrupted page with nothing to do ends its episode (a model failure); a perfect model has none
    assert 0 <= stats["failed_steps"] < stats["synthetic_steps_asked"] / 10
    assert report.find("DreamGym-PPO", 0.0).model_stats["failed_steps"] == 0
    assert "| PPO (real env) | - | 128 | 0 |" in report.table()
    assert report.plot_path is not None and report.plot_path.read_bytes()[:4] == b"\x89PNG"
    saved = json.loads((tmp_path / "results.json").read_text())
    assert len(saved["runs"]) == 6 and saved["config"]["error_rates"] == [0.0, 0.3]
    assert saved["config"]["ppo"]["max_actions"] == 32 and saved["config"]["reward"] == "score"
    assert saved["synthetic_env"] == {"state_mode": "text", "history_len": 4}
    assert (tmp_path / "table.md").read_text().startswith("| Method |")
    assert (tmp_path / "models" / "reference.zip").exists()


def test_the_webshop_experiment_keeps_its_settings():
    # K=32, text states, 4 steps of history and the purchase score, as the published table had
    config = Sim2RealConfig("webshop")
    assert config.reward == "score" and config.ppo.max_actions is None
    assert choose_max_actions("webshop") == (32, 17)
    assert synthetic_settings(config) == SyntheticSettings("text", 4)


def test_the_experiment_adapts_to_the_domain():
    # ALFWorld: the text lists no commands (structured states do), the oracle replays whole
    # episodes, rooms list up to ~45 commands, and the score is paid step by step
    alfworld = Sim2RealConfig("alfworld")
    assert synthetic_settings(alfworld) == SyntheticSettings("structured", 50)
    assert choose_max_actions("alfworld")[0] == 48 and alfworld.reward == "outcome"
    assert not score_paid_at_end("alfworld") and score_paid_at_end("webshop")
    # WebArena: pages list their actions, episodes are replayed, the score is paid at the end
    webarena = Sim2RealConfig("webarena")
    assert synthetic_settings(webarena) == SyntheticSettings("text", 30) and webarena.reward == "score"
    assert choose_max_actions("webarena")[0] == 40  # typed phrases and page values as candidates
    assert synthetic_settings(Sim2RealConfig("webarena", model="auto")).history_len == 4
    assert Sim2RealConfig("alfworld", reward="score").reward == "score"  # asked for: kept


def test_the_oracle_with_errors_keeps_episodes_going(tmp_path):
    model = make_experience_model("oracle", "webshop", error_rate=0.5, seed=3)
    env = DreamEnv("webshop", model, max_steps=6, split="train")
    for seed in range(6):
        observation, info = env.reset(seed=seed)
        done = False
        while not done:
            actions = [a.replace("<query>", info["task"].instruction) for a in info["admissible_actions"]]
            observation, _, terminated, truncated, info = env.step(actions[-1])
            assert f"Instruction: {info['task'].instruction}" in info["state"]  # the model's page
            done = terminated or truncated
    assert model.stats["corrupted_task"] + model.stats["corrupted_action"] > 0
    model.close()


def test_random_baseline_is_near_zero(tmp_path):
    assert random_baseline(tiny(tmp_path)).success <= 1 / 3


def test_config_checks():
    assert parse_error_rates("0, 0.05,0.1") == (0.0, 0.05, 0.1)
    with pytest.raises(ConfigurationError):
        parse_error_rates("0,x")
    with pytest.raises(UnknownNameError, match="ppo"):
        Sim2RealConfig("webshop", algo="ppp")
    with pytest.raises(UnknownNameError):
        Sim2RealConfig("webshop", model="gpt")
    with pytest.raises(ConfigurationError):
        Sim2RealConfig("webshop", error_rates=(1.5,))
    with pytest.raises(ConfigurationError, match="oracle"):
        Sim2RealConfig("webshop", model="endpoint", error_rates=(0.1,))
    assert Sim2RealConfig("webshop", real_steps=1000).s2r_budget == 100
    assert Sim2RealConfig("webshop", real_steps=1000).synthetic_budget == 1000


@pytest.mark.slow
def test_the_cli_command_runs_and_reports_bad_arguments(tmp_path):
    import typer
    from typer.testing import CliRunner

    from dreamgym_env.cli.sim2real import sim2real_command

    app = typer.Typer()
    app.command()(sim2real_command)
    runner = CliRunner()
    bad = runner.invoke(app, ["--algo", "dqn", "--out-dir", str(tmp_path)])
    assert bad.exit_code == 2 and "unknown algorithm 'dqn'" in bad.output
    args = ["--real-steps", "64", "--eval-tasks", "2", "--workers", "1", "--out-dir", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "DreamGym-S2R-PPO" in result.output and (tmp_path / "learning_curves.png").exists()


def test_the_synthetic_env_can_pay_the_domains_rubric_of_the_models_own_state(scripted_model):
    config = Sim2RealConfig(domain="webshop", model="local:distilled", synthetic_reward="rubric")
    env = _synthetic_env(config, scripted_model)  # the distilled model answers structured states
    assert env.state_mode == "structured" and env.reward_mode == "rubric"
    env.close()
    with pytest.raises(ConfigurationError, match=r"rubric.*structured"):
        Sim2RealConfig(domain="webshop", model="oracle", synthetic_reward="rubric")  # text states
    with pytest.raises(ConfigurationError, match="'model' or 'rubric'"):
        Sim2RealConfig(domain="webshop", synthetic_reward="oracle")  # type: ignore[arg-type]


def test_a_learned_models_plot_shows_each_methods_test_success(tmp_path, monkeypatch):
    """No error rate to plot against: the right panel is one bar a method, its height the test success."""
    import matplotlib.pyplot as plt

    runs = [
        RunResult("PPO (real env)", "-", None, 30_000, 0, 0.608, 500, curve_steps=[1, 2], curve_success=[0.0, 0.5]),
        RunResult("DreamGym-PPO", "local:distilled", None, 0, 30_208, 0.614, 500, curve_steps=[1], curve_success=[0.1]),
        RunResult("Random policy", "-", None, 0, 0, 0.008, 500),
    ]  # fmt: skip
    report = Sim2RealReport(Sim2RealConfig("webshop", model="local", eval_tasks=500), runs, seconds=1.0)
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to look at
    path = plot(report, tmp_path / "curves.png")
    assert path.read_bytes()[:4] == b"\x89PNG"
    right = figures[0].axes[1]
    assert [round(bar.get_height(), 1) for bar in right.patches] == [60.8, 61.4, 0.8]
    assert right.get_title() == "Test success (500 reference test tasks)"
    assert [label.get_text().split("\n")[0] for label in right.get_xticklabels()] == [r.method for r in runs]
