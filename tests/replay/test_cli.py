from __future__ import annotations

from typer.testing import CliRunner

from dreamgym_env.cli.buffer import buffer_app, buffer_stats, build_buffer
from dreamgym_env.replay.buffer import ExperienceReplayBuffer


def test_build_then_stats(tmp_path, offline_file, offline_trajectories, monkeypatch):
    monkeypatch.setenv("DREAMGYM_EMBEDDER", "hashed:dim=64")
    out = tmp_path / "webshop.db"
    runner = CliRunner()
    built = runner.invoke(buffer_app, ["build", "--from", str(offline_file), "--out", str(out)])
    assert built.exit_code == 0, built.output
    transitions = len({(s.state, s.action, s.next_state) for t in offline_trajectories for s in t.steps})
    assert f"transitions {transitions:,}" in built.output and "hashed:dim=64" in built.output
    shown = runner.invoke(buffer_app, ["stats", str(out)])
    assert shown.exit_code == 0 and f"offline   {transitions:,}" in shown.output
    assert f"episodes    {len(offline_trajectories):,}" in shown.output
    stats = buffer_stats(out)
    assert stats.transitions == transitions and stats.by_source == {"offline": transitions}
    with ExperienceReplayBuffer(out) as buffer:  # a built buffer is ready to search
        step = offline_trajectories[0].steps[0]
        assert buffer.search(step.state, step.action, k=1)[0].record.next_state == step.next_state


def test_build_keeps_sources_and_extends(tmp_path, offline_file):
    out = tmp_path / "b.db"
    first = build_buffer(offline_file, out, embedder="hashed", source=None)
    assert set(first.by_source) == {"real"}  # collected from the reference env
    again = build_buffer(offline_file, out, source="offline")
    assert again.by_source == {"real": first.transitions, "offline": first.transitions}


def test_errors_exit_nonzero(tmp_path):
    runner = CliRunner()
    result = runner.invoke(buffer_app, ["stats", str(tmp_path / "missing.db")])
    assert result.exit_code == 1 and "does not exist" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    result = runner.invoke(
        buffer_app, ["build", "--from", str(bad), "--out", str(tmp_path / "x.db"), "--embedder", "hashed"]
    )
    assert result.exit_code == 1 and "bad.jsonl:1" in result.output


def test_build_and_stats_leave_no_wal_files_and_label_sources(tmp_path, offline_file, monkeypatch):
    monkeypatch.setenv("DREAMGYM_EMBEDDER", "hashed:dim=64")
    out_dir = tmp_path / "buffers"
    out = out_dir / "webshop.db"
    runner = CliRunner()
    built = runner.invoke(buffer_app, ["build", "--from", str(offline_file), "--out", str(out)])
    assert built.exit_code == 0, built.output
    assert sorted(p.name for p in out_dir.iterdir()) == ["webshop.db"]  # checkpointed: no -wal, -shm
    shown = runner.invoke(buffer_app, ["stats", str(out)])
    assert shown.exit_code == 0, shown.output
    assert sorted(p.name for p in out_dir.iterdir()) == ["webshop.db"]  # the reader's are gone too
    lines = shown.output.splitlines()
    assert any(line.startswith("  offline ") and "offline real transitions" in line for line in lines)
    assert any(line.startswith("  real ") and "real transitions of a reference env" in line for line in lines)
    assert any(
        line.startswith("  synthetic ") and "synthetic transitions of an experience model" in line
        for line in lines
    )


def test_damaged_buffer_file_is_one_error_line(tmp_path):
    empty = tmp_path / "empty.db"
    empty.touch()
    result = CliRunner().invoke(buffer_app, ["stats", str(empty)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().startswith("error: replay buffer") and "empty.db" in result.output
