"""A tiny randomly initialised causal LM and a locally trained tokenizer, built offline.

For smoke tests and examples of LLM-policy training (TRL GRPO) on machines without a model
download: the tokenizer is trained with the ``tokenizers`` library on texts you give (e.g. the
env's pages), the model is a small ``LlamaForCausalLM`` built from a config. It learns nothing
useful in a few steps; it shows that the pipeline runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from dreamgym_env.errors import ConfigurationError

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>", "<unk>")
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 512,
    *,
    special_tokens: Sequence[str] = SPECIAL_TOKENS,
    pad_token: str = "<pad>",
    eos_token: str = "</s>",
    bos_token: str | None = "<s>",
    unk_token: str | None = "<unk>",
    chat_template: str = CHAT_TEMPLATE,
) -> Any:
    """A byte-level BPE tokenizer trained on ``texts``, as a ``PreTrainedTokenizerFast``.

    By default pad, BOS, EOS and UNK are set, and a plain chat template (``role: content``
    lines); ``special_tokens`` (which hold the named ones) get the first ids.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [t for t in texts if t]
    if not corpus:
        raise ConfigurationError("train_tokenizer needs at least one non-empty text")
    roles = {"pad_token": pad_token, "eos_token": eos_token, "bos_token": bos_token, "unk_token": unk_token}
    named = [t for t in roles.values() if t is not None]
    if not set(named) <= set(special_tokens):
        raise ConfigurationError(
            f"the named tokens {named} must be among special_tokens {list(special_tokens)}"
        )
    tokenizer = Tokenizer(models.BPE(unk_token=unk_token))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, **roles)
    fast.chat_template = chat_template
    return fast


def tiny_llama(
    tokenizer: Any, *, hidden_size: int = 32, layers: int = 2, heads: int = 2, seed: int = 0
) -> Any:
    """A randomly initialised ``LlamaForCausalLM`` sized for ``tokenizer`` (~100k parameters by default)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)
