"""``dreamgym experience build``: the stages of a pack model's rebuild, what they write, and resuming."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.experience.prompt import prompt_fingerprint
from dreamgym_env.experience.trained import MANIFEST_NAME, TrainedModel, file_sha256
from dreamgym_env.training import evaluate
from dreamgym_env.training.build import REPORT_NAME, BuildConfig, build_pack_model
from dreamgym_env.training.dataset import ends_episode, examples_sha256, read_examples
from dreamgym_env.training.distill import ModelSize

WEBSHOP = get_domain("webshop")


def fake_compare(calls: list[list[str]]):
    """``compare_models`` answering fixed numbers: the base's, then the trained model's (the last spec)."""

    def compare(specs, *, n, domain, seed, on_batch):
        calls.append(specs)
        reports = [
            {"n": n, "valid": valid, "reward_agreement": reward, "done_agreement": done,
             "always_zero_reward": 0.9, "always_zero_done": 0.8, "kind_agreement": valid}
            for valid, reward, done in ((0.5, 0.25, 0.5), (1.0, 1.0, 0.75))
        ][-len(specs):]  # fmt: skip
        results = [
            SimpleNamespace(
                seconds=10.0,
                report=SimpleNamespace(to_dict=lambda r=r: r, **r),
                to_dict=lambda r=r: {
                    "seconds": 10.0,
                    "seed": seed,
                    "report": r,
                },  # EvalResult.to_dict's shape
            )
            for r in reports
        ]
        on_batch(results)
        return results

    return compare


@pytest.fixture(scope="module")
def config(tiny_base) -> BuildConfig:
    return BuildConfig(
        n=6, test_n=3, steps=2, lora_r=4, lora_alpha=8, save_steps=1, eval_n=4, rollouts=0,
        threads=1, base=str(tiny_base),
    )  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory, config) -> tuple[Path, TrainedModel]:
    work = tmp_path_factory.mktemp("work")
    shipped = build_pack_model(
        "webshop", work, config, install=work / "pack", stages=("data", "train", "export"), progress=False
    )
    return work, shipped


def test_the_installed_model_records_its_data_adapter_and_prompt(built, config):
    work, shipped = built
    reloaded = TrainedModel.load(work / "pack")
    assert reloaded == shipped
    assert reloaded.adapter_sha256 == file_sha256(work / "pack" / "adapter.gguf")
    assert reloaded.base_gguf is None and reloaded.base == config.base
    assert reloaded.data["sha256"] == file_sha256(work / "sft.jsonl")
    assert reloaded.data["examples"]["train"] == {"expert": 2, "noisy": 2, "random": 2}
    rows = read_examples(work / "sft.jsonl")
    assert reloaded.train_task_ids == {row["task_id"] for row in rows if row["split"] == "train"}
    assert reloaded.prompt_fingerprint == prompt_fingerprint(WEBSHOP.prompt, WEBSHOP.state_json_schema)
    assert reloaded.staleness(WEBSHOP) is None
    assert "data" not in reloaded.config  # no path of the build machine in a shipped manifest
    assert reloaded.config["max_steps"] == 2 and reloaded.config["lora_r"] == 4


def test_a_replaced_adapter_is_stale(built, tmp_path):
    work, shipped = built
    copy = tmp_path / "pack"
    copy.mkdir()
    (copy / MANIFEST_NAME).write_text((work / "pack" / MANIFEST_NAME).read_text())
    (copy / "adapter.gguf").write_bytes((work / "pack" / "adapter.gguf").read_bytes()[:-1] + b"\0")
    assert "not the file its manifest records" in (TrainedModel.load(copy).staleness(WEBSHOP) or "")


def test_a_second_build_keeps_current_data_and_training(built, config, caplog):
    work, _ = built
    trained_at = (work / "model" / MANIFEST_NAME).stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="dreamgym_env.training.build"):
        build_pack_model("webshop", work, config, install=work / "pack", stages=("data", "train"))
    assert "data: " + str(work / "sft.jsonl") + " is current, kept" in caplog.text
    assert "train: " + str(work / "model") + " is current, kept" in caplog.text
    assert (work / "model" / MANIFEST_NAME).stat().st_mtime_ns == trained_at


def test_a_changed_end_share_writes_the_data_again(built, config, caplog):
    work, _ = built
    more_ends = BuildConfig(**{**config.__dict__, "end_share": 0.5})
    with caplog.at_level(logging.INFO, logger="dreamgym_env.training.build"):
        build_pack_model("webshop", work, more_ends, install=work / "pack", stages=("data",))
        assert "is current, kept" not in caplog.text
        train = read_examples(work / "sft.jsonl", split="train")
        for policy in ("expert", "noisy"):  # 1 of their 2 examples each
            assert sum(ends_episode(row) for row in train if row["policy"] == policy) == 1
        build_pack_model("webshop", work, config, install=work / "pack", stages=("data",))  # back as it was
    assert "is current, kept" not in caplog.text
    with pytest.raises(ConfigurationError, match="end_share"):
        BuildConfig(end_share=-0.1)


def test_data_whose_requests_changed_beyond_the_fingerprint_is_written_again(built, config, caplog, monkeypatch):
    work, shipped = built
    record = shipped.data["test_split"]
    assert record == {"n": 3, "seed": 0, "sha256": examples_sha256(read_examples(work / "sft.jsonl", split="test"))}
    supplies = type(WEBSHOP).supplies

    def with_one_line_more(self, *args):
        supplied = supplies(self, *args)
        return replace(supplied, world=(*supplied.world, "one line more"))

    monkeypatch.setattr(type(WEBSHOP), "supplies", with_one_line_more)
    with caplog.at_level(logging.INFO, logger="dreamgym_env.training.build"):
        build_pack_model("webshop", work, config, install=work / "pack", stages=("data",))
        assert "is current, kept" not in caplog.text  # same prompt fingerprint, other requests
        monkeypatch.undo()
        build_pack_model("webshop", work, config, install=work / "pack", stages=("data",))  # back as it was
    assert file_sha256(work / "sft.jsonl") == shipped.data["sha256"]


def test_data_without_its_recipe_is_written_again(built, config, caplog):
    work, shipped = built
    (work / "sft.recipe.json").unlink()  # e.g. a work folder of a build before recipes were kept
    with caplog.at_level(logging.INFO, logger="dreamgym_env.training.build"):
        build_pack_model("webshop", work, config, install=work / "pack", stages=("data",))
    assert "is current, kept" not in caplog.text
    assert (work / "sft.recipe.json").is_file() and file_sha256(work / "sft.jsonl") == shipped.data["sha256"]


def test_a_changed_recipe_trains_again(built, config, tmp_path):
    work, _ = built
    other = tmp_path / "work"
    other.mkdir()
    (other / "sft.jsonl").write_text((work / "sft.jsonl").read_text())
    longer = BuildConfig(**{**config.__dict__, "steps": 3})
    build_pack_model(
        "webshop", other, longer, install=other / "pack", stages=("data", "train"), progress=False
    )
    assert TrainedModel.load(other / "model").stats["steps"] == 3


def test_eval_and_report_write_the_table_beside_always_0_and_are_kept_on_a_rerun(
    built, config, monkeypatch, caplog
):
    work, _ = built
    calls = []

    monkeypatch.setattr(evaluate, "compare_models", fake_compare(calls))
    shipped = build_pack_model("webshop", work, config, install=work / "pack", stages=("eval", "report"))
    assert calls == [[config.base, str(work / "pack")]]
    assert shipped.evaluation["trained"]["reward_agreement"] == 1.0
    assert shipped.evaluation["adapter_sha256"] == shipped.adapter_sha256
    report = (work / "pack" / REPORT_NAME).read_text()
    assert "| reward agreement | 0.25 | 1.00 | 0.90 |" in report
    assert "| episode-end agreement | 0.50 | 0.75 | 0.80 |" in report
    assert json.loads((work / "eval.json").read_text())[1]["report"]["valid"] == 1.0
    with caplog.at_level(logging.INFO, logger="dreamgym_env.training.build"):
        build_pack_model("webshop", work, config, install=work / "pack", stages=("eval",))
    assert len(calls) == 1 and "measured on this model already, kept" in caplog.text


def test_report_before_any_evaluation_is_an_error(built, config, tmp_path):
    work, _ = built
    fresh = tmp_path / "pack"
    fresh.mkdir()
    manifest = json.loads((work / "pack" / MANIFEST_NAME).read_text())
    (fresh / MANIFEST_NAME).write_text(json.dumps({**manifest, "evaluation": {}}))
    with pytest.raises(DataError, match="run the eval stage first"):
        build_pack_model("webshop", work, config, install=fresh, stages=("report",))


def test_a_rebuilt_adapter_is_measured_again_but_its_unchanged_base_is_not(built, config, monkeypatch):
    work, _ = built
    calls: list[list[str]] = []
    monkeypatch.setattr(evaluate, "compare_models", fake_compare(calls))
    build_pack_model("webshop", work, config, install=work / "again", stages=("export", "eval"))
    build_pack_model("webshop", work, config, install=work / "again", stages=("export",))
    assert TrainedModel.load(work / "again").evaluation.keys() == {"base", "base_measurement", "seconds"}
    shipped = build_pack_model("webshop", work, config, install=work / "again", stages=("eval", "report"))
    assert calls == [[config.base, str(work / "again")], [str(work / "again")]]
    assert shipped.evaluation["base"]["reward_agreement"] == 0.25  # kept from the first build
    assert shipped.evaluation["base_measured"] == "in an earlier build"
    assert "the base measured in an earlier build" in (work / "again" / REPORT_NAME).read_text()
    build_pack_model("webshop", work, config, install=work / "again", stages=("export",))
    other_seed = BuildConfig(**{**config.__dict__, "seed": 1})  # other transitions: the base again
    build_pack_model("webshop", work, other_seed, install=work / "again", stages=("eval",))
    build_pack_model("webshop", work, config, install=work / "again", stages=("export",))
    remeasured = BuildConfig(**{**config.__dict__, "remeasure_base": True})
    build_pack_model("webshop", work, remeasured, install=work / "again", stages=("eval",))
    assert calls[2:] == [[config.base, str(work / "again")]] * 2
    build_pack_model("webshop", work, config, install=work / "again", stages=("eval",))  # measured: kept
    remeasured_model = BuildConfig(**{**config.__dict__, "remeasure": True})
    build_pack_model("webshop", work, remeasured_model, install=work / "again", stages=("eval",))
    assert calls[4:] == [[str(work / "again")]]  # the trained model again, the base kept



def test_rollouts_measured_on_a_model_are_kept_unless_remeasured(built, config, monkeypatch):
    """A change the fingerprint does not cover (an env rule) needs ``--remeasure`` to play the rollouts again."""
    from dreamgym_env.bench import consistency
    from dreamgym_env.experience import local

    work, _ = built
    played: list[int] = []

    def fake_rollouts(model, pack, *, episodes, policies, seed, progress):
        played.append(episodes)
        return [consistency.ConsistencyReport(p, episodes, 1.0, 1.0, 1.0, 2.0, 0.5, 0.5) for p in policies]

    monkeypatch.setattr(evaluate, "compare_models", fake_compare([]))
    monkeypatch.setattr(consistency, "rollout_consistency", fake_rollouts)
    monkeypatch.setattr(local, "LocalExperienceModel", lambda **_: SimpleNamespace(close=lambda: None))
    monkeypatch.setattr(TrainedModel, "local_settings", lambda self: {})  # the fixture's base is no GGUF
    with_rollouts = BuildConfig(**{**config.__dict__, "rollouts": 2})
    install = work / "rolled"
    build_pack_model("webshop", work, with_rollouts, install=install, stages=("export", "eval", "rollouts"))
    build_pack_model("webshop", work, with_rollouts, install=install, stages=("rollouts",))
    assert played == [2]  # measured on this model already: kept
    remeasured = BuildConfig(**{**with_rollouts.__dict__, "remeasure": True})
    shipped = build_pack_model("webshop", work, remeasured, install=install, stages=("rollouts",))
    assert played == [2, 2]
    assert [r["policy"] for r in shipped.evaluation["rollouts"]] == ["expert", "noisy", "random"]
    manifest = json.loads((install / MANIFEST_NAME).read_text())
    del manifest["evaluation"]["rollouts"][2]  # a build from before random episodes were played
    (install / MANIFEST_NAME).write_text(json.dumps(manifest))
    build_pack_model("webshop", work, with_rollouts, install=install, stages=("rollouts",))
    assert played == [2, 2, 2]


def test_the_report_counts_the_synthetic_wins_the_reference_does_not_confirm(built, config, monkeypatch):
    """A random episode won in the synthetic env and not in the reference env shows in the report's column."""
    from dreamgym_env.bench import consistency
    from dreamgym_env.experience import local

    work, _ = built

    def paid_by_mistake(model, pack, *, episodes, policies, seed, progress):
        return [
            consistency.ConsistencyReport.of(p, [consistency.EpisodeConsistency(p, "t", 9, 3, p == "random", False)])
            for p in policies
        ]

    monkeypatch.setattr(evaluate, "compare_models", fake_compare([]))
    monkeypatch.setattr(consistency, "rollout_consistency", paid_by_mistake)
    monkeypatch.setattr(local, "LocalExperienceModel", lambda **_: SimpleNamespace(close=lambda: None))
    monkeypatch.setattr(TrainedModel, "local_settings", lambda self: {})  # the fixture's base is no GGUF
    install = work / "paid"
    rollouts = BuildConfig(**{**config.__dict__, "rollouts": 1})
    build_pack_model("webshop", work, rollouts, install=install, stages=("export", "eval", "rollouts", "report"))
    report = (install / REPORT_NAME).read_text()
    assert "| synthetic / reference success | synthetic wins the reference does not confirm |" in report
    assert "| expert | 1 | 0.33 | 0.00 | 1.00 | 0.00 / 0.00 | 0.00 |" in report
    assert "| random | 1 | 0.33 | 0.00 | 0.00 | 1.00 / 0.00 | 1.00 |" in report

