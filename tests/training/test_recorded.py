"""Experience models from recorded trajectories: the split, the data, a build and the commands, with no reference env."""

from __future__ import annotations

import json
import logging
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.cli import app
from dreamgym_env.domain import Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.experience.answers import ChatReply
from dreamgym_env.experience.trained import MANIFEST_NAME, TrainedModel, file_sha256
from dreamgym_env.replay.jsonl import read_trajectories, write_trajectories
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.training import evaluate
from dreamgym_env.training.build import REPORT_NAME, BuildConfig, build_pack_model
from dreamgym_env.training.dataset import read_examples
from dreamgym_env.training.distill import ModelSize
from dreamgym_env.training.recorded import RecordedSplit, build_recorded_dataset, split_by_task
from dreamgym_env.types import ExperienceRequest, Trajectory, Transition

WEBSHOP = get_domain("webshop")
TINY = ModelSize(hidden=32, layers=2, heads=2, ffn=64, context=2048)
WORLD = ("make_reference_env", "make_real_env", "expert_policy", "rubric_reward", "tasks", "task_variations")
"""What a WebShop build from recorded episodes must never ask the pack for: all but its grammar, prompt and schema."""


def record(path: Path, tasks: int, episodes: int) -> Path:
    """Structured WebShop episodes of the expert and the random policy on ``tasks`` train tasks, as a file."""
    env = WEBSHOP.make_reference_env(split="train", max_steps=WEBSHOP.max_episode_steps)
    trajectories: list[Trajectory] = []
    try:
        for policy in ("expert", "random"):
            trajectories += collect_trajectories(
                env, make_policy(policy, WEBSHOP, seed=0), episodes, tasks=WEBSHOP.tasks("train")[:tasks],
                seed=0, policy_name=policy, progress=False, state_mode="structured",
            )  # fmt: skip
    finally:
        env.close()
    write_trajectories(path, trajectories)
    return path


@pytest.fixture(scope="module")
def episodes(tmp_path_factory) -> Path:
    return record(tmp_path_factory.mktemp("recorded") / "episodes.jsonl", tasks=5, episodes=5)


@pytest.fixture(scope="module")
def no_world() -> Iterator[list[str]]:
    """The WebShop pack with every part of its world raising; yields what was asked for all the same."""
    asked: list[str] = []

    def refuse(name: str) -> Any:
        def hook(*args: Any, **kwargs: Any) -> Any:
            asked.append(name)
            raise AssertionError(f"a build from recorded episodes asked for the pack's {name}")

        return hook

    supplies = type(WEBSHOP).supplies

    def structural_only(self: Domain, task: Any, *args: Any) -> Any:
        if task is not None:  # the pack's world parts come only with a task
            asked.append("supplies with a task")
            raise AssertionError("a build from recorded episodes asked for the pack's world")
        return supplies(self, task, *args)

    with pytest.MonkeyPatch.context() as patch:
        for name in WORLD:
            patch.setattr(type(WEBSHOP), name, refuse(name))
        patch.setattr(type(WEBSHOP), "supplies", structural_only)
        yield asked


def staying(request: ExperienceRequest) -> Transition:
    """An answer that keeps the state: a valid next state to score, whatever the request."""
    return Transition(reasoning="nothing changes", next_state=request.state)


Asked = dict[str, list[ExperienceRequest]]
"""The requests each model spec was asked, in order."""


def scripted_models(asked: Asked):
    """``evaluate.load_model`` serving every spec by :func:`staying`, with a trained model's manifest: the scoring is the build's own."""

    def load(spec: str, **settings: Any) -> tuple[ScriptedExperienceModel, TrainedModel | None]:
        def respond(request: ExperienceRequest) -> Transition:
            asked.setdefault(spec, []).append(request)
            return staying(request)

        return ScriptedExperienceModel(respond), TrainedModel.find(spec) if Path(spec).is_dir() else None

    return load


@pytest.fixture(scope="module")
def config(episodes) -> BuildConfig:
    return BuildConfig.for_kind(
        "distilled", steps=2, save_steps=1, eval_n=6, threads=1, size=TINY, vocab_size=400, max_minutes=5.0,
        trajectories=str(episodes),
    )  # fmt: skip


