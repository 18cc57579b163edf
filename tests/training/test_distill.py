"""The distilled experience model: trained from scratch, written whole as GGUF, served alone without the system prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft")
gguf = pytest.importorskip("gguf")
pytest.importorskip("trl")
torch = pytest.importorskip("torch")

from typer.testing import CliRunner

from dreamgym_env.cli import app
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError, ModelOutputError
from dreamgym_env.experience import local
from dreamgym_env.experience.local import LocalExperienceModel
from dreamgym_env.experience.selection import model_from_spec
from dreamgym_env.experience.trained import DISTILLED_BASE, TrainedModel
from dreamgym_env.training.dataset import read_examples, request_of
from dreamgym_env.training.distill import (
    DISTILLED_CHAT_TEMPLATE,
    ModelSize,
    distill_experience_model,
    distilled_tokenizer,
)
from dreamgym_env.training.train import TrainConfig

WEBSHOP = get_domain("webshop")
TINY = ModelSize(hidden=32, layers=2, heads=2, ffn=64, context=2048)


@pytest.fixture(scope="module")
def distilled(dataset, tmp_path_factory) -> TrainedModel:
    out = tmp_path_factory.mktemp("distilled")
    return distill_experience_model(
        dataset, out, size=TINY, vocab_size=400, config=TrainConfig(max_steps=2, batch_size=2, save_steps=1)
    )


def test_the_tokenizer_reads_no_system_turn_and_the_prompt_prefixes_the_whole_example(dataset):
    rows = read_examples(dataset, split="train")
    tokenizer = distilled_tokenizer(rows, 400)
    row = rows[0]
    assert row["prompt"][0]["role"] == "system"
    prompt = tokenizer.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
    whole = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=False)
    assert row["prompt"][0]["content"] not in prompt
    assert prompt.startswith("<|im_start|>user\n") and prompt.endswith("<|im_start|>assistant\n")
    assert whole.startswith(prompt) and whole.endswith(
        "<|im_end|>\n"
    )  # the answer is what follows, then its end
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.chat_template == DISTILLED_CHAT_TEMPLATE
    text = row["completion"][0]["content"]
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    with pytest.raises(ConfigurationError, match="vocab_size"):
        distilled_tokenizer(rows, 100)


def test_distill_writes_a_whole_gguf_and_a_manifest_that_serves_it_without_the_system_prompt(distilled):
    assert distilled.base == DISTILLED_BASE and distilled.adapter_gguf is None
    assert distilled.model_gguf is not None and distilled.model_gguf.is_file()
    assert distilled.system_prompt is False and distilled.stats["steps"] == 2
    assert distilled.config["shape"]["hidden"] == 32 and distilled.config["parameters"] > 0
    reader = gguf.GGUFReader(str(distilled.model_gguf))
    assert reader.fields["general.architecture"].contents() == "qwen2"
    assert reader.fields["tokenizer.chat_template"].contents() == DISTILLED_CHAT_TEMPLATE
    assert reader.fields["qwen2.block_count"].contents() == 2
    names = {tensor.name for tensor in reader.tensors}
    assert {"token_embd.weight", "blk.1.attn_q.bias", "blk.1.ffn_down.weight", "output_norm.weight"} <= names
    assert "output.weight" not in names  # tied: llama.cpp reads the token embeddings
    loaded = TrainedModel.load(distilled.directory)
    assert loaded.local_settings() == {
        "model_path": str(distilled.model_gguf),
        "system_prompt": False,
        "n_parallel": 16,
        "n_threads": 1,  # one core: a second thread stalls while another process holds that core
        "n_ctx": 2048,  # the context it was trained for
    }
    assert loaded.staleness(WEBSHOP) is None
    assert "distilled model (custom)" in loaded.describe()


def test_a_replaced_model_file_makes_it_stale(distilled, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("dreamgym-experience.json", "model.gguf"):
        (copy / name).write_bytes((distilled.directory / name).read_bytes())
    (copy / "model.gguf").write_bytes(b"GGUF" + bytes(16))
    assert "model.gguf is not the file its manifest records" in str(
        TrainedModel.load(copy).staleness(WEBSHOP)
    )
    (copy / "model.gguf").unlink()
    assert "model.gguf is missing" in str(TrainedModel.load(copy).staleness(WEBSHOP))


def test_the_local_backend_sends_a_distilled_model_the_user_turn_only(distilled, dataset):
    seen: list[dict[str, Any]] = []

    class Runtime:
        def __init__(self, path: Path, settings: local.LocalSettings) -> None:
            self.path = path

        def chat(self, body: dict[str, Any], should_stop: Any) -> dict[str, Any]:
            seen.append(body)
            return {"choices": [{"message": {"content": "not json"}, "finish_reason": "stop"}], "usage": {}}

        def close(self) -> None:
            pass

    row = read_examples(dataset, split="test")[0]
    model = LocalExperienceModel(**distilled.local_settings(), runtime_factory=Runtime, max_output_reasks=1)
    with pytest.raises(ModelOutputError):
        model.predict_one(request_of(row, WEBSHOP))
    model.close()
    assert len(seen) == 2  # asked, re-asked once: the same loop as every model
    assert [m["role"] for m in seen[0]["messages"]] == ["user"]
    assert all(m["role"] != "system" for body in seen for m in body["messages"])
    assert seen[0]["response_format"]["type"] == "json_object"  # the same grammar-constrained decoding


def _real_runtime_missing() -> bool:
    return not local.xllamacpp_installed()


@pytest.mark.skipif(_real_runtime_missing(), reason="needs the local extra's xllamacpp")
def test_the_embedded_runtime_loads_the_gguf_and_reads_the_prompt_the_model_was_trained_on(
    distilled, dataset
):
    from transformers import PreTrainedTokenizerFast

    row = read_examples(dataset, split="test")[0]
    tokenizer = PreTrainedTokenizerFast.from_pretrained(distilled.directory / "model")
    user_only = [m for m in row["prompt"] if m["role"] != "system"]
    trained_on = tokenizer(
        tokenizer.apply_chat_template(user_only, tokenize=False, add_generation_prompt=True)
    )
    model = model_from_spec(f"local:{distilled.directory}", n_ctx=2048, n_parallel=1, max_tokens=4)
    try:
        reply = model.run(model.complete(user_only))
    finally:
        model.close()
    assert reply.prompt_tokens == len(trained_on["input_ids"])  # the same template, the same tokens
    assert 1 <= reply.completion_tokens <= 4


def test_the_distill_command_and_its_errors(dataset, tmp_path):
    command = f"experience distill --data {dataset} --out {tmp_path / 'm'} --size xs --vocab-size 400"
    result = CliRunner().invoke(app, [*command.split(), "--max-steps", "1", "--batch-size", "2"])
    assert result.exit_code == 0, result.output
    assert "1 steps" in result.output and "model.gguf" in result.output
    manifest = json.loads((tmp_path / "m" / "dreamgym-experience.json").read_text())
    assert manifest["config"]["size"] == "xs" and manifest["system_prompt"] is False
    with pytest.raises(ConfigurationError, match="size must be one of xs, s, m"):
        distill_experience_model(dataset, tmp_path / "n", size="huge")
    with pytest.raises(DataError, match="no train examples"):
        empty = tmp_path / "empty.jsonl"
        empty.write_text("")
        distill_experience_model(empty, tmp_path / "e", size="xs")
