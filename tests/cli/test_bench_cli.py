"""``dreamgym bench``: the table on stdout, bench.md/json/png in --out, one-line errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dreamgym_env.cli import app
from dreamgym_env.testing import ScriptedOpenAIServer
from dreamgym_env.testing.replies import ok

pytest.importorskip("matplotlib")

runner = CliRunner()
REF, SYN = "DreamGym/WebShop-Ref-v0", "DreamGym/WebShop-v0"


def test_bench_writes_table_json_and_plot_with_the_oracle_on_the_synthetic_id(tmp_path):
    out = tmp_path / "report"
    args = ["bench", "--agent", "expert", "--agent", "random", "--env", REF, "--env", SYN]
    args += ["--model", "oracle", "--episodes", "6", "--seed", "2", "--out", str(out), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [
        line
        for line in result.stdout.splitlines()
        if line.startswith("| expert") or line.startswith("| random")
    ]
    assert len(rows) == 4 + 2  # four runs, two sim-to-real gaps
    assert f"| expert | {SYN} | oracle | 6 | 1.000 [" in result.stdout
    data = json.loads((out / "bench.json").read_text())
    assert [(r["agent"], r["env_id"]) for r in data["results"]] == [
        ("expert", REF),
        ("random", REF),
        ("expert", SYN),
        ("random", SYN),
    ]
    assert all(len(r["records"]) == 6 and r["seed"] == 2 for r in data["results"])
    assert [g["agent"] for g in data["sim_to_real_gaps"]] == ["expert", "random"]
    assert (out / "bench.md").read_text() in result.stdout
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_runs_an_llm_agent_on_an_endpoint(tmp_path):
    with ScriptedOpenAIServer(
        responder=lambda body: ok("<think>buy</think><action>search[bed]</action>")
    ) as server:
        args = ["bench", "--agent", "llm:scripted-model", "--agent-base-url", server.url, "--env", REF]
        args += ["--episodes", "2", "--out", str(tmp_path), "--no-plot", "--no-progress"]
        result = runner.invoke(app, args)
        assert server.requests_total > 0
    assert result.exit_code == 0, result.output
    assert f"| llm:scripted-model | {REF} | - | 2 | 0.000 [" in result.stdout
    assert (tmp_path / "bench.json").exists() and not (tmp_path / "bench.png").exists()


def test_bench_max_steps_caps_the_episodes_and_is_reported(tmp_path):
    args = ["bench", "--agent", "expert", "--env", REF, "--episodes", "3", "--max-steps", "2"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path), "--no-plot", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Episodes capped at 2 step(s)")
    assert f"| expert | {REF} | - | 3 | 0.000 [" in result.stdout and "| Errored |" in result.stdout
    data = json.loads((tmp_path / "bench.json").read_text())["results"][0]
    assert (data["max_steps"], data["step_limit"], data["errored"]) == (2, 2, 0)
    assert all(r["steps"] == 2 and r["truncated"] and not r["won"] for r in data["records"])
    refused = runner.invoke(app, [*args[:-1], "0", "--no-progress"])
    assert refused.exit_code == 2 and "--max-steps" in refused.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--agent", "exprt", "--env", REF], "unknown agent 'exprt'. Did you mean 'expert'?"),
        (
            ["--agent", "expert", "--env", "DreamGym/WebShp-Ref-v0"],
            "unknown env id 'DreamGym/WebShp-Ref-v0'.",
        ),
        (
            ["--agent", "expert", "--env", REF, "--error-rate", "0.2"],
            "--error-rate applies to --model oracle only",
        ),
        (["--agent", "expert", "--env", REF, "--split", "dev"], "--split must be 'test' or 'train'"),
        (["--agent", "expert", "--env", REF, "--model", "orcle"], "unknown experience model kind 'orcle'."),
    ],
)
def test_bad_arguments_are_one_line_errors(args, expected, tmp_path):
    result = runner.invoke(app, ["bench", *args, "--out", str(tmp_path / "never")])
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.startswith(f"error: {expected}")
    assert len(result.stderr.splitlines()) == 1 and not (tmp_path / "never").exists()
