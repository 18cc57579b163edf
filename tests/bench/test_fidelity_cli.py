"""``dreamgym fidelity`` with the oracle: its numbers, its reports, its errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.cli import app
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.replay.jsonl import write_trajectories
from dreamgym_env.testing import ScriptedOpenAIServer

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def fidelity(tmp_path, *args: str) -> dict:
    result = runner.invoke(app, ["fidelity", *args, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| run | valid |" in result.stdout and "### By action type" in result.stdout
    return json.loads((tmp_path / "fidelity.json").read_text())


def test_the_oracle_scores_one_in_both_modes_with_every_report(tmp_path):
    data = fidelity(tmp_path, "--domain", "webshop", "--model", "oracle", "--n", "45", "--grounding", "none")
    assert (
        data["n"] == 45
        and data["model"] == "oracle (error rate 0)"
        and set(data["runs"])
        == {
            "structured/none",
            "text/none",
        }
    )
    for run in data["runs"].values():
        for name in ("exact_match", "similarity", "reward_agreement", "done_agreement", "accuracy", "valid"):
            assert run[name] == 1.0, name
        assert run["invalid_output"] == 0.0
        assert set(run["by_action"]) <= {"search", "click"} and "click" in run["by_action"]
        assert sum(report["n"] for report in run["by_action"].values()) == 45
    assert set(data["runs"]["structured/none"]["fields"]) >= {"kind", "query", "results"}
    assert data["runs"]["text/none"]["fields"] == {}
    assert (
        (tmp_path / "fidelity.md").read_text().startswith("## Fidelity of oracle (error rate 0) on webshop")
    )
    for plot in ("fidelity_by_action.png", "fidelity_by_field.png"):
        assert (tmp_path / plot).read_bytes()[:8] == PNG
    assert (tmp_path / "fidelity.html").read_text().startswith("<!DOCTYPE html>")


def test_the_oracle_with_error_rate_0_2_scores_about_0_8(tmp_path):
    n = 150
    data = fidelity(
        tmp_path, "--model", "oracle:0.2", "--n", str(n), "--modes", "structured", "--grounding", "none"
    )
    run = data["runs"]["structured/none"]
    # a corrupted answer is always wrong: accuracy is 1 - 0.2 within three standard errors
    assert run["accuracy"] == pytest.approx(0.8, abs=3 * math.sqrt(0.2 * 0.8 / n))
    assert run["valid"] == 1.0 and run["accuracy"] <= run["exact_match"] < 1.0
    by_action = run["by_action"]
    assert sum(r["n"] * r["accuracy"] for r in by_action.values()) == pytest.approx(n * run["accuracy"])


def test_a_domain_the_oracle_must_replay_gets_whole_episodes_and_grounding(tmp_path):
    domain = get_domain("alfworld")
    data = fidelity(
        tmp_path,
        "--domain",
        "alfworld",
        "--model",
        "oracle",
        "--n",
        "24",
        "--modes",
        "structured",
        "--k",
        "2",
    )
    assert data["history_len"] == domain.max_episode_steps
    assert set(data["runs"]) == {"structured/none", "structured/replay"}
    assert all(run["accuracy"] == 1.0 for run in data["runs"].values())
    # ALFWorld's rubric scores the goal on the state; its win ends the episode (the report's columns)
    assert all(
        run["rubric_reward_agreement"] == run["rubric_done_agreement"] == 1.0 for run in data["runs"].values()
    )
    assert "| rubric reward | rubric done |" in (tmp_path / "fidelity.md").read_text()
    assert {"go", "take"} <= set(data["runs"]["structured/none"]["by_action"])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--modes", "structured,pages"], "--modes takes a comma-separated list of structured, text"),
        (["--grounding", "rag"], "--grounding takes a comma-separated list of none, replay"),
        (["--model", "oracle:lots"], "oracle:<error_rate> needs a number in [0, 1], got 'lots'"),
        (["--model", "oracle:1.5"], "error_rate must be in [0, 1], got 1.5"),
        (["--model", "gpt"], "unknown experience model kind 'gpt'. Known: auto, endpoint, local, oracle"),
        (["--domain", "webshp"], "unknown domain 'webshp'. Did you mean 'webshop'?"),
        (["--supply", "world"], "--supply takes one of pack, replay, none; got 'world'"),
        (["--replay-from", "train.jsonl"], "--replay-from is the recorded episodes of --supply replay"),
        (
            ["--trajectories", "held-out.jsonl", "--supply", "replay"],
            "--supply replay with --trajectories needs --replay-from",
        ),
        (
            ["--trajectories", "held-out.jsonl", "--grounding", "replay", "--rollouts", "2"],
            "--trajectories measures the recorded steps as they are, without a reference env: "
            "--grounding, --rollouts cannot apply",
        ),
    ],
)
def test_bad_options_are_one_line_errors(args, expected, tmp_path):
    result = runner.invoke(app, ["fidelity", "--n", "3", *args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {expected}") and len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_an_endpoint_model_is_measured_with_its_tokens(tmp_path, monkeypatch):
    with ScriptedOpenAIServer(model_name="echo-model") as server:
        monkeypatch.setenv("DREAMGYM_BASE_URL", server.url)
        monkeypatch.delenv("DREAMGYM_API_KEY", raising=False)
        data = fidelity(
            tmp_path, "--model", "endpoint:echo-model", "--n", "6", "--modes", "text", "--grounding", "none"
        )
        asked = server.requests_total
    run = data["runs"]["text/none"]
    assert data["model"] == "echo-model" and asked == 6
    # the echo answers "after <action>": a valid transition, never the right page
    assert run["valid"] == 1.0 and run["invalid_output"] == 0.0 and run["exact_match"] == 0.0
    assert run["prompt_tokens"] > 0 and "echo-model" in (tmp_path / "fidelity.html").read_text()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """Structured noisy WebShop episodes of the reference env, as an offline JSONL file."""
    domain = get_domain("webshop")
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    trajectories = collect_trajectories(
        env, make_policy("noisy", domain, seed=3), 4, progress=False, state_mode="structured"
    )
    path = tmp_path_factory.mktemp("recorded") / "held-out.jsonl"
    write_trajectories(path, trajectories)
    return path


@pytest.fixture
def echo_endpoint(monkeypatch):
    """An endpoint model answering "after <action>", and the domain unable to make a reference env."""

    def no_reference_env(self, **kwargs):
        raise AssertionError("measuring recorded steps made a reference env")

    monkeypatch.setattr(type(get_domain("webshop")), "make_reference_env", no_reference_env)
    with ScriptedOpenAIServer(model_name="echo-model") as server:
        monkeypatch.setenv("DREAMGYM_BASE_URL", server.url)
        monkeypatch.delenv("DREAMGYM_API_KEY", raising=False)
        yield server


def test_recorded_steps_are_measured_without_a_reference_env(recorded, tmp_path, echo_endpoint):
    steps = sum(len(json.loads(line)["steps"]) for line in recorded.read_text().splitlines())
    args = ["--trajectories", str(recorded), "--model", "endpoint:echo-model"]
    data = fidelity(tmp_path / "none", *args)
    assert (
        data["supply"] == "none"
        and data["trajectories"] == str(recorded)
        and set(data["runs"]) == {"structured/none"}
    )
    run = data["runs"]["structured/none"]
    # "after <action>" is no WebShop state: every answer invalid (asked again), every step's truth measured
    assert 0 < data["n"] <= steps and echo_endpoint.requests_total >= data["n"]
    assert run["valid"] == 0.0 and run["model_share"] is None and run["supplied_share"] == {}
    assert run["true_model_share"] == 1.0  # without the pack's data the model writes every change
    assert 0.0 < run["always_zero_done"] < 1.0 and {"search", "click"} <= set(run["by_action"])
    markdown = (tmp_path / "none" / "fidelity.md").read_text()
    assert "| model share (true) | model share (answers) |" in markdown
    assert f"recorded transitions of {recorded}, supply none" in markdown
    assert "recorded transitions of" in (tmp_path / "none" / "fidelity.html").read_text()
    drawn = fidelity(tmp_path / "pack", *args, "--supply", "pack", "--n", "5")
    assert drawn["n"] == 5 and drawn["supply"] == "pack"
    assert drawn["runs"]["structured/none"]["true_model_share"] < 0.5  # the catalogue answers the rest


def test_replay_supply_gives_the_recorded_steps_of_its_episodes(recorded, tmp_path, echo_endpoint):
    args = ["--trajectories", str(recorded), "--model", "endpoint:echo-model", "--supply", "replay"]
    # every recorded step looked up in its own file: the recordings write every changed field
    data = fidelity(tmp_path / "self", *args, "--replay-from", str(recorded))
    run = data["runs"]["structured/none"]
    assert data["supply"] == "replay"
    assert run["true_model_share"] == 0.0 and run["true_supplied_share"]["replay"] > 0.5
    # episodes of other tasks hold none of these states: the model writes every change again
    empty = tmp_path / "other.jsonl"
    first = json.loads(recorded.read_text().splitlines()[0])
    first["steps"] = [{**step, "state": "{}"} for step in first["steps"]]
    empty.write_text(json.dumps(first) + "\n")
    data = fidelity(tmp_path / "other", *args, "--replay-from", str(empty))
    assert data["runs"]["structured/none"]["true_model_share"] == 1.0
