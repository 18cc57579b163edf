"""A distilled experience model: a small language model trained from scratch on a pack's transitions.

The 0.5B base with a LoRA adapter is faithful but slow on a CPU (tens of seconds a transition);
a model a hundred times smaller, with a tokenizer trained on the pack's own text, answers the
same requests with the same structured answers many times a second. The reference envs
generate training transitions without limit (:mod:`.dataset`), so the small model learns the
domain's rules from data instead of reading them: its requests leave out the system prompt
(:attr:`~dreamgym_env.experience.trained.TrainedModel.system_prompt`), and its chat template
renders only the user and assistant turns.

The recipe: a byte-level BPE tokenizer (Hugging Face ``tokenizers``, as :mod:`dreamgym_env.rl.tiny_lm`'s) trained on the train rows'
requests and answers; a Qwen2-architecture model (:data:`MODEL_SIZES`) initialised at random;
full training with the same ``SFTTrainer`` loop as the LoRA recipe (:func:`.train.fit_sft`:
loss on the answers, episode ends weighted, checkpoints, resume, progress); the whole model
written as one GGUF file (:func:`.export.write_model_gguf`) that the embedded runtime serves
alone, with the same grammar-constrained decoding and the same judge and re-asks.

Example::

    trained = distill_experience_model("runs/webshop_sft.jsonl", "runs/webshop-distilled", size="s")
    model = LocalExperienceModel(**trained.local_settings())
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from dreamgym_env.errors import ConfigurationError
from dreamgym_env.experience.trained import DISTILLED_BASE, MODEL_GGUF, TrainedModel, file_sha256
from dreamgym_env.rl.tiny_lm import train_tokenizer
from dreamgym_env.training.export import write_model_gguf
from dreamgym_env.training.train import TrainConfig, check_rows, fit_sft

MODEL_DIR: Final = "model"
"""The distilled model's Hugging Face weights and tokenizer, beside its GGUF."""
TOKENIZER_DIR: Final = "tokenizer"
"""The tokenizer trained before the model (a resumed run reads it back, so the ids stay the same)."""
END_OF_TEXT: Final = "<|endoftext|>"
TURN_START: Final = "<|im_start|>"
TURN_END: Final = "<|im_end|>"
DISTILLED_CHAT_TEMPLATE: Final = (
    "{% for message in messages %}{% if message['role'] != 'system' %}"
    "{{ '" + TURN_START + "' + message['role'] + '\\n' + message['content'] + '" + TURN_END + "\\n' }}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '" + TURN_START + "assistant\\n' }}{% endif %}"
)
"""ChatML without the system turn: the model is never shown one."""
DEFAULT_VOCAB_SIZE: Final = 4096
DEFAULT_DISTILL_CONFIG: Final = TrainConfig(
    max_steps=600,
    batch_size=16,
    learning_rate=3e-3,
    warmup_steps=20,
    save_steps=50,
    max_length=2048,
    end_weight=4,
)
"""Full training from scratch: large batches and a high learning rate (a LoRA's are 1 and 2e-4)."""


@dataclass(frozen=True)
class ModelSize:
    """A distilled model's shape: Qwen2 blocks of ``hidden`` units, ``heads`` attention heads, ``ffn`` MLP units."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    context: int = 4096


MODEL_SIZES: Final = {
    "xs": ModelSize(hidden=128, layers=4, heads=4, ffn=384),
    "s": ModelSize(hidden=256, layers=4, heads=4, ffn=768),
    "m": ModelSize(hidden=384, layers=6, heads=6, ffn=1024),
}
"""About 1.3M, 4.5M and 13M parameters with a 4,096-token vocabulary."""


def _texts(rows: list[dict[str, Any]]) -> Iterator[str]:
    """What the model reads and writes: the user turns and the answers (never the system prompt)."""
    for row in rows:
        for message in [*row["prompt"], *row["completion"]]:
            if message["role"] != "system":
                yield str(message["content"])


def distilled_tokenizer(rows: list[dict[str, Any]], vocab_size: int = DEFAULT_VOCAB_SIZE) -> Any:
    """A byte-level BPE tokenizer trained on ``rows``' requests and answers, with the distilled chat template."""
    if vocab_size < 300:
        raise ConfigurationError(f"vocab_size must be >= 300 (the 256 bytes and merges), got {vocab_size}")
    return train_tokenizer(
        _texts(rows),
        vocab_size,
        special_tokens=(END_OF_TEXT, TURN_START, TURN_END),
        pad_token=END_OF_TEXT,
        eos_token=TURN_END,
        bos_token=None,
        unk_token=None,
        chat_template=DISTILLED_CHAT_TEMPLATE,
    )


def new_model(size: ModelSize, vocab_size: int, *, seed: int = 0) -> Any:
    """A Qwen2 causal LM of ``size``, initialised at random (tied input and output embeddings)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=size.hidden,
        intermediate_size=size.ffn,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        num_key_value_heads=size.heads,
        max_position_embeddings=size.context,
        tie_word_embeddings=True,
    )
    return Qwen2ForCausalLM(config)


def distill_experience_model(
    data: str | Path,
    out: str | Path,
    *,
    size: str | ModelSize = "s",
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    config: TrainConfig = DEFAULT_DISTILL_CONFIG,
    resume: bool = False,
    progress: bool = True,
) -> TrainedModel:
    """Train a distilled experience model of ``size`` on the train rows of ``data``; write it to ``out``.

    ``size``: a name of :data:`MODEL_SIZES` or a :class:`ModelSize`.
    ``out`` gets ``tokenizer/``, ``checkpoints/``, ``model/`` (Hugging Face), ``model.gguf``
    (what the local backend serves) and the manifest. With ``resume`` the run continues from
    its last checkpoint, with the tokenizer it was started with.
    """
    import torch
    from transformers import PreTrainedTokenizerFast

    if isinstance(size, str) and size not in MODEL_SIZES:
        raise ConfigurationError(f"size must be one of {', '.join(MODEL_SIZES)}, got {size!r}")
    shape = MODEL_SIZES[size] if isinstance(size, str) else size
    train = check_rows(data)
    out = Path(out)
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    tokenizer_dir = out / TOKENIZER_DIR
    if resume:
        tokenizer = PreTrainedTokenizerFast.from_pretrained(tokenizer_dir)
    else:
        tokenizer = distilled_tokenizer(train.rows, vocab_size)
        tokenizer.save_pretrained(tokenizer_dir)
    model = new_model(shape, len(tokenizer), seed=config.seed)
    run = fit_sft(model, tokenizer, train.rows, out, config, resume=resume, progress=progress)
    run.model.save_pretrained(out / MODEL_DIR)
    tokenizer.save_pretrained(out / MODEL_DIR)
    model_gguf = out / MODEL_GGUF
    write_model_gguf(run.model, tokenizer, model_gguf)
    return train.save_manifest(
        out,
        run,
        base=DISTILLED_BASE,
        base_gguf=None,
        adapter_gguf=None,
        config={
            **asdict(config),
            "target_modules": [],
            "data": str(data),
            "size": size if isinstance(size, str) else "custom",
            "shape": asdict(shape),
            "vocab_size": len(tokenizer),
            "parameters": sum(p.numel() for p in run.model.parameters()),
        },
        model_gguf=model_gguf,
        model_sha256=file_sha256(model_gguf),
        system_prompt=False,
    )
