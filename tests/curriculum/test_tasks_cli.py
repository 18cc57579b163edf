from __future__ import annotations

import re

from typer.testing import CliRunner

from dreamgym_env.cli.tasks import seed_pool, tasks_app
from dreamgym_env.curriculum import TaskStats
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.testing import ScriptedOpenAIServer
from dreamgym_env.types import Task

runner = CliRunner()


def test_generate_writes_validated_tasks(tmp_path, fresh_candidates):
    by_id = {t.id: t for t in get_domain("webshop").tasks("train")}
    calls = {"n": 0}

    def writer(body: dict) -> dict:
        calls["n"] += 1
        seeds = re.findall(r"^## Seed (\S+)$", body["messages"][1]["content"], re.MULTILINE)
        return {"tasks": [c for seed in seeds for c in fresh_candidates(by_id[seed], 1)]}

    out = tmp_path / "tasks.jsonl"
    with ScriptedOpenAIServer(responder=writer) as server:
        result = runner.invoke(
            tasks_app,
            [
                "generate",
                "--domain",
                "webshop",
                "--n",
                "6",
                "--out",
                str(out),
                "--base-url",
                server.url,
                "--model",
                "writer",
                "--num-seeds",
                "2",
                "--per-call",
                "2",
            ],
        )
    assert result.exit_code == 0, result.output
    assert "wrote 6 tasks" in result.output
    tasks = [Task.model_validate_json(line) for line in out.read_text().splitlines()]
    assert len(tasks) == 6 and len({t.id for t in tasks}) == 6
    assert all(t.parent_id in by_id for t in tasks) and calls["n"] >= 3


def test_generate_reports_a_shortfall(tmp_path):
    with ScriptedOpenAIServer(responder=lambda body: {"tasks": []}) as server:
        result = runner.invoke(
            tasks_app, ["generate", "--n", "2", "--out", str(tmp_path / "t.jsonl"), "--base-url", server.url]
        )
    assert result.exit_code == 1 and "0 of 2 accepted" in result.output


def test_stats_lists_tasks_by_variance(tmp_path):
    path = tmp_path / "stats.db"
    with TaskStats(path) as stats:
        stats.record_group("steady", [1.0, 1.0, 1.0])
        stats.record_group("coin", [1.0, 0.0, 1.0, 0.0])
    result = runner.invoke(tasks_app, ["stats", str(path), "--top", "5"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "2 tasks tried, 7 episodes, 0 generated tasks" in text
    assert text.index("coin") < text.index("steady") and "0.250" in text
    missing = runner.invoke(tasks_app, ["stats", str(tmp_path / "none.db")])
    assert missing.exit_code != 0


def test_seed_pool_prefers_high_variance(tmp_path):
    tasks = get_domain("webshop").tasks("train")
    path = tmp_path / "stats.db"
    with TaskStats(path) as stats:
        stats.record_group(tasks[7].id, [1.0, 0.0])
        stats.record_group(tasks[3].id, [1.0, 1.0])
    assert [t.id for t in seed_pool("webshop", stats=path)] == [tasks[7].id]
    assert (
        seed_pool("webshop", seed=1)[:3]
        == seed_pool("webshop", seed=1)[:3]
        != seed_pool("webshop", seed=2)[:3]
    )