def test_episode_ends_are_weighted_in_training(built, config, tmp_path):
    work, _ = built
    rows = read_examples(work / "sft.jsonl", split="train")
    ends = sum(ends_episode(row) for row in rows)
    assert ends == sum(json.loads(row["completion"][0]["content"])["done"] for row in rows) > 0
    other = tmp_path / "work"
    other.mkdir()
    (other / "sft.jsonl").write_text((work / "sft.jsonl").read_text())
    weighted = BuildConfig(**{**config.__dict__, "steps": 1, "end_weight": 3})
    build_pack_model(
        "webshop", other, weighted, install=other / "pack", stages=("data", "train"), progress=False
    )
    trained = TrainedModel.load(other / "model")
    assert trained.stats["episode_ends"] == ends and trained.config["end_weight"] == 3
    assert trained.stats["epochs"] == round(1 / (len(rows) + 2 * ends), 2)
    with pytest.raises(ConfigurationError, match="end_weight"):
        BuildConfig(end_weight=0)


def test_a_stopped_evaluation_is_reported_from_its_last_complete_batch(built, config, monkeypatch):
    work, _ = built
    install = work / "stopped"
    calls: list[list[str]] = []

    def stopped_compare(specs, *, n, domain, seed, on_batch):
        fake_compare(calls)(specs, n=2, domain=domain, seed=seed, on_batch=on_batch)  # one batch of two
        raise KeyboardInterrupt  # the build was stopped during the next batch

    monkeypatch.setattr(evaluate, "compare_models", stopped_compare)
    with pytest.raises(KeyboardInterrupt):
        build_pack_model("webshop", work, config, install=install, stages=("export", "eval"))
    assert TrainedModel.load(install).evaluation == {}
    shipped = build_pack_model("webshop", work, config, install=install, stages=("report",))
    assert (
        shipped.evaluation["stopped_after"] == 2 and shipped.evaluation["trained"]["reward_agreement"] == 1.0
    )
    assert shipped.evaluation["adapter_sha256"] == shipped.adapter_sha256
    assert "the evaluation was stopped there" in (install / REPORT_NAME).read_text()
    build_pack_model("webshop", work, config, install=install, stages=("export",))  # a newer adapter
    again = build_pack_model("webshop", work, config, install=install, stages=("report",))
    assert "stopped_after" not in again.evaluation and "trained" not in again.evaluation


