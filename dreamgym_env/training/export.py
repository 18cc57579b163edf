"""A PEFT LoRA adapter written as a llama.cpp GGUF LoRA adapter, for the local backend.

llama.cpp loads a LoRA adapter beside its base model (``--lora``; xllamacpp's
``CommonParams.lora_adapters``, set by :attr:`~dreamgym_env.experience.local.LocalSettings.lora_adapter`).
The file holds ``general.type = "adapter"``, ``adapter.type = "lora"``, ``adapter.lora.alpha``
and, for every adapted weight, ``blk.N.<name>.weight.lora_a`` (shape ``r x in``) and
``.lora_b`` (``out x r``), named by the ``gguf`` package's own tensor-name map, as llama.cpp's
``convert_lora_to_gguf.py`` writes them. That script is not on PyPI and needs a checkout of
llama.cpp; the ``gguf`` package is, and it is the library the script writes with. llama.cpp
scales the product by ``alpha / r``, as PEFT does. The tensors are stored in float16, as
``convert_lora_to_gguf.py`` does by default: half the size of float32 (a pack ships its adapter
in the wheel), and the precision llama.cpp computes the product in on the CPU.

Only architectures whose weights llama.cpp's converter stores unchanged are written
(:data:`GGUF_ADAPTER_ARCHS`): for others (Llama permutes its query and key rows) the adapter
would need the same permutation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from dreamgym_env.errors import ConfigurationError, DataError

GGUF_ADAPTER_ARCHS: Final = ("qwen2", "qwen3")
"""Architectures (``config.model_type`` = GGUF ``general.architecture``) whose adapters are written."""
_PEFT_PREFIX: Final = "base_model.model."


def gguf_architecture(path: str | Path) -> str:
    """The ``general.architecture`` of a GGUF file."""
    import gguf

    try:
        reader = gguf.GGUFReader(str(path))
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read the GGUF file {path}: {exc}") from None
    field = reader.fields.get(gguf.Keys.General.ARCHITECTURE)
    if field is None:
        raise DataError(f"{path} names no architecture")
    return str(field.contents())


def write_lora_gguf(model: Any, path: str | Path, *, arch: str | None = None) -> int:
    """Write the LoRA adapter of a PEFT ``model`` to ``path`` as a GGUF adapter; returns its tensor count.

    ``arch`` defaults to the base model's ``config.model_type``. The adapter must be a plain
    LoRA (no DoRA, no bias training); its alpha is the adapter config's ``lora_alpha``.
    """
    import gguf
    from peft import get_peft_model_state_dict

    config = model.peft_config["default"]
    arch = arch or str(model.config.model_type)
    if arch not in GGUF_ADAPTER_ARCHS:
        raise ConfigurationError(
            f"cannot write a GGUF adapter for architecture {arch!r}: supported {', '.join(GGUF_ADAPTER_ARCHS)}"
        )
    if getattr(config, "use_dora", False) or getattr(config, "bias", "none") != "none":
        raise ConfigurationError("only plain LoRA adapters (no DoRA, bias='none') can be written as GGUF")
    names = {value: key for key, value in gguf.MODEL_ARCH_NAMES.items()}
    name_map = gguf.get_tensor_name_map(names[arch], int(model.config.num_hidden_layers))
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(config.lora_alpha))
    count = 0
    for key, tensor in sorted(get_peft_model_state_dict(model).items()):
        for peft_part, gguf_part in ((".lora_A.weight", "lora_a"), (".lora_B.weight", "lora_b")):
            if key.endswith(peft_part):
                weight = key.removeprefix(_PEFT_PREFIX).removesuffix(peft_part) + ".weight"
                target = name_map.get_name(weight, try_suffixes=(".weight",))
                if target is None:
                    raise DataError(f"no GGUF name for {weight!r} in architecture {arch!r}")
                writer.add_tensor(f"{target}.{gguf_part}", tensor.detach().cpu().half().numpy())
                count += 1
                break
        else:
            raise DataError(f"not a LoRA weight: {key!r}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return count


def read_lora_gguf(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The metadata and tensors of a GGUF LoRA adapter.

    The metadata: ``general.type``, ``general.architecture``, ``adapter.type`` and
    ``adapter.lora.alpha``; the tensors: numpy arrays in PEFT's orientation.
    """
    import gguf

    reader = gguf.GGUFReader(str(path))
    keys = (
        gguf.Keys.General.TYPE,
        gguf.Keys.General.ARCHITECTURE,
        gguf.Keys.Adapter.TYPE,
        gguf.Keys.Adapter.LORA_ALPHA,
    )
    metadata = {key: reader.fields[key].contents() for key in keys if key in reader.fields}
    # GGUF stores dimensions innermost first; numpy's shape is the reverse.
    tensors = {t.name: t.data.reshape(tuple(int(d) for d in reversed(t.shape))) for t in reader.tensors}
    return metadata, tensors


def write_model_gguf(model: Any, tokenizer: Any, path: str | Path) -> int:
    """Write a whole Qwen2 ``model`` with its byte-level BPE ``tokenizer`` and chat template as GGUF; returns its tensor count.

    As llama.cpp's ``convert_hf_to_gguf.py`` writes a Qwen2 model: the architecture's
    hyper-parameters, the tokenizer as ``gpt2`` tokens and merges (the ``qwen2`` pre-tokenizer:
    the byte-level split the ``tokenizers`` library trains with), the chat template, matrices
    in float16 and norms and biases in float32 (llama.cpp's CPU kernels need those in float32).
    A tied output layer is left out: llama.cpp then reads the token embeddings.
    """
    import gguf
    import numpy as np

    config = model.config
    if str(config.model_type) != "qwen2":
        raise ConfigurationError(f"only Qwen2 models are written whole, got {config.model_type!r}")
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    if spec["model"]["type"] != "BPE":
        raise ConfigurationError(f"only byte-level BPE tokenizers are written, got {spec['model']['type']!r}")
    tokens = [""] * len(tokenizer)
    for text, index in tokenizer.get_vocab().items():
        tokens[index] = text
    special = {index for index, token in tokenizer.added_tokens_decoder.items() if token.special}
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_context_length(int(config.max_position_embeddings))
    writer.add_embedding_length(int(config.hidden_size))
    writer.add_block_count(int(config.num_hidden_layers))
    writer.add_feed_forward_length(int(config.intermediate_size))
    writer.add_head_count(int(config.num_attention_heads))
    writer.add_head_count_kv(int(config.num_key_value_heads))
    writer.add_rope_freq_base(float(config.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(float(config.rms_norm_eps))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(
        [gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL for i in range(len(tokens))]
    )
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]])
    writer.add_eos_token_id(int(tokenizer.eos_token_id))
    writer.add_pad_token_id(int(tokenizer.pad_token_id))
    writer.add_add_bos_token(False)
    writer.add_chat_template(str(tokenizer.chat_template))
    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, int(config.num_hidden_layers))
    count = 0
    for key, tensor in model.state_dict().items():
        if key == "lm_head.weight" and config.tie_word_embeddings:
            continue
        target = name_map.get_name(key, try_suffixes=(".weight", ".bias"))
        if target is None:
            raise DataError(f"no GGUF name for {key!r} in architecture 'qwen2'")
        values = tensor.detach().cpu().float().numpy()
        writer.add_tensor(target, values.astype(np.float16 if values.ndim == 2 else np.float32))
        count += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return count