class LogLines(logging.Handler):
    """The build's log messages, kept (``caplog`` lives one test, the build a module)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def built(tmp_path_factory, config, no_world) -> Iterator[tuple[Path, TrainedModel, Asked, str]]:
    """A whole build (data, train, export, eval, rollouts, report) of a tiny distilled model, its requests and log."""
    work = tmp_path_factory.mktemp("work")
    asked: Asked = {}
    logs = logging.getLogger("dreamgym_env.training.build")
    handler = LogLines()
    logs.addHandler(handler)
    before = logs.level
    logs.setLevel(logging.INFO)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(evaluate, "load_model", scripted_models(asked))
            shipped = build_pack_model("webshop", work, config, progress=False)
    finally:
        logs.removeHandler(handler)
        logs.setLevel(before)
    yield work, shipped, asked, "\n".join(handler.lines)


def test_a_build_from_recorded_episodes_asks_nothing_of_the_packs_world(built, no_world, episodes):
    work, shipped, asked, log = built
    assert no_world == []  # nothing beyond the grammar, the prompt and the schema
    assert shipped.directory == work / "install"  # not the pack's own folder: its shipped models stay
    assert shipped.kind == "distilled" and shipped.supply == "none"
    assert json.loads((work / "install" / MANIFEST_NAME).read_text())["supply"] == "none"
    assert TrainedModel.load(work / "model").supply == "none"  # the training run's manifest too
    rows = read_examples(work / "sft.jsonl")
    assert {row["supply"] for row in rows} == {"none"}
    assert all(row["request"]["given_fields"] == {} and row["request"]["world"] == [] for row in rows)
    recorded = read_trajectories(episodes)
    assert len(rows) == sum(step.action_valid for t in recorded for step in t.steps)  # every valid step
    assert "rollouts: skipped: the model was trained from recorded trajectories" in log


def test_the_evaluation_asks_held_out_recorded_steps_of_base_and_model(built, config):
    work, shipped, asked, _ = built
    base, trained = asked[config.base], asked[str(work / "install")]
    assert len(trained) == config.eval_n and base == trained  # the same transitions, base and trained model
    assert {r.task.id for r in trained}.isdisjoint(shipped.train_task_ids)
    assert {r.task.id for r in trained} <= {
        row["task_id"] for row in read_examples(work / "sft.jsonl", split="test")
    }
    assert all(not r.given_fields and not r.world for r in trained)
    evaluation = shipped.evaluation
    assert evaluation["trained"]["n"] == evaluation["base"]["n"] == config.eval_n
    assert evaluation["trained"]["valid"] == 1.0  # the scripted answers were scored, not refused
    assert evaluation["base_measurement"]["recorded_sha256"] == file_sha256(config.trajectories)


def test_the_manifest_and_report_name_the_file_its_counts_and_the_rebuild(built, episodes):
    work, shipped, _, _ = built
    recorded = read_trajectories(episodes)
    record = {
        "file": "episodes.jsonl", "sha256": file_sha256(episodes), "episodes": len(recorded),
        "transitions": sum(step.action_valid for t in recorded for step in t.steps),
    }  # fmt: skip
    assert shipped.data["trajectories"] == record and shipped.data["held_out"] is None
    assert shipped.data["split_seed"] == 0 and shipped.data["left_out"] == 0
    assert shipped.rebuild_command == (
        f"dreamgym experience build --domain webshop --kind distilled --trajectories {episodes} "
        "--steps 2 --max-minutes 5 --eval-n 6"
    )
    report = (work / "install" / REPORT_NAME).read_text()
    assert f"`episodes.jsonl` (SHA-256 `{record['sha256']}`, {len(recorded)} episodes" in report
    assert report.startswith("# The webshop experience model trained from recorded trajectories (distilled)")
    assert "Supply `none`" in report and "No rollout consistency" in report
    # with nothing supplied but the structural rules, the model writes all that changes
    assert "| the model's share of what changed (true next states) | 1.00 | 1.00 |" in report
    assert f"Rebuild: `{shipped.rebuild_command}`" in report


def test_a_second_build_keeps_the_data_the_model_and_its_numbers(built, config, no_world, caplog):
    work, shipped, _, _ = built
    asked: Asked = {}
    with (
        pytest.MonkeyPatch.context() as patch,
        caplog.at_level(logging.INFO, logger="dreamgym_env.training.build"),
    ):
        patch.setattr(evaluate, "load_model", scripted_models(asked))
        again = build_pack_model("webshop", work, config, stages=("data", "train", "eval", "report"))
    assert f"data: {work / 'sft.jsonl'} is current, kept" in caplog.text
    assert f"train: {work / 'model'} is current, kept" in caplog.text
    assert "eval: measured on this model already, kept" in caplog.text and asked == {}
    assert again.model_sha256 == shipped.model_sha256


def test_without_the_base_the_trained_model_is_measured_alone(built, config, no_world, tmp_path):
    work, _, _, _ = built
    asked: Asked = {}
    alone = replace(config, measure_base=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evaluate, "load_model", scripted_models(asked))
        shipped = build_pack_model(
            "webshop", work, alone, install=tmp_path / "alone", stages=("export", "eval", "report")
        )
    assert list(asked) == [str(tmp_path / "alone")] and "base" not in shipped.evaluation
    report = (tmp_path / "alone" / REPORT_NAME).read_text()
    assert "the base not measured" in report and "| reward agreement | - |" in report


def test_a_domain_without_a_reference_env_trains_from_recorded_episodes_only(config, tmp_path, monkeypatch):
    # as a pack without one: the Domain's own make_reference_env, which raises
    monkeypatch.setattr(type(WEBSHOP), "make_reference_env", Domain.make_reference_env)
    with pytest.raises(ConfigurationError, match="no reference env to play: train it from recorded episodes"):
        build_pack_model("webshop", tmp_path / "played", BuildConfig(), stages=("data",))
    trained = build_pack_model(
        "webshop", tmp_path / "recorded", config, stages=("data", "train"), progress=False
    )
    assert trained.supply == "none" and read_examples(tmp_path / "recorded" / "sft.jsonl", split="test")


def test_the_split_keeps_each_task_and_its_variations_on_one_side(episodes):
    recorded = read_trajectories(episodes)
    first = recorded[0]
    variation = first.model_copy(
        update={"task": first.task.model_copy(update={"id": "v-1", "parent_id": first.task.id})}
    )
    train, test = split_by_task([*recorded, variation], seed=0)
    assert train and test and {t.task.id for t in train}.isdisjoint({t.task.id for t in test})
    side = train if first in train else test
    assert variation in side
    again = split_by_task(list(reversed(recorded)), seed=0)[1]
    assert {t.task.id for t in again} == {t.task.id for t in split_by_task(recorded, seed=0)[1]}
    held_out = {frozenset(t.task.id for t in split_by_task(recorded, seed=seed)[1]) for seed in range(8)}
    assert len(held_out) > 1  # the seed draws the held-out tasks
    one_task = [t for t in recorded if t.task.id == first.task.id]
    with pytest.raises(ConfigurationError, match="at least two tasks"):
        split_by_task(one_task, seed=0)


def test_a_held_out_file_is_the_test_split_and_must_hold_new_tasks(episodes, tmp_path):
    recorded = read_trajectories(episodes)
    ids = sorted({t.task.id for t in recorded})
    write_trajectories(tmp_path / "train.jsonl", [t for t in recorded if t.task.id != ids[0]])
    write_trajectories(tmp_path / "test.jsonl", [t for t in recorded if t.task.id == ids[0]])
    split = RecordedSplit.read(WEBSHOP, tmp_path / "train.jsonl", tmp_path / "test.jsonl")
    assert {t.task.id for t in split.test} == {ids[0]} and ids[0] not in {t.task.id for t in split.train}
    assert split.recipe()["held_out"]["file"] == "test.jsonl"
    with pytest.raises(ConfigurationError, match="held-out tasks must be new"):
        RecordedSplit.read(WEBSHOP, episodes, tmp_path / "test.jsonl")


def test_a_teacher_writes_the_reasoning(episodes, tmp_path, no_world):
    class Teacher:
        model_id = "teacher"
        asked = 0

        async def complete(
            self,
            messages: Sequence[Mapping[str, str]],
            *,
            schema: Any = None,
            deadline: Any = None,
            context: str = "",
        ) -> ChatReply:
            Teacher.asked += 1
            assert "What really happened" in messages[-1]["content"]
            return ChatReply(text="The shop shows what the action asks for.")

        def run(self, coroutine: Any) -> Any:
            import asyncio

            return asyncio.run(coroutine)

    summary = build_recorded_dataset(
        RecordedSplit.read(WEBSHOP, episodes), tmp_path / "sft.jsonl", teacher=Teacher()
    )
    rows = read_examples(tmp_path / "sft.jsonl")
    assert summary.reasoning_source == "teacher" and Teacher.asked == len(rows)
    answer = json.loads(rows[0]["completion"][0]["content"])
    assert (
        answer["reasoning"] == "The shop shows what the action asks for."
        and rows[0]["reasoning_source"] == "teacher"
    )


def test_a_manifest_without_a_supply_is_a_packs_and_a_wrong_one_is_refused(tmp_path):
    shipped = Path(str(WEBSHOP.experience_model_dir))
    assert "supply" not in json.loads((shipped / MANIFEST_NAME).read_text())  # shipped before supply existed
    assert TrainedModel.load(shipped).supply == "pack"
    manifest = json.loads((shipped / MANIFEST_NAME).read_text())
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({**manifest, "supply": "everything"}))
    with pytest.raises(DataError, match="supply must be one of pack, replay, none"):
        TrainedModel.load(tmp_path)


def bad_file(episodes: Path, tmp_path: Path) -> Path:
    """The first episode, then a line that is no trajectory."""
    path = tmp_path / "bad.jsonl"
    path.write_text(episodes.read_text().splitlines()[0] + '\n{"task": 3}\n')
    return path


def test_the_dataset_command_from_recorded_episodes_and_its_errors(episodes, tmp_path):
    out = tmp_path / "sft.jsonl"
    result = CliRunner().invoke(app, ["experience", "dataset", "--from", str(episodes), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "recorded in episodes.jsonl" in result.output and "domain webshop" in result.output
    assert {row["supply"] for row in read_examples(out)} == {"none"}
    for args, message in (
        (["--from", str(bad_file(episodes, tmp_path))], "bad.jsonl:2: not a trajectory"),
        (["--from", str(tmp_path / "missing.jsonl")], "cannot read offline trajectories from"),
        (["--from", str(episodes), "--domain", "alfworld"], "episodes.jsonl:1: an episode of domain 'webshop', not 'alfworld'"),
        (["--from", str(episodes), "--n", "5"], "--from takes every recorded step"),
        (["--held-out", str(episodes)], "--held-out goes with --from"),
    ):  # fmt: skip
        bad = CliRunner().invoke(app, ["experience", "dataset", "--out", str(out), *args])
        assert bad.exit_code == 2 and message in " ".join(bad.output.split()), bad.output


def test_the_build_command_trains_from_recorded_episodes_and_its_errors(episodes, tmp_path, monkeypatch):
    seen: list[tuple[Path, BuildConfig]] = []

    def build(pack, work, config, *, install, stages):
        seen.append((work, config))
        return TrainedModel(directory=Path("."), base="distilled", base_gguf=None, adapter_gguf=None,
                            domain="webshop", train_task_ids=frozenset(), config={})  # fmt: skip

    bad = CliRunner().invoke(
        app, ["experience", "build", "--domain", "webshop", "--trajectories", str(bad_file(episodes, tmp_path)),
              "--work", str(tmp_path / "work")],
    )  # fmt: skip
    assert bad.exit_code == 2 and "bad.jsonl:2: not a trajectory" in bad.output, bad.output
    monkeypatch.setattr("dreamgym_env.training.build.build_pack_model", build)
    command = [
        "experience", "build", "--domain", "webshop", "--kind", "distilled", "--trajectories", str(episodes),
        "--teacher-url", "http://127.0.0.1:9/v1", "--no-measure-base", "--steps", "3",
    ]  # fmt: skip
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    work, config = seen[-1]
    assert work == Path("runs/experience/webshop-distilled-episodes")
    assert config.trajectories == str(episodes) and config.teacher_url == "http://127.0.0.1:9/v1"
    assert not config.measure_base and config.steps == 3
    rebuild = shlex.split(config.command("webshop"))  # the manifest's command builds the same recipe
    assert CliRunner().invoke(app, rebuild[1:]).exit_code == 0
    assert seen[-1][1] == replace(config, measure_base=True)  # measuring the base is no part of the recipe
    for args, message in (
        (["--held-out", str(episodes)], "go with --trajectories"),
        (["--trajectories", str(episodes), "--n", "50"], "--trajectories takes every recorded step"),
    ):
        bad = CliRunner().invoke(app, ["experience", "build", "--domain", "webshop", *args])
        assert bad.exit_code == 2 and message in " ".join(bad.output.split()), bad.output
