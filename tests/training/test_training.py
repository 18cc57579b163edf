"""The training recipe end to end on a tiny model built here (no download, one CPU thread)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("peft")
pytest.importorskip("gguf")
pytest.importorskip("trl")
torch = pytest.importorskip("torch")

from typer.testing import CliRunner

from dreamgym_env.cli import app
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError, StaleModelWarning
from dreamgym_env.experience.local import LocalExperienceModel, LocalSettings
from dreamgym_env.experience.parsing import parse_transition
from dreamgym_env.experience.prompt import (
    STRUCTURED_REASONING_CHARS,
    answer_state_schema,
    carried_values,
    prompt_fingerprint,
)
from dreamgym_env.experience.trained import file_sha256
from dreamgym_env.training.dataset import (
    action_verb,
    build_dataset,
    decisive_verbs,
    ends_episode,
    read_examples,
    reference_reasoning,
    request_of,
)
from dreamgym_env.training.export import read_lora_gguf
from dreamgym_env.training.serving import TransformersExperienceModel
from dreamgym_env.training.train import (
    TRAIN_TIME_FILE,
    TrainConfig,
    TrainedModel,
    train_experience_model,
    weighted_rows,
)
from dreamgym_env.types import Transition, Usage

WEBSHOP = get_domain("webshop")


@pytest.fixture(scope="module")
def one_example(tmp_path_factory, dataset) -> Path:
    path = tmp_path_factory.mktemp("one") / "one.jsonl"
    path.write_text(json.dumps(read_examples(dataset)[0]) + "\n", encoding="utf-8")
    return path


RECIPE = {"lora_r": 16, "lora_alpha": 32, "learning_rate": 2e-2, "save_steps": 1, "threads": 1}


@pytest.fixture(scope="module")
def two_steps(tmp_path_factory, one_example, tiny_base) -> TrainedModel:
    out = tmp_path_factory.mktemp("trained")
    return train_experience_model(
        one_example, str(tiny_base), out, TrainConfig(max_steps=2, **RECIPE), progress=False
    )


@pytest.fixture(scope="module")
def memorised(two_steps, one_example, tiny_base) -> TrainedModel:
    """The two-step run resumed to twenty steps: the model now writes its one answer."""
    return train_experience_model(
        one_example,
        str(tiny_base),
        two_steps.directory,
        TrainConfig(max_steps=20, **RECIPE),
        resume=True,
        progress=False,
    )


class Recording:
    """A local runtime double that records the request body and answers ``answer``."""

    def __init__(self, answer: str) -> None:
        self.answer, self.bodies, self.settings = answer, [], None

    def __call__(self, path: Path, settings: LocalSettings) -> Recording:
        self.settings = settings
        return self

    def chat(self, body: dict[str, Any], should_stop: Any) -> dict[str, Any]:
        self.bodies.append(body)
        message = {"role": "assistant", "content": self.answer}
        return {"choices": [{"message": message, "finish_reason": "stop"}], "usage": {}}

    def close(self) -> None:
        pass


@pytest.fixture
def gguf_file(tmp_path) -> Path:
    path = tmp_path / "tiny-test.gguf"
    path.write_bytes(b"GGUF" + bytes(64))
    return path


def test_examples_are_the_requests_the_local_backend_sends(dataset, gguf_file):
    rows = read_examples(dataset)
    assert rows
    for row in rows:
        answer = row["completion"][0]["content"]
        runtime = Recording(answer)
        model = LocalExperienceModel(gguf_file, runtime_factory=runtime)
        request = request_of(row, WEBSHOP)
        try:
            transition = model.predict_one(request)
        finally:
            model.close()
        assert runtime.bodies[0]["messages"] == row["prompt"]  # the very messages, nothing re-ordered
        target = json.loads(answer)
        # the backend accepts the target, and completes it with the fields the action keeps
        assert json.loads(transition.next_state) == {**carried_values(request), **target["next_state"]}
        assert (transition.reward, transition.terminated) == (target["reward"], target["done"])


def test_the_split_holds_no_task_in_both_halves(dataset):
    rows = read_examples(dataset)
    train = {row["task_id"] for row in rows if row["split"] == "train"}
    test = {row["task_id"] for row in rows if row["split"] == "test"}
    assert train and test and not train & test
    assert train <= {t.id for t in WEBSHOP.tasks("train")}
    assert test <= {t.id for t in WEBSHOP.tasks("test")}
    assert {row["policy"] for row in rows} == {"expert", "noisy", "random"}
    assert {row["reasoning_source"] for row in rows} == {"reference"}


def test_an_end_share_draws_that_share_of_each_policys_train_examples_from_episode_ends(tmp_path):
    natural, ended = tmp_path / "natural.jsonl", tmp_path / "ends.jsonl"
    build_dataset(WEBSHOP, 30, natural, test_n=6, seed=2)
    summary = build_dataset(WEBSHOP, 30, ended, test_n=6, seed=2, end_share=0.5)
    train = read_examples(ended, split="train")
    for policy in ("expert", "noisy"):  # their episodes end often enough to fill the share
        rows = [row for row in train if row["policy"] == policy]
        assert sum(map(ends_episode, rows)) == len(rows) // 2
    assert summary.train_episode_ends == sum(map(ends_episode, train))
    assert summary.train_episode_ends > sum(map(ends_episode, read_examples(natural, split="train")))
    # the test examples keep the natural rate: they are what the synthetic env meets
    assert read_examples(ended, split="test") == read_examples(natural, split="test")
    with pytest.raises(ConfigurationError, match="end_share"):
        build_dataset(WEBSHOP, 30, ended, end_share=1.5)


def test_a_near_miss_share_draws_puts_that_win_nothing_from_every_policy(tmp_path):
    """A put (or use) that completes nothing: what a model must not pay, and a random policy rarely does."""
    alfworld = get_domain("alfworld")
    natural, missed = tmp_path / "natural.jsonl", tmp_path / "near-misses.jsonl"
    build_dataset(alfworld, 45, natural, test_n=3, seed=1)
    build_dataset(alfworld, 45, missed, test_n=3, seed=1, near_miss_share=0.4)

    def near_misses(path, policy):
        rows = [row for row in read_examples(path, split="train") if row["policy"] == policy]
        return sum(action_verb(row) in ("put", "use") and not ends_episode(row) for row in rows)

    for policy in ("expert", "noisy"):
        assert near_misses(missed, policy) >= 6 > near_misses(natural, policy)  # 0.4 of 15
    assert near_misses(missed, "random") > near_misses(natural, "random")  # as far as its rounds give them
    assert read_examples(missed, split="test") == read_examples(natural, split="test")
    with pytest.raises(ConfigurationError, match="near_miss_share"):
        build_dataset(alfworld, 45, missed, end_share=0.5, near_miss_share=0.6)


def test_reference_reasoning_says_what_the_action_did_and_why_the_reward(dataset):
    for row in read_examples(dataset):
        request = request_of(row, WEBSHOP)
        answer = json.loads(row["completion"][0]["content"])
        whole = {**carried_values(request), **answer["next_state"]}  # the state the reference env showed
        truth = Transition(next_state=json.dumps(whole), reward=answer["reward"], terminated=answer["done"])
        reasoning = reference_reasoning(WEBSHOP, request, truth)
        assert reasoning == answer["reasoning"]
        assert len(reasoning) <= STRUCTURED_REASONING_CHARS
        assert f"reward {answer['reward']:g}" in reasoning or "partial score" in reasoning
        assert f"to the {whole['kind']} page" in reasoning or "keeps the" in reasoning


def test_train_runs_two_steps_and_writes_the_adapter(two_steps, one_example):
    assert two_steps.stats["steps"] == 2 and two_steps.stats["tokens"] > 0
    assert (two_steps.adapter_dir / "adapter_config.json").is_file()
    assert two_steps.adapter_gguf is not None and two_steps.adapter_gguf.is_file()
    reloaded = TrainedModel.load(two_steps.directory)
    assert reloaded.train_task_ids == {read_examples(one_example)[0]["task_id"]}
    assert reloaded.domain == "webshop"


def test_the_gguf_adapter_holds_the_peft_weights_under_llama_cpp_names(two_steps):
    from safetensors.torch import load_file

    metadata, tensors = read_lora_gguf(two_steps.adapter_gguf)
    assert metadata == {
        "general.type": "adapter",
        "general.architecture": "qwen2",
        "adapter.type": "lora",
        "adapter.lora.alpha": 32.0,
    }
    peft = load_file(str(two_steps.adapter_dir / "adapter_model.safetensors"))
    assert len(tensors) == len(peft) == 2 * 7 * 2  # A and B, 7 linear layers, 2 blocks
    a = peft["base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight"].numpy()
    b = peft["base_model.model.model.layers.0.mlp.down_proj.lora_B.weight"].numpy()
    # float16, as llama.cpp's converter writes adapters by default
    assert tensors["blk.1.attn_q.weight.lora_a"].dtype == np.float16
    assert (tensors["blk.1.attn_q.weight.lora_a"] == a.astype(np.float16)).all() and a.shape == (16, 64)
    assert (tensors["blk.0.ffn_down.weight.lora_b"] == b.astype(np.float16)).all() and b.shape == (64, 16)


def test_resume_continues_and_the_served_model_answers_a_valid_transition(memorised, one_example):
    assert memorised.stats["steps"] == 20 and memorised.stats["resumed_from"] == "checkpoint-2"
    row = read_examples(one_example)[0]
    request = request_of(row, WEBSHOP)
    model = TransformersExperienceModel(memorised.directory, max_new_tokens=8, max_output_reasks=0)
    try:
        transition = model.predict_one(request)
    finally:
        model.close()
    expected = parse_transition(
        row["completion"][0]["content"], Usage(), answer_state_schema(request), carried_values(request)
    )
    assert WEBSHOP.parse_state(transition.next_state) == WEBSHOP.parse_state(expected.next_state)
    assert (transition.reward, transition.terminated) == (expected.reward, expected.terminated)


def test_resume_without_a_checkpoint_is_refused(one_example, tiny_base, tmp_path):
    with pytest.raises(ConfigurationError, match="nothing to resume"):
        train_experience_model(one_example, str(tiny_base), tmp_path, TrainConfig(max_steps=1), resume=True)


def test_the_local_backend_loads_the_adapter_under_its_own_model_id(two_steps, gguf_file):
    runtime = Recording("{}")
    model = LocalExperienceModel(gguf_file, runtime_factory=runtime, lora_adapter=str(two_steps.adapter_gguf))
    model.load()
    assert runtime.settings is not None and runtime.settings.lora_adapter == str(two_steps.adapter_gguf)
    # cached transitions of the base, or of another adapter of the same name, never answer it
    assert model.model_id == f"tiny-test.gguf+adapter.gguf@{file_sha256(two_steps.adapter_gguf)[:12]}"
    model.close()
    with pytest.raises(DataError, match="model file not found"):
        LocalExperienceModel(
            gguf_file, runtime_factory=runtime, lora_adapter=str(gguf_file.parent / "none.gguf")
        )


def test_a_dataset_without_train_rows_is_refused(dataset, tiny_base, tmp_path):
    test_only = tmp_path / "test.jsonl"
    test_only.write_text(
        "".join(json.dumps(r) + "\n" for r in read_examples(dataset, split="test")), encoding="utf-8"
    )
    with pytest.raises(DataError, match="no train examples"):
        train_experience_model(test_only, str(tiny_base), tmp_path / "out", TrainConfig(max_steps=1))


def test_the_dataset_command(tmp_path):
    out = tmp_path / "data.jsonl"
    result = CliRunner().invoke(
        app, ["experience", "dataset", "--domain", "webshop", "--n", "3", "--test-n", "3", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "3 train examples" in result.output and "reasoning from the reference" in result.output
    assert len(read_examples(out, split="train")) == 3 and len(read_examples(out, split="test")) == 3


def test_compare_models_asks_every_model_the_same_transitions_batch_by_batch(monkeypatch, two_steps):
    from dreamgym_env.bench.sampling import sample_transitions
    from dreamgym_env.envs.oracle import OracleExperienceModel
    from dreamgym_env.testing import ScriptedExperienceModel
    from dreamgym_env.training import evaluate

    echo = ScriptedExperienceModel()
    models = {"oracle": (OracleExperienceModel(WEBSHOP), None), "echo": (echo, None)}
    monkeypatch.setattr(evaluate, "load_model", lambda spec, backend: models[spec])
    seen: list[list[int]] = []
    results = evaluate.compare_models(
        ["oracle", "echo"], n=6, domain="webshop", on_batch=lambda rs: seen.append([r.report.n for r in rs])
    )
    assert seen == [[4, 4], [6, 6]]
    oracle, echoed = results
    assert oracle.report.reward_agreement == 1.0 and oracle.report.valid == 1.0
    assert echoed.report.valid == 0.0  # an echoed page is no WebShop state
    drawn = [s.reference.request for s in sample_transitions(WEBSHOP, 6, seed=0)]
    assert echo.requests == drawn  # the very transitions the shared sampler draws, in order

    leaky = TrainedModel(
        directory=two_steps.directory,
        base="x",
        base_gguf=None,
        adapter_gguf=None,
        domain="webshop",
        train_task_ids=frozenset({drawn[0].task.id}),
        config={},
    )
    models["leaky"] = (ScriptedExperienceModel(), leaky)
    with pytest.raises(DataError, match="seen in training"):
        evaluate.compare_models(["oracle", "leaky"], n=6)


def test_examples_and_the_trained_model_record_the_prompt_they_were_made_with(dataset, two_steps):
    pack = get_domain(WEBSHOP)
    rows = read_examples(dataset)
    for row in rows:
        schema = pack.state_json_schema if row["state_mode"] == "structured" else None
        assert row["prompt_fingerprint"] == prompt_fingerprint(pack.prompt, schema)
    reloaded = TrainedModel.load(two_steps.directory)
    assert reloaded.prompt_fingerprint == rows[0]["prompt_fingerprint"] and reloaded.staleness(pack) is None


def test_a_changed_prompt_makes_the_trained_model_stale_with_the_rebuild_command(two_steps, monkeypatch):
    monkeypatch.setattr("dreamgym_env.experience.prompt.PROMPT_VERSION", "a later version")
    trained = TrainedModel.load(two_steps.directory)
    assert "the 'webshop' pack's is now" in (trained.staleness(WEBSHOP) or "")
    with pytest.warns(StaleModelWarning, match="dreamgym experience build --domain webshop"):
        trained.warn_if_stale(WEBSHOP)


def test_the_fingerprint_covers_the_system_prompt_and_the_state_schema():
    pack = get_domain(WEBSHOP)
    base = prompt_fingerprint(pack.prompt, pack.state_json_schema)
    assert base == prompt_fingerprint(pack.prompt, pack.state_json_schema)
    assert base != prompt_fingerprint(pack.prompt, None)
    reworded = pack.prompt.model_copy(update={"rules": pack.prompt.rules + " One more rule."})
    assert base != prompt_fingerprint(reworded, pack.state_json_schema)


def test_a_resumed_run_reports_the_whole_runs_seconds_and_its_own_rate(one_example, tiny_base, tmp_path):
    recipe = {**RECIPE, "save_steps": 1}
    first = train_experience_model(
        one_example, str(tiny_base), tmp_path, TrainConfig(max_steps=1, **recipe), progress=False
    )
    checkpoint = tmp_path / "checkpoints" / "checkpoint-1"
    assert json.loads((checkpoint / TRAIN_TIME_FILE).read_text())["seconds"] > 0
    (checkpoint / TRAIN_TIME_FILE).write_text(json.dumps({"seconds": 1000.0}))  # as if step 1 took long
    resumed = train_experience_model(
        one_example, str(tiny_base), tmp_path, TrainConfig(max_steps=2, **recipe), resume=True, progress=False
    )
    own_seconds = resumed.stats["seconds"] - 1000.0
    assert 0 < own_seconds < 1000.0
    own_tokens = resumed.stats["tokens"] - first.stats["tokens"]
    assert resumed.stats["tokens_per_s"] == pytest.approx(
        own_tokens / own_seconds, rel=0.25
    )  # seconds are rounded to 0.1


def _alfworld_row(action: str, done: bool) -> dict[str, Any]:
    answer = json.dumps({"reasoning": "r", "next_state": {}, "reward": float(done), "done": done})
    return {"domain": "alfworld", "request": {"action": action}, "task_id": "t",
            "completion": [{"role": "assistant", "content": answer}]}  # fmt: skip


def test_the_verbs_that_end_some_episodes_and_not_others_are_weighted_like_episode_ends():
    rows = [
        _alfworld_row("put mug 1 in/on desk 1", True),
        _alfworld_row("put mug 2 in/on desk 1", False),  # the first of two mugs
        _alfworld_row("use desklamp 1", True),  # ends whenever it appears: not decisive
        _alfworld_row("go to desk 1", False),
        _alfworld_row("dance with the lamp", True),  # not an action: no verb
        _alfworld_row("dance with the fridge", False),
    ]
    assert decisive_verbs(rows) == {"put"}
    config = TrainConfig(end_weight=2, decisive_weight=5)
    copies = [sum(kept is row for kept in weighted_rows(rows, config, {"put"})) for row in rows]
    assert copies == [5, 5, 2, 1, 2, 1]
    assert len(weighted_rows(rows, TrainConfig(end_weight=3), set())) == 6 + 2 * 3
    with pytest.raises(ConfigurationError, match="decisive_weight"):
        TrainConfig(decisive_weight=0)
