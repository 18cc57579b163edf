"""Fixtures of the training tests: a tiny dataset and a tiny Qwen2 base built here (no download)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("peft")
pytest.importorskip("gguf")
pytest.importorskip("trl")
torch = pytest.importorskip("torch")

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.rl.tiny_lm import train_tokenizer
from dreamgym_env.training.dataset import build_dataset, read_examples

WEBSHOP = get_domain("webshop")
TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
"""Turns end with the end-of-sequence token, as Qwen's ``<|im_end|>``: a model learns to stop."""


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models run fastest on one thread, and the machine's other cores stay free."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "webshop.jsonl"
    build_dataset(WEBSHOP, 6, path, test_n=6, seed=1)
    return path


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory, dataset) -> Path:
    """A 2-layer Qwen2 (hidden 64) and a BPE tokenizer trained on the data; the first answer is one token.

    One token a whole answer lets twenty steps teach the model to write it (so that serving can
    be checked to give a valid transition); a wide embedding initialisation lets its logits peak;
    the chat template ends each turn with the end-of-sequence token, so the model learns to stop.
    """
    from transformers import Qwen2Config, Qwen2ForCausalLM

    rows = read_examples(dataset)
    tokenizer = train_tokenizer(
        [m["content"] for row in rows for m in row["prompt"] + row["completion"]], 1000
    )
    tokenizer.add_tokens([rows[0]["completion"][0]["content"]])
    tokenizer.chat_template = TEMPLATE
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
        initializer_range=0.5,
    )
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("base")
    Qwen2ForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
