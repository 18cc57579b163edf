"""Supervised fine-tuning of an experience model: TRL's ``SFTTrainer`` with a PEFT LoRA adapter.

The data are :mod:`.dataset` rows in TRL's conversational prompt-completion format, so the loss
is on the answer only (``completion_only_loss``): the model learns to answer the backends'
requests, not to write them. The base is a Hugging Face model directory, a GGUF file or a
preset name of the embedded model (``qwen-0.5b``): ``transformers`` loads GGUF weights with the
``gguf`` package, dequantised to float32, so the recipe needs no hub access. The same command
uses a GPU when there is one (bfloat16 there).

The output directory holds ``adapter/`` (the PEFT adapter and the tokenizer), ``adapter.gguf``
(the llama.cpp adapter, :mod:`.export`) where the architecture allows, ``checkpoints/`` (resume
with ``resume=True``) and the manifest :data:`MANIFEST_NAME`: the base, the domain, the train
tasks (so that an evaluation can refuse to score seen tasks) and the measured cost.

Example::

    result = train_experience_model("runs/webshop_sft.jsonl", "qwen-0.5b", "runs/webshop-lora",
                                     TrainConfig(max_steps=60))
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from dreamgym_env.domain import SUPPLIES, Supply
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.experience.local import DEFAULT_N_CTX
from dreamgym_env.experience.provision import PRESETS, check_gguf, model_file
from dreamgym_env.experience.trained import (
    ADAPTER_DIR,
    ADAPTER_GGUF,
    TrainedModel,
    file_sha256,
)
from dreamgym_env.training.dataset import action_verb, decisive_verbs, ends_episode, read_examples
from dreamgym_env.training.export import GGUF_ADAPTER_ARCHS, gguf_architecture, write_lora_gguf

CHECKPOINT_DIR: Final = "checkpoints"
TRAIN_TIME_FILE: Final = "dreamgym-train-seconds.json"
"""In each checkpoint: the training seconds up to it, for a resumed run's stats."""
DEFAULT_TARGET_MODULES: Final = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Every linear layer of a Qwen2/Llama block."""


@dataclass(frozen=True)
class TrainConfig:
    """The recipe's knobs.

    ``max_steps`` optimiser steps of ``batch_size * grad_accum`` examples (the data repeat as
    needed); ``max_length`` tokens per example (default: the local backend's context, so nothing
    a backend sends is cut); a checkpoint every ``save_steps`` (the last two kept);
    ``gradient_checkpointing`` recomputes activations in the backward pass (less memory, about a
    third more compute); ``threads``: torch's CPU threads (default: torch's choice; on a busy
    machine fewer threads than cores can be much faster); ``max_minutes``: stop after the step
    that passes this much training time (the adapter is written as after ``max_steps``);
    ``end_weight``: each example whose answer ends the episode appears this many times in the
    training set. Episode ends (the only steps with a reward, in most domains) are 8-14 % of
    reference transitions, so a short run sees few of them and can learn "never done" instead.
    ``decisive_weight``: each example whose action's verb ends the episode in some examples and
    not in others (:func:`~.dataset.decisive_verbs`: ALFWorld's ``put``) appears this many times
    (an episode end among them, the larger of the two weights). The verdict of such a step is
    one token of a long answer; weighted, it is a larger share of the loss.
    """

    max_steps: int = 200
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    target_modules: tuple[str, ...] = DEFAULT_TARGET_MODULES
    learning_rate: float = 2e-4
    batch_size: int = 1
    grad_accum: int = 1
    max_length: int = DEFAULT_N_CTX
    save_steps: int = 20
    warmup_steps: int = 0
    seed: int = 0
    gradient_checkpointing: bool = False
    threads: int | None = None
    max_minutes: float | None = None
    end_weight: int = 1
    decisive_weight: int = 1

    def __post_init__(self) -> None:
        for name in ("max_steps", "lora_r", "batch_size", "grad_accum", "max_length", "save_steps",
                     "end_weight", "decisive_weight"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.threads is not None and self.threads < 1:
            raise ConfigurationError(f"threads must be >= 1, got {self.threads}")
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ConfigurationError(f"max_minutes must be > 0, got {self.max_minutes}")
        if self.learning_rate <= 0 or not 0 <= self.lora_dropout < 1:
            raise ConfigurationError("learning_rate must be > 0 and lora_dropout in [0, 1)")


def resolve_base(base: str) -> tuple[Path, str | None]:
    """``base`` as (a directory, the GGUF file's name in it or ``None`` for a Hugging Face directory).

    A preset name is provisioned as the local backend does (:func:`~dreamgym_env.experience.provision.model_file`).
    """
    if base.strip().lower() in PRESETS:
        path, _ = model_file(preset=base)
        return path.parent, path.name
    path = Path(base).expanduser()
    if path.is_file():
        check_gguf(path)
        return path.parent, path.name
    if (path / "config.json").is_file():
        return path, None
    raise ConfigurationError(
        f"base {base!r} is neither a preset ({', '.join(PRESETS)}), a GGUF file nor a Hugging Face model directory"
    )


def load_base(base: str, *, dtype: Any = None) -> tuple[Any, Any]:
    """The base model and its tokenizer (a GGUF dequantised by ``transformers``); pad token set."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, gguf_file = resolve_base(base)
    kwargs: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    tokenizer = AutoTokenizer.from_pretrained(directory, **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not tokenizer.chat_template:
        raise ConfigurationError(f"base {base!r} has no chat template: an experience model is a chat model")
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=dtype, **kwargs)
    quantizer = getattr(model, "hf_quantizer", None)
    if gguf_file and quantizer is not None:
        # transformers dequantises GGUF weights into plain tensors but keeps the quantizer's mark,
        # which makes the Trainer refuse the model; the mark describes the file, not these weights.
        quantizer.remove_quantization_config(model)
    return model, tokenizer


def progress_callback(
    max_steps: int, *, enabled: bool = True, max_minutes: float | None = None, seconds_before: float = 0.0
) -> Any:
    """A trainer callback: a progress bar with loss, tokens per second and ETA (tqdm's).

    With ``max_minutes`` it also stops training after the step that passes that time. Each
    checkpoint records the training seconds up to it (``seconds_before`` and this run's), so a
    resumed run's manifest reports the whole run's time, not only its own.
    """
    from tqdm.auto import tqdm
    from transformers import TrainerCallback

    class Progress(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.bar: Any = None
            self.started = 0.0
            self.tokens0 = 0
            self.loss: float | None = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.bar = tqdm(
                total=max_steps, initial=state.global_step, desc="train", unit="step", disable=not enabled
            )
            self.started, self.tokens0 = time.perf_counter(), int(state.num_input_tokens_seen or 0)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if logs and "loss" in logs:
                self.loss = float(logs["loss"])

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            elapsed = max(1e-9, time.perf_counter() - self.started)
            rate = (int(state.num_input_tokens_seen or 0) - self.tokens0) / elapsed
            postfix = {"tok/s": f"{rate:.0f}"}
            if self.loss is not None:
                postfix["loss"] = f"{self.loss:.3f}"
            self.bar.set_postfix(postfix, refresh=False)
            self.bar.update(state.global_step - self.bar.n)
            if max_minutes is not None and elapsed > 60 * max_minutes:
                control.should_training_stop = True

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if checkpoint.is_dir():
                seconds = seconds_before + time.perf_counter() - self.started
                (checkpoint / TRAIN_TIME_FILE).write_text(json.dumps({"seconds": round(seconds, 1)}) + "\n")

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.bar.close()

    return Progress()


@dataclass(frozen=True)
class SftRun:
    """What one :func:`fit_sft` run did: the trained model, its trainer state and its cost."""

    model: Any
    steps: int
    tokens: int
    seconds: float
    """The whole run's training seconds (a resumed run's earlier ones included)."""
    tokens_per_s: float | None
    losses: list[float]
    train_loss: float | None
    episode_ends: int
    decisive_verbs: list[str]
    epochs: float
    resumed_from: str | None
    device: str

    def stats(self, examples: int) -> dict[str, Any]:
        """The manifest's ``stats``."""
        return {
            "steps": self.steps,
            "examples": examples,
            "episode_ends": self.episode_ends,
            "decisive_verbs": self.decisive_verbs,
            "epochs": self.epochs,
            "tokens": self.tokens,
            "seconds": round(self.seconds, 1),
            "tokens_per_s": self.tokens_per_s,
            "first_loss": self.losses[0] if self.losses else None,
            "final_loss": self.losses[-1] if self.losses else None,
            "train_loss": self.train_loss,
            "device": self.device,
            "resumed_from": self.resumed_from,
        }


@dataclass(frozen=True)
class TrainRows:
    """The train rows of a dataset file, with their one domain, state mode, prompt fingerprint and supply."""

    data: str | Path
    rows: list[dict[str, Any]]
    domain: str
    state_mode: str | None
    fingerprint: str | None
    supply: Supply = "pack"

    def save_manifest(self, out: Path, run: SftRun, **fields: Any) -> TrainedModel:
        """Save and return the manifest of ``run`` on these rows, in ``out``; ``fields``: the recipe's part."""
        trained = TrainedModel(
            directory=out,
            domain=self.domain,
            train_task_ids=frozenset(str(row["task_id"]) for row in self.rows),
            stats=run.stats(len(self.rows)),
            state_mode=self.state_mode,
            prompt_fingerprint=self.fingerprint,
            supply=self.supply,
            data={"file": str(self.data), "sha256": file_sha256(self.data), "train_examples": len(self.rows)},
            **fields,
        )
        trained.save()
        return trained


def check_rows(data: str | Path) -> TrainRows:
    """The train rows of ``data``, checked to share one domain, state mode, prompt fingerprint and supply.

    A row records ``"supply": "none"`` when its request carries no pack data (examples from
    recorded trajectories); a row without one was made with the pack's (``"pack"``).
    """
    rows = read_examples(data, split="train")
    if not rows:
        raise DataError(f"{data} has no train examples")
    domains = {row.get("domain") for row in rows}
    if len(domains) != 1:
        raise DataError(
            f"{data} mixes domains {sorted(map(str, domains))}: train one experience model a domain"
        )
    prompts = {(row.get("state_mode"), row.get("prompt_fingerprint")) for row in rows}
    if len(prompts) != 1:
        raise DataError(f"{data} mixes state modes or prompts {sorted(map(str, prompts))}: build it again")
    ((state_mode, fingerprint),) = prompts
    supplies = {row.get("supply", "pack") for row in rows}
    if len(supplies) != 1 or not supplies <= set(SUPPLIES):
        raise DataError(f"{data} mixes or misnames supplies {sorted(map(str, supplies))}: build it again")
    return TrainRows(data, rows, str(next(iter(domains))), state_mode, fingerprint, supplies.pop())


def weighted_rows(
    rows: list[dict[str, Any]], config: TrainConfig, decisive: set[str]
) -> list[dict[str, Any]]:
    """The training set, each row as many times as its weight.

    A row that ends the episode weighs ``end_weight``; one whose action's verb is in
    ``decisive`` weighs ``decisive_weight``; the larger when both, 1 otherwise.
    """
    weighted = []
    for row in rows:
        copies = max(
            config.end_weight if ends_episode(row) else 1,
            config.decisive_weight if decisive and action_verb(row) in decisive else 1,
        )
        weighted += [row] * copies
    return weighted


def fit_sft(
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    out: Path,
    config: TrainConfig,
    *,
    peft_config: Any = None,
    resume: bool = False,
    progress: bool = True,
) -> SftRun:
    """Train ``model`` on ``rows`` with TRL's ``SFTTrainer`` (loss on the answers), checkpoints in ``out``.

    ``peft_config``: a PEFT config (a LoRA adapter is trained), or ``None`` (every weight is).
    With ``resume`` the run continues from the last checkpoint in ``out``.
    """
    import torch
    from datasets import Dataset
    from transformers import PrinterCallback
    from transformers.trainer_utils import get_last_checkpoint
    from trl import SFTConfig, SFTTrainer

    checkpoints = out / CHECKPOINT_DIR
    last = get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None
    if resume and last is None:
        raise ConfigurationError(f"nothing to resume: no checkpoint in {checkpoints}")
    gpu = torch.cuda.is_available()
    decisive = decisive_verbs(rows) if config.decisive_weight > 1 else set()
    weighted = weighted_rows(rows, config, decisive)
    dataset = Dataset.from_list(
        [{"prompt": row["prompt"], "completion": row["completion"]} for row in weighted]
    )
    args = SFTConfig(
        output_dir=str(checkpoints),
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        # batches of examples of about the same length: less padding to compute through
        train_sampling_strategy="group_by_length" if config.batch_size > 1 else "random",
        gradient_accumulation_steps=config.grad_accum,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_steps,
        max_length=config.max_length,
        completion_only_loss=True,
        packing=False,
        logging_steps=1,
        save_steps=config.save_steps,
        save_total_limit=2,
        seed=config.seed,
        report_to=[],
        disable_tqdm=True,
        include_num_input_tokens_seen="all",
        activation_checkpointing=config.gradient_checkpointing,
        use_cpu=not gpu,
        bf16=gpu,
        dataloader_num_workers=0,
    )
    seconds_before, tokens_before = _checkpoint_progress(Path(last)) if resume and last else (0.0, 0)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[
            progress_callback(
                config.max_steps,
                enabled=progress,
                max_minutes=config.max_minutes,
                seconds_before=seconds_before,
            )
        ],
    )
    trainer.remove_callback(PrinterCallback)  # the progress bar reports instead
    started = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=last if resume else None)
    seconds = time.perf_counter() - started
    state = trainer.state
    tokens = int(state.num_input_tokens_seen or 0)
    return SftRun(
        model=trainer.model,
        steps=int(state.global_step),
        tokens=tokens,
        seconds=seconds_before + seconds,
        tokens_per_s=round((tokens - tokens_before) / seconds, 1) if seconds > 0 else None,
        losses=[entry["loss"] for entry in state.log_history if "loss" in entry],
        train_loss=float(result.training_loss) if math.isfinite(result.training_loss) else None,
        episode_ends=sum(map(ends_episode, rows)),
        decisive_verbs=sorted(decisive),
        epochs=round(state.global_step * config.batch_size * config.grad_accum / len(weighted), 2),
        resumed_from=Path(last).name if resume and last else None,
        device="cuda" if gpu else "cpu",
    )


def train_experience_model(
    data: str | Path,
    base: str,
    out: str | Path,
    config: TrainConfig | None = None,
    *,
    resume: bool = False,
    progress: bool = True,
) -> TrainedModel:
    """Fine-tune ``base`` with LoRA on the train rows of the dataset ``data``; write to ``out``.

    With ``resume`` the run continues from the last checkpoint in ``out`` (same data and
    config). Returns the manifest, with the stats: steps, examples, tokens, seconds, tokens
    per second and the final training loss.
    """
    import torch
    from peft import LoraConfig

    config = config or TrainConfig()
    train = check_rows(data)
    out = Path(out)
    gpu = torch.cuda.is_available()
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    model, tokenizer = load_base(base, dtype=torch.bfloat16 if gpu else torch.float32)
    lora = LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    run = fit_sft(
        model, tokenizer, train.rows, out, config, peft_config=lora, resume=resume, progress=progress
    )
    out.mkdir(parents=True, exist_ok=True)
    adapted: Any = run.model  # the PEFT model
    adapted.save_pretrained(out / ADAPTER_DIR)
    tokenizer.save_pretrained(out / ADAPTER_DIR)
    directory, gguf_file = resolve_base(base)
    base_gguf = directory / gguf_file if gguf_file else None
    arch = gguf_architecture(base_gguf) if base_gguf else str(model.config.model_type)
    adapter_gguf = None
    if arch in GGUF_ADAPTER_ARCHS:
        adapter_gguf = out / ADAPTER_GGUF
        write_lora_gguf(adapted, adapter_gguf, arch=arch)
    return train.save_manifest(
        out,
        run,
        base=base,
        base_gguf=base_gguf,
        adapter_gguf=adapter_gguf,
        config={**asdict(config), "target_modules": list(config.target_modules), "data": str(data)},
        adapter_sha256=file_sha256(adapter_gguf) if adapter_gguf else None,
    )


def _checkpoint_progress(checkpoint: Path) -> tuple[float, int]:
    """The training seconds and input tokens up to ``checkpoint`` (0 seconds where it records none)."""
    timing = checkpoint / TRAIN_TIME_FILE
    seconds = float(json.loads(timing.read_text())["seconds"]) if timing.is_file() else 0.0
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    return seconds, int(state.get("num_input_tokens_seen") or 0)