TINY_DISTILLED = ModelSize(hidden=32, layers=2, heads=2, ffn=64, context=2048)


def test_a_distilled_build_installs_its_gguf_measures_it_and_names_its_rebuild(tmp_path, monkeypatch):
    config = BuildConfig.for_kind(
        "distilled", n=6, test_n=3, steps=2, save_steps=1, eval_n=4, rollouts=0, threads=1,
        size=TINY_DISTILLED, vocab_size=400, max_minutes=5.0,
    )  # fmt: skip
    assert config.kind == "distilled" and config.learning_rate == 3e-3 and config.end_weight == 2
    assert config.end_share == 0.25
    calls: list[list[str]] = []
    monkeypatch.setattr(evaluate, "compare_models", fake_compare(calls))
    pack = tmp_path / "pack" / "distilled"
    shipped = build_pack_model("webshop", tmp_path / "work", config, install=pack, progress=False)
    assert shipped.kind == "distilled" and shipped.model_gguf == pack / "model.gguf"
    assert shipped.model_sha256 == file_sha256(pack / "model.gguf") == shipped.evaluation["model_sha256"]
    assert shipped.evaluation["n"] == 4 and calls == [[config.base, str(pack)]]
    assert shipped.staleness(WEBSHOP) is None and shipped.system_prompt is False
    report = (pack / REPORT_NAME).read_text()
    assert shipped.rebuild_command == config.command("webshop")
    assert "--n 6 --steps 2" in shipped.rebuild_command  # its own recipe, not the kind's default
    assert "Distilled model" in report and f"Rebuild: `{shipped.rebuild_command}`" in report
    again = build_pack_model("webshop", tmp_path / "work", config, install=pack, stages=("train", "eval"))
    assert again.model_sha256 == shipped.model_sha256 and len(calls) == 1  # current: neither trained nor measured again


