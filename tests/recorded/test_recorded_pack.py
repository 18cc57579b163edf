"""A pack with no simulator, end to end: learn its env from recorded episodes, synthesize, measure.

The recorded pack (``pack.py``) knows its world only from a file of recorded episodes. Its
model is trained from them (``experience build --trajectories``), its synthetic env is grounded
on them (``ReplayGrounding`` over a buffer of the recordings) and its fidelity is measured on
held-out recorded steps (``fidelity --trajectories``). Nothing may ask for a reference env, a
real env or an expert: the test fails if anything does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dreamgym_env.cli import app
from dreamgym_env.envs.registry import register_domain, unregister_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.experience.trained import TrainedModel
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.jsonl import read_trajectories
from dreamgym_env.training.build import BuildConfig, build_pack_model
from dreamgym_env.training.distill import ModelSize
from dreamgym_env.wrappers import ReplayGrounding

from .pack import HELD_OUT_FILE, TRAIN_FILE, RecordedDomain

pytest.importorskip("xllamacpp", reason="needs the local extra (llama.cpp) to run the built model")

TINY = ModelSize(hidden=32, layers=2, heads=2, ffn=64, context=2048)
SIMULATOR = ("make_reference_env", "make_real_env", "expert_policy")
"""What a pack without a simulator has not got: asking for any of them fails the test."""


@pytest.fixture(scope="module")
def recorded() -> Iterator[list[str]]:
    """The recorded pack, registered; yields the simulator parts anything asked for."""
    asked: list[str] = []

    def refuse(name: str) -> Any:
        def hook(*args: Any, **kwargs: Any) -> Any:
            asked.append(name)
            raise AssertionError(f"the recorded pack was asked for its {name}")

        return hook

    with pytest.MonkeyPatch.context() as patch:
        for name in SIMULATOR:
            patch.setattr(RecordedDomain, name, refuse(name))
        register_domain(RecordedDomain())
        try:
            yield asked
        finally:
            unregister_domain("recorded")


@pytest.fixture(scope="module")
def model(recorded: list[str], tmp_path_factory: pytest.TempPathFactory) -> TrainedModel:
    """A tiny model trained from the recordings alone, measured on the held-out file."""
    work = tmp_path_factory.mktemp("recorded-build")
    config = BuildConfig.for_kind(
        "distilled", steps=2, save_steps=1, eval_n=6, threads=1, size=TINY, vocab_size=300,
        max_minutes=5.0, trajectories=str(TRAIN_FILE), held_out=str(HELD_OUT_FILE), measure_base=False,
    )  # fmt: skip
    install = tmp_path_factory.mktemp("recorded-model")
    return build_pack_model("recorded", work, config, install=install, progress=False)


def test_the_model_records_what_it_learned_from(model: TrainedModel, recorded: list[str]):
    assert model.domain == "recorded" and model.supply == "none"
    manifest = json.loads((model.directory / "dreamgym-experience.json").read_text())
    assert manifest["data"]["trajectories"]["file"] == TRAIN_FILE.name
    assert manifest["evaluation"]["trained"]["n"] == 6  # held-out recorded steps
    assert "rollouts" not in manifest["evaluation"] or not manifest["evaluation"]["rollouts"]
    assert recorded == []


def test_synthetic_episodes_grounded_on_the_recordings(model: TrainedModel, recorded: list[str]):
    buffer = ExperienceReplayBuffer(None, embedder="hashed")
    assert buffer.load_jsonl(TRAIN_FILE) == len(read_trajectories(TRAIN_FILE))
    env = ReplayGrounding(
        DreamEnv("recorded", f"local:{model.directory}", supply="none", max_steps=4), buffer, k=2
    )
    try:
        for seed in range(2):
            observation, info = env.reset(seed=seed)
            assert info["source"] == "synthetic"
            done = False
            while not done:
                action = info["admissible_actions"][0]
                observation, reward, terminated, truncated, info = env.step(action)
                assert 0.0 <= reward <= 1.0
                assert info["world_lines"] == []  # nothing of a world the pack does not have
                if "error" not in info:  # answered: grounded on recorded steps, written by the model
                    assert info["demonstrations"] == 2 and info["model_share"] in (None, 1.0)
                done = terminated or truncated
    finally:
        env.close()
        buffer.close()
    assert recorded == []


def test_fidelity_on_held_out_recorded_steps(model: TrainedModel, recorded: list[str], tmp_path: Path):
    result = CliRunner().invoke(
        app,
        ["fidelity", "--trajectories", str(HELD_OUT_FILE), "--model", f"local:{model.directory}",
         "--n", "8", "--out", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "fidelity.json").read_text())
    assert '"n": 8' in json.dumps(report)
    assert recorded == []
