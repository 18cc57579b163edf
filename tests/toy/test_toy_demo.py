"""``dreamgym demo --domain toy`` and the other commands on the toy pack."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from dreamgym_env.cli import app
from dreamgym_env.demo import run_demo
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.experience import selection
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import ExperienceRequest, Transition

from .pack import ToyDomain


@pytest.fixture(autouse=True)
def hashed_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replay retrieval with the dependency-free embedder."""
    monkeypatch.setenv("DREAMGYM_EMBEDDER", "hashed")


def test_dreamgym_demo_domain_toy(toy, monkeypatch: pytest.MonkeyPatch):
    built: list[dict[str, Any]] = []

    def oracle(**kwargs: Any) -> OracleExperienceModel:  # what `--model` would have chosen
        built.append(kwargs)
        return OracleExperienceModel(toy)

    monkeypatch.setattr(selection, "default_experience_model", oracle)
    result = CliRunner().invoke(app, ["demo", "--domain", "toy", "--episodes", "2", "--max-steps", "8"])
    assert result.exit_code == 0, result.output
    assert built == [
        {"trained": None, "domain": "toy", "cache": False}
    ]  # the toy pack ships no trained model
    text = result.output
    assert "episode 1 of 2" in text and "episode 2 of 2" in text and "toy-test-" in text
    assert "MOVE" in text and "CLAIM" in text and "Toy | done" in text
    assert "reward agreement" in text and "100%" in text


def test_run_demo_with_an_unregistered_domain_and_a_poor_model(toy):
    class Annex(ToyDomain):
        name = "annex"
        display_name = "Annex"

    def stuck(request: ExperienceRequest) -> Transition:
        return Transition(reasoning="nothing happens", next_state=request.state)

    model = ScriptedExperienceModel(stuck)
    out = io.StringIO()
    summary = run_demo(
        domain=Annex(),
        experience_model=model,
        episodes=1,
        max_steps=3,
        replay_episodes=4,
        console=Console(file=out, width=140),
        progress=False,
    )
    model.close()
    assert summary.domain == "annex" and summary.steps == 3 and summary.replay_transitions > 4
    assert (
        summary.state_similarity < 1.0 and summary.same_page_share == 1.0
    )  # restorable: the reference follows
    assert all(request.task.domain == "annex" and request.demonstrations for request in model.requests)
    assert summary.records[0].reference_state.startswith("Toy | ")


def test_dreamgym_episode_and_collect_on_the_reference_env(toy, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["episode", "--domain", "toy", "--reference", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "DreamGym/Toy-Ref-v0" in result.output and "return 1, won=True" in result.output
    out = tmp_path / "toy.jsonl"
    result = runner.invoke(app, ["collect", "--domain", "toy", "--episodes", "5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "collected 5 expert episodes of toy" in result.output and "success 1.000" in result.output
    assert len(out.read_text().splitlines()) == 5