def test_the_build_command_defaults_to_the_kind_the_pack_prefers(monkeypatch):
    from typer.testing import CliRunner

    from dreamgym_env.cli import app
    from dreamgym_env.training import build

    seen = {}

    def record(pack, work, config, *, install, stages):
        seen.update(pack=pack.name, work=work, kind=config.kind, n=config.n, install=install)
        seen["end_share"] = config.end_share
        return TrainedModel.load(Path(str(get_domain("alfworld").experience_model_dir)) / "distilled")

    monkeypatch.setattr(build, "build_pack_model", record)
    result = CliRunner().invoke(app, ["experience", "build", "--domain", "alfworld", "--stages", "report"])
    assert result.exit_code == 0, result.output
    assert seen == {"pack": "alfworld", "work": Path("runs/experience/alfworld-distilled"), "kind": "distilled",
                    "n": 6000, "install": None, "end_share": 0.25}  # fmt: skip
    for given, share in (("natural", None), ("0.5", 0.5)):  # the recipe before end_share, and any share
        result = CliRunner().invoke(app, ["experience", "build", "--domain", "alfworld", "--end-share", given])
        assert result.exit_code == 0 and seen["end_share"] == share, result.output
    bad = CliRunner().invoke(app, ["experience", "build", "--domain", "alfworld", "--end-share", "most"])
    assert bad.exit_code != 0 and "'natural'" in bad.output
    result = CliRunner().invoke(app, ["experience", "build", "--domain", "webshop", "--kind", "adapter", "--n", "9"])
    assert result.exit_code == 0 and seen["kind"] == "adapter" and seen["n"] == 9
    bad = CliRunner().invoke(app, ["experience", "build", "--domain", "webshop", "--kind", "oracle"])
    assert bad.exit_code != 0 and "adapter or distilled" in bad.output


