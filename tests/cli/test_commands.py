"""The ``dreamgym`` command as a user meets it: errors in one line, summaries, progress, stops."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from dreamgym_env.cli import app
from dreamgym_env.replay.jsonl import read_trajectories
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import ExperienceRequest, Transition

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["demo", "--domain", "alfworldx"], "unknown domain 'alfworldx'. Did you mean 'alfworld'?"),
        (["episode", "--domain", "webshp"], "unknown domain 'webshp'. Did you mean 'webshop'?"),
        (["episode", "--reference", "--policy", "exprt"], "unknown policy 'exprt'. Did you mean 'expert'?"),
        (
            ["collect", "--out", "never.jsonl", "--policy", "nosy"],
            "unknown policy 'nosy'. Did you mean 'noisy'?",
        ),
    ],
)
def test_unknown_names_are_one_line_with_the_closest_match(args, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {expected} Known: ")
    assert "Traceback" not in result.output and "╭" not in result.output
    assert not (tmp_path / "never.jsonl").exists()


def test_unknown_domain_lists_the_known_names():
    result = runner.invoke(app, ["episode", "--domain", "nothing-like-it"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: unknown domain 'nothing-like-it'. Known: alfworld, webarena, webshop"
    )


def test_collect_ends_with_a_readable_summary(tmp_path):
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["collect", "--out", str(out), "--episodes", "5", "--seed", "1"])
    assert result.exit_code == 0, result.output
    summary = result.stdout.strip().splitlines()[-1]
    assert summary.startswith("collected 5 expert episodes of webshop (train split): ")
    assert "transitions" in summary and "success 1.000" in summary and summary.endswith(f"→ {out}")
    assert "CollectSummary" not in result.output and "{" not in summary
    assert len(out.read_text().splitlines()) == 5


def test_collect_records_abstract_states_for_a_structured_model(tmp_path):
    out = tmp_path / "structured.jsonl"
    result = runner.invoke(
        app, ["collect", "--out", str(out), "--episodes", "2", "--state-mode", "structured"]
    )
    assert result.exit_code == 0, result.output
    (first, _) = read_trajectories(out)
    assert first.metadata["state_mode"] == "structured"
    assert json.loads(first.steps[0].next_state)["kind"] != ""  # a WebShopState's JSON, not page text
    bad = runner.invoke(app, ["collect", "--out", str(out), "--state-mode", "json"])
    assert bad.exit_code == 2 and "--state-mode" in bad.output


def test_collect_records_any_env_of_a_domain_by_its_id(tmp_path):
    out = tmp_path / "alfworld.jsonl"
    result = runner.invoke(
        app,
        [
            "collect",
            "--env",
            "DreamGym/ALFWorld-Ref-v0",
            "--policy",
            "random",
            "--episodes",
            "2",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "random episodes of alfworld" in result.stdout  # the id's domain, not the default one
    assert {t.task.domain for t in read_trajectories(out)} == {"alfworld"}


def test_collect_into_a_file_writes_a_few_progress_lines_not_one_per_episode(tmp_path):
    stdout, stderr = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with stdout.open("w") as out, stderr.open("w") as err:
        process = subprocess.run(
            [
                sys.executable,
                "-c",
                "from dreamgym_env.cli import main; main()",
                "collect",
                "--out",
                str(tmp_path / "c.jsonl"),
                "--episodes",
                "200",
                "--policy",
                "noisy",
            ],
            stdout=out,
            stderr=err,
            timeout=300,
            check=False,
        )
    assert process.returncode == 0, stderr.read_text()
    progress = [
        chunk for chunk in stderr.read_text().replace("\r", "\n").splitlines() if "collect noisy" in chunk
    ]
    assert 1 <= len(progress) <= 4, progress  # first draw, the close, perhaps one every 30 s
    assert "200/200" in progress[-1]
    assert stdout.read_text().startswith("collected 200 noisy episodes")


def _results_page(request: ExperienceRequest) -> Transition:
    """A results page with nothing but [Back to Search]: the expert's `< Prev` is invalid on it."""
    return Transition(
        reasoning="no results",
        next_state=f"WebShop | search results\nInstruction: {request.task.instruction}\n"
        "Page 1 (Total results: 0)\n[Back to Search]\nNo results.",
    )


def _bare_page(request: ExperienceRequest) -> Transition:
    return Transition(reasoning="a page without labels", next_state="WebShop | nothing to click here")


def _expert_episode(monkeypatch, respond) -> tuple[Any, ScriptedExperienceModel]:
    """``dreamgym episode`` of the expert on WebShop in text mode, the model answering ``respond``."""
    model = ScriptedExperienceModel(respond)
    monkeypatch.setattr("dreamgym_env.experience.selection.default_experience_model", lambda *a, **k: model)
    result = runner.invoke(
        app, ["episode", "--domain", "webshop", "--policy", "expert", "--state-mode", "text"]
    )
    assert result.exit_code == 0, result.output
    return result, model


def test_synthetic_episode_stops_when_it_cannot_usefully_go_on(monkeypatch):
    result, model = _expert_episode(monkeypatch, _results_page)
    assert "stopped: the scripted policy repeats an action that is invalid on this page" in result.stdout
    assert model.calls == 1  # the first search; nothing after the stop
    assert "truncated=True" not in result.stdout  # stopped long before the step limit
    assert result.stdout.count("─ action: ") <= 2  # the search, at most one rejected click


def test_a_synthetic_page_with_no_action_ends_the_episode_with_the_models_error(monkeypatch):
    result, model = _expert_episode(monkeypatch, _bare_page)
    shown = " ".join(result.stdout.split())  # the console wraps long lines
    assert "error: ModelOutputError: " in shown and "the next state offers no action" in shown
    assert "truncated=True" in shown and model.calls == 1


def test_reference_episode_runs_to_its_end():
    result = runner.invoke(app, ["episode", "--reference", "--domain", "webshop", "--policy", "expert"])
    assert result.exit_code == 0, result.output
    assert "stopped:" not in result.stdout and "won=True" in result.stdout


def command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and group of the CLI, as the words that invoke it."""
    paths = [path]
    for name, sub in getattr(command, "commands", {}).items():  # a group's subcommands
        paths += command_paths(sub, (*path, name))
    return paths


def test_help_at_80_columns_cuts_no_word():
    """Issue 30, item 6: rich's option tables cut long words (``DreamGym/WebShop-…``) at 80 columns."""
    paths = command_paths(typer.main.get_command(app))
    assert ("bench",) in paths and ("experience", "build") in paths
    helps = {}
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
        assert result.exit_code == 0, (path, result.output)
        assert max(map(len, result.output.splitlines())) <= 80, path
        assert "…" not in result.output, path
        helps[path] = " ".join(result.output.split())  # the words, whatever the wrapping
    assert "e.g. DreamGym/WebShop-v0 or DreamGym/WebShop-Ref-v0" in helps[("bench",)]
    assert "(default runs/experience/<domain>-<kind>)" in helps[("experience", "build")]
    assert "(DREAMGYM_BASE_URL, DREAMGYM_MODEL, ...)" in helps[("serve",)]
