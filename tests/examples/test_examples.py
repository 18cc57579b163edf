"""Tiny-budget smoke tests of the scripts in examples/ (they must run top to bottom)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("stable_baselines3", reason="needs the extra that ships stable_baselines3")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_sb3_ppo_example_runs_with_a_tiny_budget(capsys):
    example = load("sb3_ppo")
    options = example.Options(
        model="oracle", total_steps=256, num_envs=2, n_steps=32, eval_tasks=3, error_rate=0.1
    )
    success = example.main(options)
    out = capsys.readouterr().out
    assert out.startswith("experience model: the oracle: the webshop reference env, error rate 0.1\n")
    assert "trained 256 steps" in out
    assert f"real-env test success: {success:.1%} over 3 tasks" in out  # the rate over 3 evaluated tasks
    assert round(success * 3, 9) in (0, 1, 2, 3)


def test_sb3_ppo_example_on_the_reference_env(capsys):
    example = load("sb3_ppo")
    example.main(
        example.Options(
            env_id="DreamGym/WebShop-Ref-v0",
            total_steps=128,
            num_envs=2,
            n_steps=32,
            eval_tasks=2,
            progress_every_s=1e-9,  # a progress line at every step
        )
    )
    out = capsys.readouterr().out
    assert out.startswith("experience model: none, DreamGym/WebShop-Ref-v0 is the reference env\n")
    assert "\n2 steps, 0 episodes (none finished yet), " in out and "\n128 steps, " in out
    assert "over 2 tasks" in out


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_trl_grpo_example_runs_one_step(tmp_path, capsys):
    pytest.importorskip("trl")
    example = load("trl_grpo")
    steps = example.main(
        example.Options(
            model="oracle",
            num_tasks=2,
            num_generations=2,
            batch_size=4,
            steps=1,
            max_turns=3,
            output_dir=str(tmp_path),
        )
    )
    assert len(steps) == 1 and "reward" in steps[0]
    out = capsys.readouterr().out
    assert out.startswith("experience model: the oracle: the webshop reference env, error rate 0\n")
    assert "step 1/1: mean episode reward " in out and "1 GRPO steps" in out


@pytest.mark.slow
def test_sim2real_example_runs_its_three_agents_with_a_tiny_budget(capsys):
    example = load("sim2real_ppo")
    results = example.main(
        example.Options(model="oracle", real_steps=128, num_envs=2, n_steps=32, eval_tasks=3, error_rate=0.1)
    )
    assert list(results) == ["PPO (real env)", "DreamGym-PPO", "DreamGym-S2R-PPO"]
    assert all(round(success * 3, 9) in (0, 1, 2, 3) for success in results.values())
    out = capsys.readouterr().out
    assert "DreamGym-PPO, 128 synthetic steps: " in out and "of 3 test tasks" in out
    assert "then 12 real steps" in out or "then 13 real steps" in out
    assert "could not answer (episode ended): 0" in out


def test_every_example_defaults_to_the_model_gym_make_gives():
    for name in ("sb3_ppo", "trl_grpo", "sim2real_ppo"):
        example = load(name)
        assert example.Options().model == "auto"
        assert "--model oracle" in example.__doc__  # the oracle stays one option away


def test_every_option_has_a_one_line_help():
    for name in ("sb3_ppo", "trl_grpo", "sim2real_ppo"):
        example = load(name)
        for field in example.fields(example.Options):
            assert field.metadata["help"] and "\n" not in field.metadata["help"]