def test_a_build_takes_the_bases_numbers_from_the_packs_other_kind(built, config, tmp_path, monkeypatch):
    work, _ = built
    calls: list[list[str]] = []
    monkeypatch.setattr(evaluate, "compare_models", fake_compare(calls))
    distilled = BuildConfig.for_kind(
        "distilled", n=6, test_n=3, steps=2, save_steps=1, eval_n=config.eval_n, rollouts=0, threads=1,
        size=TINY_DISTILLED, vocab_size=400, max_minutes=5.0, base=config.base,
    )  # fmt: skip
    pack = tmp_path / "pack"
    build_pack_model("webshop", tmp_path / "work", distilled, install=pack / "distilled", progress=False)
    assert calls == [[config.base, str(pack / "distilled")]]
    adapter = build_pack_model("webshop", work, config, install=pack, stages=("export", "eval"))
    assert calls[1:] == [[str(pack)]]  # the base measured once, by the distilled build
    assert adapter.evaluation["base"]["reward_agreement"] == 0.25
    assert adapter.evaluation["base_measured"] == "in an earlier build"
    elsewhere = build_pack_model("webshop", work, config, install=tmp_path / "alone", stages=("export", "eval"))
    assert calls[2:] == [[config.base, str(tmp_path / "alone")]] and "base" in elsewhere.evaluation


def test_an_adapter_build_passes_its_time_limit_to_the_training(monkeypatch, tmp_path):
    """``--max-minutes`` stops an adapter's training too (it was dropped for the adapter kind)."""
    from dreamgym_env.training import train

    seen: dict[str, object] = {}

    def fake_train(data, base, out, config, *, resume, progress):
        seen.update(max_minutes=config.max_minutes, max_steps=config.max_steps)
        return "trained"

    monkeypatch.setattr(train, "train_experience_model", fake_train)
    config = BuildConfig.for_kind("adapter", steps=70, max_minutes=12.5)
    assert config.train(tmp_path / "sft.jsonl", tmp_path / "model", resume=False, progress=False) == "trained"
    assert seen == {"max_minutes": 12.5, "max_steps": 70}
    assert config.train_recipe()["max_minutes"] == 12.5  # another limit trains it again


@pytest.mark.parametrize(
    ("kind", "overrides", "flags"),
    [
        ("adapter", {}, ""),
        ("distilled", {"n": 8000, "decisive_weight": 6, "end_share": None, "max_minutes": 45.0},
         " --n 8000 --decisive-weight 6 --end-share natural --max-minutes 45"),
        ("distilled", {"n": 8000, "end_share": None, "near_miss_share": 0.15, "rollouts": 100},
         " --n 8000 --end-share natural --near-miss-share 0.15 --rollouts 100"),
    ],
)  # fmt: skip
def test_the_recorded_build_command_builds_the_same_recipe(kind, overrides, flags, monkeypatch):
    from typer.testing import CliRunner

    from dreamgym_env.cli import app

    config = replace(BuildConfig.for_kind(kind), **overrides)
    command = config.command("alfworld")
    assert command == f"dreamgym experience build --domain alfworld --kind {kind}{flags}"
    seen: list[BuildConfig] = []

    def build(pack, work, config, *, install, stages):
        seen.append(config)
        return TrainedModel(directory=Path("."), base="distilled", base_gguf=None, adapter_gguf=None,
                            domain="alfworld", train_task_ids=frozenset(), config={})  # fmt: skip

    monkeypatch.setattr("dreamgym_env.training.build.build_pack_model", build)
    result = CliRunner().invoke(app, command.split()[1:])
    assert result.exit_code == 0, result.output
    assert seen == [config]
