"""One command that rebuilds a domain pack's trained experience model: ``dreamgym experience build``.

A pack ships two kinds (:data:`~dreamgym_env.experience.trained.TrainedKind`): a LoRA
``adapter`` of the embedded 0.5B base, and a ``distilled`` model trained from scratch
(:mod:`.distill`), a hundred times smaller and faster. :meth:`BuildConfig.for_kind` gives
each kind's recipe; the stages are the same.

The stages, each skipped when its output is already there and still current (so a stopped
build resumes where it stopped; training itself resumes from its last checkpoint):

1. **data**: SFT examples from the pack's reference env (:func:`~.dataset.build_dataset`:
   expert, noisy and random episodes of the train tasks; test examples from the test tasks);
   rebuilt when the pack's prompt fingerprint changed;
2. **train**: a LoRA adapter of the embedded base with TRL's SFTTrainer (:func:`~.train.train_experience_model`),
   or the distilled model with the same trainer (:func:`~.distill.distill_experience_model`);
3. **export**: the adapter as a float16 GGUF LoRA adapter (or the distilled model's GGUF) and a
   portable manifest (the base by preset name, the data's SHA-256 and mix, the train tasks, the
   file's SHA-256) in the install folder, by default the pack's own ``experience_model/`` (its
   ``distilled/`` folder for a distilled model);
4. **eval**: the base and the trained model on the same held-out transitions
   (:func:`~.evaluate.compare_models`), beside the always-0 baseline;
5. **rollouts**: rollout consistency of the trained model (:func:`~dreamgym_env.bench.consistency.rollout_consistency`),
   expert, noisy and random episodes on test tasks, replayed in the reference env (random
   episodes find the rewards the model pays where the reference env does not);
6. **report**: the numbers in the manifest (``evaluation``) and ``report.md`` in the install folder.

Every stage logs its start, progress with an ETA and its end through :mod:`logging` (logger
``dreamgym_env.training.build``), so a build run under ``nohup`` or in CI says where it is.

With ``BuildConfig(trajectories=...)`` any registered domain, with or without a reference env,
is trained from recorded episodes instead (:mod:`.recorded`): the data and the held-out
transitions are the file's (or a held-out file's), made with ``supply="none"``, the rollouts
stage is skipped (there is no reference env to replay them in), the model goes to
``<work>/install`` unless ``install`` is given (a pack's shipped models stay as they are), and
its manifest records the files and ``supply: "none"``.

Example::

    build_pack_model("alfworld", "runs/experience/alfworld", BuildConfig(steps=80, eval_n=40))
    build_pack_model("webshop", "runs/experience/recorded", BuildConfig(trajectories="episodes.jsonl"))
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from dreamgym_env.domain import Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.experience.prompt import prompt_fingerprint
from dreamgym_env.experience.trained import (
    ADAPTER_GGUF,
    DISTILLED_DIR,
    MANIFEST_NAME,
    MODEL_GGUF,
    PackModels,
    TrainedKind,
    TrainedModel,
    file_sha256,
    rebuild_command,
)
from dreamgym_env.training.dataset import (
    examples_sha256,
    held_out_count,
    held_out_examples,
    read_examples,
    state_mode_of,
)
from dreamgym_env.training.distill import DEFAULT_VOCAB_SIZE, ModelSize
from dreamgym_env.training.recorded import RECORDED_SUPPLY, RecordedSplit

if TYPE_CHECKING:
    from dreamgym_env.curriculum.chat import EndpointChat

logger = logging.getLogger(__name__)

STAGES: Final = ("data", "train", "export", "eval", "rollouts", "report")
BASE_PRESET: Final = "qwen-0.5b"
"""The embedded base the packs' adapters are trained for."""
REPORT_NAME: Final = "report.md"
RECORDED_INSTALL: Final = "install"
"""The folder of the work folder a model trained from recorded trajectories goes to by default."""


@dataclass(frozen=True)
class BuildConfig:
    """The recipe of a pack's model: data, training, evaluation sizes.

    ``kind``: a LoRA ``adapter`` or a ``distilled`` model (of ``size``, a name of
    :data:`~.distill.MODEL_SIZES`, trained for at most ``max_minutes``); take a kind's defaults
    from :meth:`for_kind`. ``steps`` optimiser steps (an adapter's of one example, rank
    ``lora_r``, every linear layer; a distilled model's of 16);
    ``end_weight``: how many times each episode-end example is seen per pass (see
    :class:`~.train.TrainConfig`); ``decisive_weight``: how many times each example of a verb
    that ends some episodes and not others is seen (ALFWorld's ``put``; see
    :class:`~.train.TrainConfig`); ``end_share``: the share of train examples that end an
    episode (see :func:`~.dataset.build_dataset`; ``None``: their natural rate);
    ``near_miss_share``: the share of train examples that are near misses, a verb that ends
    episodes not ending this one (ALFWorld's ``put`` of the wrong object; see
    :func:`~.dataset.policy_transitions`); ``eval_n``
    held-out transitions (a third each expert, noisy, random); ``rollouts`` synthetic episodes each of the expert, noisy and random policy (0 skips the
    stage); ``threads``: torch's and llama.cpp's CPU threads (default: all cores);
    ``remeasure_base``: measure the base again even where an earlier build measured it on the
    same transitions (same base, prompt, ``eval_n`` and seed); ``remeasure``: measure the trained
    model again even where its file was measured (after a change to what the pack's requests
    hold that the prompt fingerprint does not cover, such as its given fields); ``measure_base``:
    measure the base at all (off, the report leaves its column empty). ``trajectories``: a JSONL
    file of recorded episodes to train from instead of the reference env (:mod:`.recorded`;
    ``n``, ``test_n``, ``end_share`` and ``near_miss_share`` do not apply: every valid step is
    an example), ``held_out`` a second one of the test tasks' episodes (default: a fifth of the
    file's tasks, drawn with ``seed``), ``teacher_url`` / ``teacher_model`` an OpenAI-compatible
    endpoint that writes their reasoning (default: the template reasoning).
    """

    n: int = 600
    test_n: int | None = None
    steps: int = 100
    end_weight: int = 4
    decisive_weight: int = 1
    end_share: float | None = None
    near_miss_share: float = 0.0
    lora_r: int = 8
    lora_alpha: int = 16
    learning_rate: float = 3e-4
    save_steps: int = 10
    eval_n: int = 100
    rollouts: int = 50
    seed: int = 0
    threads: int | None = None
    remeasure_base: bool = False
    remeasure: bool = False
    base: str = BASE_PRESET
    """The base model (a preset; a Hugging Face directory trains and exports, but the local backend cannot evaluate it)."""
    kind: TrainedKind = "adapter"
    size: str | ModelSize = "xs"
    vocab_size: int = DEFAULT_VOCAB_SIZE
    max_minutes: float | None = None
    measure_base: bool = True
    trajectories: str | None = None
    held_out: str | None = None
    teacher_url: str | None = None
    teacher_model: str | None = None

    @classmethod
    def for_kind(cls, kind: TrainedKind, **overrides: Any) -> BuildConfig:
        """``kind``'s recipe, with ``overrides`` (``None`` values keep the recipe's).

        A distilled model learns the rules from data instead of reading them, so it needs ten
        times the examples; 2,400 steps of 16 (about four epochs, 26 minutes on 2 cores) are
        what the shipped ALFWorld model was trained with (docs/results.md).
        """
        recipe: dict[str, Any] = {"kind": kind}
        if kind == "distilled":
            recipe |= {"n": 6000, "test_n": 300, "steps": 2400, "end_weight": 2, "end_share": 0.25,
                       "learning_rate": 3e-3, "save_steps": 50, "max_minutes": 26.0}  # fmt: skip
        elif kind != "adapter":
            raise ConfigurationError(f"kind must be 'adapter' or 'distilled', got {kind!r}")
        recipe |= {key: value for key, value in overrides.items() if value is not None}
        return cls(**recipe)

    def __post_init__(self) -> None:
        for name in ("n", "steps", "end_weight", "decisive_weight", "lora_r", "lora_alpha", "save_steps",
                     "eval_n"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.rollouts < 0:
            raise ConfigurationError(f"rollouts must be >= 0, got {self.rollouts}")
        if self.end_share is not None and not 0.0 <= self.end_share <= 1.0:
            raise ConfigurationError(f"end_share must be in [0, 1], got {self.end_share}")
        if not 0.0 <= self.near_miss_share <= 1.0 - (self.end_share or 0.0):
            raise ConfigurationError(
                f"near_miss_share must be in [0, 1 - end_share], got {self.near_miss_share}"
            )
        if self.trajectories is None and (self.held_out or self.teacher_url) is not None:
            raise ConfigurationError(
                "held_out and teacher_url go with trajectories (a build from recorded episodes); "
                "`dreamgym experience dataset --teacher-url` writes a reference env's data with a teacher"
            )
        if self.teacher_model is not None and self.teacher_url is None:
            raise ConfigurationError("teacher_model names the model of teacher_url: pass that too")

    def command(self, domain: str) -> str:
        """The ``dreamgym experience build`` command of this recipe: the flags that differ from its kind's."""
        default = BuildConfig.for_kind(self.kind)
        flags = {"n": "--n", "steps": "--steps", "end_weight": "--end-weight",
                 "decisive_weight": "--decisive-weight", "end_share": "--end-share",
                 "near_miss_share": "--near-miss-share",
                 "max_minutes": "--max-minutes", "lora_r": "--lora-r", "eval_n": "--eval-n",
                 "rollouts": "--rollouts", "seed": "--seed"}  # fmt: skip
        words = [rebuild_command(domain, self.kind)]
        recorded = {"--trajectories": self.trajectories, "--held-out": self.held_out,
                    "--teacher-url": self.teacher_url, "--teacher-model": self.teacher_model}  # fmt: skip
        words += [f"{flag} {shlex.quote(value)}" for flag, value in recorded.items() if value is not None]
        for name, flag in flags.items():
            value = getattr(self, name)
            if value != getattr(default, name):
                words.append(f"{flag} {'natural' if value is None else f'{value:g}'}")
        return " ".join(words)

    def data_recipe(self) -> dict[str, Any]:
        """The fields that decide a reference env's data (other values write it again)."""
        return {"n": self.n, "test_n": self.test_n, "seed": self.seed, "end_share": self.end_share,
                "near_miss_share": self.near_miss_share}  # fmt: skip

    def train_recipe(self) -> dict[str, Any]:
        """The fields that decide the trained model, named as in its manifest's config (other ones train it again)."""
        if self.kind == "distilled":
            return {"max_steps": self.steps, "end_weight": self.end_weight,
                    "decisive_weight": self.decisive_weight, "learning_rate": self.learning_rate,
                    "seed": self.seed, "size": self.size if isinstance(self.size, str) else "custom",
                    "max_minutes": self.max_minutes}  # fmt: skip
        return {"max_steps": self.steps, "end_weight": self.end_weight,
                "decisive_weight": self.decisive_weight, "lora_r": self.lora_r,
                "lora_alpha": self.lora_alpha, "learning_rate": self.learning_rate, "seed": self.seed,
                "max_minutes": self.max_minutes}  # fmt: skip

    def train(self, data: Path, out: Path, *, resume: bool, progress: bool) -> TrainedModel:
        """Train this recipe's model on ``data`` into ``out`` (from its last checkpoint with ``resume``)."""
        if self.kind == "distilled":
            from dreamgym_env.training.distill import DEFAULT_DISTILL_CONFIG, distill_experience_model

            recipe = replace(
                DEFAULT_DISTILL_CONFIG, max_steps=self.steps, end_weight=self.end_weight,
                decisive_weight=self.decisive_weight,
                learning_rate=self.learning_rate, save_steps=self.save_steps, seed=self.seed,
                threads=self.threads, max_minutes=self.max_minutes,
            )  # fmt: skip
            return distill_experience_model(
                data, out, size=self.size, vocab_size=self.vocab_size, config=recipe, resume=resume,
                progress=progress,
            )  # fmt: skip
        from dreamgym_env.training.train import TrainConfig, train_experience_model

        config = TrainConfig(**self.train_recipe(), save_steps=self.save_steps, threads=self.threads)
        return train_experience_model(data, self.base, out, config, resume=resume, progress=progress)

    def base_measurement(self, fingerprint: str) -> dict[str, Any]:
        """What decides the base's held-out numbers: the same key, the same transitions and answers."""
        return {"base": self.base, "prompt_fingerprint": fingerprint, "n": self.eval_n, "seed": self.seed}

    def recorded_recipe(self, recorded: RecordedSplit) -> dict[str, Any]:
        """What decides the data of a build from ``recorded`` episodes: the files, the split, the reasoning."""
        return {**recorded.recipe(), "teacher_url": self.teacher_url, "teacher_model": self.teacher_model}

    def teacher(self) -> EndpointChat | None:
        """The chat model at ``teacher_url`` that writes the reasoning; ``None`` without one."""
        if self.teacher_url is None:
            return None
        from dreamgym_env.curriculum.chat import EndpointChat
        from dreamgym_env.experience.config import UNSET, EndpointConfig

        return EndpointChat(
            EndpointConfig.resolve(base_url=self.teacher_url, model=self.teacher_model or UNSET)
        )


class Eta:
    """Progress of a stage in logs: done of total, elapsed, the estimated time left."""

    def __init__(self, stage: str, total: int, unit: str) -> None:
        self.stage, self.total, self.unit = stage, total, unit
        self.started = time.perf_counter()
        self.done = 0

    def advance(self, count: int) -> None:
        """Log ``count`` more done."""
        self(self.done + count)

    def __call__(self, done: int, detail: str = "") -> None:
        self.done = done
        elapsed = time.perf_counter() - self.started
        left = elapsed / done * (self.total - done) if done else float("nan")
        logger.info(
            "%s: %d of %d %s, %.0f s elapsed, ETA %.0f s%s",
            self.stage, done, self.total, self.unit, elapsed, left, f" ({detail})" if detail else "",
        )  # fmt: skip


def _data_recipe_path(data: Path) -> Path:
    return data.with_suffix(".recipe.json")


def _recorded_data_current(path: Path, recipe: dict[str, Any]) -> bool:
    """Whether ``path`` holds the examples of ``recipe``: its requests' SHA-256 covers the prompt and the rules."""
    kept = _data_recipe_path(path)
    return path.is_file() and kept.is_file() and json.loads(kept.read_text(encoding="utf-8")) == recipe


def _data_current(path: Path, pack: Domain, config: BuildConfig) -> bool:
    if not path.is_file():
        return False
    recipe = _data_recipe_path(path)
    if not recipe.is_file() or json.loads(recipe.read_text(encoding="utf-8")) != config.data_recipe():
        return False
    rows = read_examples(path)
    fingerprint = prompt_fingerprint(
        pack.prompt, pack.state_json_schema if state_mode_of(pack) == "structured" else None
    )
    train = [row for row in rows if row.get("split") == "train"]
    if len(train) != config.n or {row.get("prompt_fingerprint") for row in rows} != {fingerprint}:
        return False
    # The fingerprint misses what the requests hold beyond the prompt (world lines, given fields):
    # the test split, made again in a second or so, must be the file's.
    record = held_out_record(rows, config.data_recipe())
    return examples_sha256(held_out_examples(pack, record["n"], seed=record["seed"])) == record["sha256"]


def _trained_current(model_dir: Path, data: Path, config: BuildConfig) -> bool:
    trained = TrainedModel.find(model_dir)
    if trained is None:
        return False
    recipe = {key: trained.config.get(key) for key in config.train_recipe()}
    same_data = trained.data.get("sha256") in (None, file_sha256(data))
    same_base = trained.kind == config.kind and (config.kind == "distilled" or trained.base == config.base)
    return recipe == config.train_recipe() and same_data and same_base


def held_out_record(rows: Sequence[dict[str, Any]], recipe: dict[str, Any]) -> dict[str, Any]:
    """What makes the test split of ``rows`` (written by ``recipe``) again (:func:`~.dataset.held_out_examples`), and its SHA-256.

    A shipped model's manifest keeps it: the test split made again by today's code must hash the
    same, or what the model was trained on is no longer what the pack asks (``tests/envs/test_pack_models.py``).
    """
    test_rows = [row for row in rows if row["split"] == "test"]
    return {
        "n": held_out_count(recipe["n"], recipe["test_n"]),
        "seed": recipe["seed"],
        "sha256": examples_sha256(test_rows),
    }


def _policy_mix(data: Path) -> dict[str, Any]:
    """The manifest's ``data``: the file, its examples per split and policy, and what makes it again.

    For a reference env's data the test split's record (:func:`held_out_record`); for recorded
    episodes' the files they came from and the steps that gave no example.
    """
    rows = read_examples(data)
    recipe = json.loads(_data_recipe_path(data).read_text(encoding="utf-8"))
    mix: dict[str, dict[str, int]] = {}
    for row in rows:
        split = mix.setdefault(str(row["split"]), {})
        split[str(row["policy"])] = split.get(str(row["policy"]), 0) + 1
    record = {
        "file": data.name,
        "sha256": file_sha256(data),
        "examples": mix,
        "train_tasks": len({row["task_id"] for row in rows if row["split"] == "train"}),
        "test_tasks": len({row["task_id"] for row in rows if row["split"] == "test"}),
        "reasoning_source": sorted({str(row.get("reasoning_source")) for row in rows}),
    }
    if "trajectories" not in recipe:
        return {**record, "test_split": held_out_record(rows, recipe)}
    files = [recipe["trajectories"], *([recipe["held_out"]] if recipe["held_out"] else [])]
    return {
        **record,
        "trajectories": recipe["trajectories"],
        "held_out": recipe["held_out"],
        "split_seed": None if recipe["held_out"] else recipe["seed"],
        "left_out": sum(f["transitions"] for f in files) - len(rows),
    }


def export_pack_model(trained: TrainedModel, data: Path, install: Path) -> TrainedModel:
    """Write ``trained``'s adapter (float16 GGUF) and a portable manifest into ``install``."""
    import torch
    from peft import PeftModel

    from dreamgym_env.training.export import write_lora_gguf
    from dreamgym_env.training.train import load_base

    base, _ = load_base(trained.base, dtype=torch.float32)
    adapted = PeftModel.from_pretrained(base, str(trained.adapter_dir))
    install.mkdir(parents=True, exist_ok=True)
    adapter = install / ADAPTER_GGUF
    write_lora_gguf(adapted, adapter)
    shipped = replace(
        trained,
        directory=install,
        base_gguf=None,  # the base is the preset, found on the user's machine
        adapter_gguf=adapter,
        adapter_sha256=file_sha256(adapter),
        data=_policy_mix(data),
        config={key: value for key, value in trained.config.items() if key != "data"},
        evaluation={},
    )
    shipped.save()
    return shipped


def export_distilled_model(trained: TrainedModel, data: Path, install: Path) -> TrainedModel:
    """Copy ``trained``'s GGUF (a distilled model) and a portable manifest into ``install``."""
    import shutil

    if trained.model_gguf is None:
        raise DataError(f"{trained.directory}: not a distilled model (it has no {MODEL_GGUF})")
    install.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(trained.model_gguf, install / MODEL_GGUF)
    shipped = replace(
        trained,
        directory=install,
        model_gguf=install / MODEL_GGUF,
        model_sha256=file_sha256(install / MODEL_GGUF),
        data=_policy_mix(data),
        config={key: value for key, value in trained.config.items() if key != "data"},
        evaluation={},
    )
    shipped.save()
    return shipped


def _artefact(trained: TrainedModel) -> tuple[str, str | None]:
    """The manifest key and SHA-256 of the file a model's measurements were made on."""
    if trained.kind == "distilled":
        return "model_sha256", trained.model_sha256
    return "adapter_sha256", trained.adapter_sha256


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    keys = ("n", "valid", "kind_agreement", "reward_agreement", "done_agreement", "similarity",
            "exact_match", "always_zero_reward", "always_zero_done", "model_share", "true_model_share",
            "invalid_output", "prompt_tokens", "evaluated_prompt_tokens", "completion_tokens", "latency_s")  # fmt: skip
    return {key: report.get(key) for key in keys}


def _decisive_text(shipped: TrainedModel) -> str:
    verbs = shipped.stats.get("decisive_verbs")
    weight = shipped.config.get("decisive_weight", 1)
    return f"; those of {', '.join(verbs)} weighted {weight}x" if verbs and weight > 1 else ""


def _recorded_text(shipped: TrainedModel) -> list[str]:
    """The report's paragraph on the recorded episodes a model was trained from (none for a reference env's data)."""
    recorded = shipped.data.get("trajectories")
    if recorded is None:
        return []
    held_out = shipped.data.get("held_out")

    def name(record: dict[str, Any]) -> str:
        return (
            f"`{record['file']}` (SHA-256 `{record['sha256']}`, {record['episodes']} episodes, "
            f"{record['transitions']} transitions)"
        )

    test = (
        f"test tasks from {name(held_out)}"
        if held_out
        else f"a share of its tasks held out for the test split (drawn with seed {shipped.data.get('split_seed')})"
    )
    left_out = shipped.data.get("left_out", 0)
    return [
        f"Trained from recorded trajectories, without a reference env: {name(recorded)}; {test}. "
        f"Supply `{shipped.supply}`: each request carries the fields the action cannot change and "
        f"nothing of the pack's world (no given fields, no world lines); the model writes the rest"
        f"{f'; {left_out} recorded transitions gave no example' if left_out else ''}. "
        "No rollout consistency: a model trained from recorded episodes is not replayed in a reference env.",
        "",
    ]


def write_report(shipped: TrainedModel, evaluation: dict[str, Any], path: Path) -> None:
    """The pack model's report: what it was trained on, its held-out table and its rollouts."""
    trained, base = evaluation.get("trained", {}), evaluation.get("base", {})
    artefact = shipped.model_gguf or shipped.adapter_gguf
    size_mb = artefact.stat().st_size / 1e6 if artefact else 0.0
    config = shipped.config
    recorded = "trajectories" in shipped.data  # a model of recorded episodes, not the pack's
    title = (
        "experience model trained from recorded trajectories"
        if recorded
        else "pack's trained experience model"
    )
    text = "the examples' text" if recorded else "the pack's text"
    if shipped.kind == "distilled":
        what = (
            f"Distilled model: a {config.get('parameters', 0) / 1e6:.2f}M-parameter Qwen2 (size "
            f"`{config.get('size')}`, {config.get('shape', {}).get('layers')} layers, hidden "
            f"{config.get('shape', {}).get('hidden')}, a {config.get('vocab_size')}-token tokenizer "
            f"trained on {text}; one GGUF, {size_mb:.1f} MB) "
            f"trained from scratch, read without the system prompt "
            f"({'`local:<this folder>`' if recorded else '`local:distilled`'}), "
        )
    else:
        what = (
            f"LoRA adapter (rank {config.get('lora_r')}, every linear layer, float16 GGUF, "
            f"{size_mb:.1f} MB) of the embedded `{shipped.base}`, "
        )
    lines = [
        f"# The {shipped.domain} {title} ({shipped.kind})",
        "",
        what + f"{shipped.stats.get('steps')} steps on {shipped.stats.get('examples')} train examples "
        f"({shipped.stats.get('episode_ends')} of them end an episode, weighted {shipped.config.get('end_weight', 1)}x"
        f"{_decisive_text(shipped)}) "
        f"({shipped.stats.get('seconds', 0) / 60:.0f} min, {shipped.stats.get('tokens_per_s')} tokens/s, "
        f"{shipped.stats.get('device')}). Prompt fingerprint `{shipped.prompt_fingerprint}` "
        f"({shipped.state_mode} states). Rebuild: `{shipped.rebuild_command}`.",
        "",
        f"Data: {json.dumps(shipped.data.get('examples'))}, {shipped.data.get('train_tasks')} train tasks, "
        f"{shipped.data.get('test_tasks')} test tasks (no task in both), reasoning from "
        f"{', '.join(shipped.data.get('reasoning_source', []))}.",
        "",
        *_recorded_text(shipped),
    ]
    if trained:
        n = trained.get("n")
        measured = (
            f"the base measured {evaluation.get('base_measured', 'in the same build')}"
            if base
            else "the base not measured"
        )
        lines += [
            f"## {n} held-out transitions (test tasks; seconds {evaluation.get('seconds')}; {measured}"
            f"{'; the evaluation was stopped there, its last complete batch' if evaluation.get('stopped_after') else ''})",
            "",
            "| measure | base | trained | always 0 |",
            "|---|---|---|---|",
        ]
        for key, name in (("valid", "valid state"), ("kind_agreement", "state kind"),
                          ("reward_agreement", "reward agreement"), ("done_agreement", "episode-end agreement"),
                          ("similarity", "similarity"), ("exact_match", "exact next state"),
                          ("model_share", "the model's share of what changed (its answers)"),
                          ("true_model_share", "the model's share of what changed (true next states)"),
                          ("invalid_output", "invalid output"), ("prompt_tokens", "prompt tokens sent"),
                          ("evaluated_prompt_tokens", "prompt tokens evaluated (not from the KV cache)"),
                          ("completion_tokens", "output tokens"),
                          ("latency_s", "latency a request, s")):  # fmt: skip
            zero = {"reward_agreement": "always_zero_reward", "done_agreement": "always_zero_done"}.get(key)
            lines.append(
                f"| {name} | {_fmt(base.get(key))} | {_fmt(trained.get(key))} | {_fmt(trained.get(zero)) if zero else ''} |"
            )
        lines.append("")
    for row in evaluation.get("rollouts", []):
        if row is evaluation["rollouts"][0]:
            lines += [
                "## Rollout consistency (trained model; synthetic episodes replayed in the reference env)",
                "",
                "| policy | episodes | steps agreed | never diverged | outcome agreement | synthetic / reference success "
                "| synthetic wins the reference does not confirm |",
                "|---|---|---|---|---|---|---|",
            ]
        lines.append(
            f"| {row['policy']} | {row['episodes']} | {row['step_agreement']:.2f} | {row['full_agreement']:.2f} | "
            f"{row['outcome_agreement']:.2f} | {row['synthetic_success']:.2f} / {row['reference_success']:.2f} | "
            f"{_fmt(row.get('unconfirmed_wins'))} |"
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _stopped_evaluation(eval_file: Path, shipped: TrainedModel, config: BuildConfig) -> dict[str, Any] | None:
    """The numbers of an evaluation of ``shipped`` that was stopped, from its last complete batch.

    ``eval.json`` is rewritten after every batch (base and trained model on the same
    transitions), so a stopped evaluation still compares like with like; it counts when it is
    newer than the adapter it measured.
    """
    artefact = shipped.model_gguf or shipped.adapter_gguf
    if artefact is None or not artefact.is_file() or not eval_file.is_file():
        return None
    if eval_file.stat().st_mtime < artefact.stat().st_mtime:
        return None
    results = json.loads(eval_file.read_text(encoding="utf-8"))
    if len(results) != 2:  # a trained-only run leaves the base to the manifest; not adopted here
        return None
    base, trained = results
    n = trained["report"]["n"]
    return {
        "base": _summary(base["report"]),
        "trained": _summary(trained["report"]),
        "seconds": {"base": base["seconds"], "trained": trained["seconds"]},
        "seed": trained["seed"],
        "n": n,
        **dict([_artefact(shipped)]),
        "base_measurement": {**_base_key(config, shipped), "n": n},
        "base_measured": "in this build",
        "stopped_after": n,
    }


def _base_key(config: BuildConfig, shipped: TrainedModel) -> dict[str, Any]:
    """What decides the base's held-out numbers of ``shipped`` (:meth:`BuildConfig.base_measurement`).

    For a model trained from recorded episodes, also the file its held-out episodes came from
    and the supply its requests were made with: other transitions than a reference env's.
    """
    key = config.base_measurement(shipped.prompt_fingerprint or "")
    source = shipped.data.get("held_out") or shipped.data.get("trajectories")
    return key if source is None else {**key, "recorded_sha256": source["sha256"], "supply": shipped.supply}


def _no_rollouts(pack: Domain, config: BuildConfig) -> str | None:
    """Why the rollouts stage cannot run for ``config`` (``None``: it can)."""
    if config.trajectories is not None:
        return "the model was trained from recorded trajectories; its episodes are not replayed in a reference env"
    if not plays_reference_env(pack):
        return f"domain {pack.name!r} has no reference env to replay the model's episodes in"
    return None


def _base_measurement(trained: TrainedModel) -> dict[str, Any] | None:
    """The key of the base's numbers a manifest holds (``None`` without them); older manifests imply theirs."""
    evaluation = trained.evaluation
    if "base" not in evaluation:
        return None
    implied = {"base": trained.base, "prompt_fingerprint": trained.prompt_fingerprint,
               "n": evaluation["base"].get("n"), "seed": evaluation.get("seed")}  # fmt: skip
    found: dict[str, Any] = evaluation.get("base_measurement", implied)
    return found


def _sibling_base(target: Path, kind: TrainedKind, key: dict[str, Any]) -> dict[str, Any]:
    """The base's numbers under ``key`` from the pack's model of the other kind, if it has them (else ``{}``).

    Both kinds are measured against the same prompted base on the same held-out transitions,
    so a build of one kind need not measure the base again after a build of the other. The
    other kind lives where :class:`~dreamgym_env.experience.trained.PackModels` finds it.
    """
    if kind == "adapter":
        sibling = PackModels.find(target).distilled
    else:
        sibling = PackModels.find(target.parent).adapter if target.name == DISTILLED_DIR else None
    if sibling is None or _base_measurement(sibling) != key:
        return {}
    logger.info("eval: the base's numbers on these transitions come from the pack's %s", sibling.kind)
    return {"base": sibling.evaluation["base"], "base_measurement": key,
            "seconds": {"base": sibling.evaluation.get("seconds", {}).get("base")}}  # fmt: skip


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def plays_reference_env(domain: Domain) -> bool:
    """Whether ``domain`` has a reference env (overrides :meth:`~dreamgym_env.domain.Domain.make_reference_env`)."""
    return type(domain).make_reference_env is not Domain.make_reference_env


def _data_stage(
    pack: Domain,
    data: Path,
    config: BuildConfig,
    recorded: RecordedSplit | None,
    begin: Callable[[str, str], float],
) -> None:
    """Write the SFT examples to ``data``, from ``recorded`` episodes or the reference env, unless current."""
    from dreamgym_env.training.dataset import build_dataset
    from dreamgym_env.training.recorded import build_recorded_dataset

    recipe = config.recorded_recipe(recorded) if recorded is not None else config.data_recipe()
    current = (
        _recorded_data_current(data, recipe) if recorded is not None else _data_current(data, pack, config)
    )
    if current:
        logger.info("stage 1/%d data: %s is current, kept", len(STAGES), data)
        return
    if recorded is None:
        started = begin("data", f"{config.n} train examples from {pack.name}'s reference env")
        summary = build_dataset(
            pack, config.n, data, test_n=config.test_n, seed=config.seed, end_share=config.end_share,
            near_miss_share=config.near_miss_share,
        )  # fmt: skip
    else:
        started = begin(
            "data",
            f"examples from the {sum(f.transitions for f in recorded.files)} recorded transitions of "
            f"{' and '.join(f.path.name for f in recorded.files)} (supply {RECORDED_SUPPLY}, no reference env)",
        )
        teacher = config.teacher()
        try:
            summary = build_recorded_dataset(recorded, data, teacher=teacher)
        finally:
            if teacher is not None:
                teacher.close()
    _data_recipe_path(data).write_text(json.dumps(recipe) + "\n", encoding="utf-8")
    logger.info("data: %s (%.0f s)", summary.format().splitlines()[0], time.perf_counter() - started)


def build_pack_model(
    domain: Domain | str,
    work: str | Path,
    config: BuildConfig | None = None,
    *,
    install: str | Path | None = None,
    stages: tuple[str, ...] = STAGES,
    progress: bool = True,
    on_stage: Callable[[str], object] | None = None,
) -> TrainedModel:
    """Rebuild ``domain``'s trained experience model (see the module docstring); returns the installed manifest.

    ``work`` holds the data, the training run and the raw evaluations; ``install`` (default:
    the pack's :attr:`~dreamgym_env.domain.Domain.experience_model_dir`, its ``distilled/``
    folder for a distilled model; ``<work>/install`` for a model trained from recorded
    trajectories) receives the model file, the manifest and the report. ``stages`` restricts the
    run to some stages (each needs the outputs of the ones before it).
    """
    from dreamgym_env.training.evaluate import compare_models, write_result

    pack = get_domain(domain)
    config = config or BuildConfig()
    unknown = set(stages) - set(STAGES)
    if unknown:
        raise ConfigurationError(f"unknown build stages {sorted(unknown)}: choose from {', '.join(STAGES)}")
    if config.trajectories is None and {"data", "eval"} & set(stages) and not plays_reference_env(pack):
        raise ConfigurationError(
            f"domain {pack.name!r} has no reference env to play: train it from recorded episodes "
            "(--trajectories FILE.jsonl)"
        )
    if install is not None:
        target = Path(install)
    elif config.trajectories is not None:
        target = Path(work) / RECORDED_INSTALL
    elif pack.experience_model_dir is not None:
        target = pack.experience_model_dir
        if config.kind == "distilled":
            target = target / DISTILLED_DIR
    else:
        raise ConfigurationError(f"the {pack.name!r} pack has no experience_model_dir: pass install=")
    recorded = (
        RecordedSplit.read(pack, config.trajectories, config.held_out, seed=config.seed)
        if config.trajectories is not None and {"data", "eval"} & set(stages)
        else None
    )
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    data, model_dir, eval_file = work / "sft.jsonl", work / "model", work / "eval.json"
    (work / "build-config.json").write_text(json.dumps(asdict(config), indent=2) + "\n", encoding="utf-8")

    def begin(stage: str, what: str) -> float:
        logger.info("stage %d/%d %s: %s", STAGES.index(stage) + 1, len(STAGES), stage, what)
        if on_stage is not None:
            on_stage(stage)
        return time.perf_counter()

    if "data" in stages:
        _data_stage(pack, data, config, recorded, begin)
    if "train" in stages:
        if _trained_current(model_dir, data, config):
            logger.info("stage 2/%d train: %s is current, kept", len(STAGES), model_dir)
        else:
            resume = any((model_dir / "checkpoints").glob("checkpoint-*"))  # none where no folder
            started = begin(
                "train", f"{config.steps} steps of the {config.kind}{' (resumed)' if resume else ''}"
            )
            trained = config.train(data, model_dir, resume=resume, progress=progress)
            logger.info(
                "train: %s steps in %.0f s", trained.stats.get("steps"), time.perf_counter() - started
            )
    if "export" in stages:
        trained = TrainedModel.load(model_dir)
        earlier = TrainedModel.find(target)
        begin("export", f"the {config.kind}'s GGUF and manifest into {target}")
        if config.kind == "distilled":
            exported = export_distilled_model(trained, data, target)
        else:
            exported = export_pack_model(trained, data, target)
        exported = replace(exported, config={**exported.config, "build_command": config.command(pack.name)})
        exported.save()
        base_measured = _base_measurement(earlier) if earlier is not None else None
        if earlier is not None and base_measured is not None:  # the base's numbers outlive its adapter
            kept = {"base": earlier.evaluation["base"], "base_measurement": base_measured,
                    "seconds": {"base": earlier.evaluation.get("seconds", {}).get("base")}}  # fmt: skip
            replace(exported, evaluation=kept).save()
    if not {"eval", "rollouts", "report"} & set(stages):
        return TrainedModel.find(target) or TrainedModel.load(model_dir)
    shipped = TrainedModel.find(target)
    if shipped is None:
        raise DataError(f"no exported model in {target}: run the export stage first")
    evaluation = dict(shipped.evaluation)
    artefact_key, artefact_sha256 = _artefact(shipped)
    measured = artefact_sha256 is not None and evaluation.get(artefact_key) == artefact_sha256
    # a build from recorded episodes measures their held-out steps, all of them where fewer than eval_n
    held_out = (
        recorded.held_out_transitions(config.eval_n) if recorded is not None and "eval" in stages else None
    )
    eval_n = len(held_out) if held_out is not None else config.eval_n
    if (
        "eval" in stages
        and measured
        and not config.remeasure
        and evaluation.get("trained", {}).get("n") == eval_n
    ):
        logger.info("stage 4/%d eval: measured on this model already, kept", len(STAGES))
    elif "eval" in stages:
        key = _base_key(config, shipped)
        if _base_measurement(shipped) != key:
            evaluation.update(_sibling_base(target, config.kind, key))
            shipped = replace(shipped, evaluation=evaluation)
        keep_base = not config.remeasure_base and _base_measurement(shipped) == key
        measure_base = config.measure_base and not keep_base
        specs = [config.base, str(target)] if measure_base else [str(target)]
        started = begin(
            "eval",
            ("base and trained model" if measure_base
             else "trained model (the base measured on these transitions before)" if keep_base
             else "trained model (the base not measured)")
            + f" on {eval_n} held-out {'recorded ' if held_out is not None else ''}transitions",
        )  # fmt: skip
        eta = Eta("eval", eval_n, "transitions")

        def report(results: list[Any]) -> None:
            eta(results[-1].report.n, ", ".join(
                f"{name}: reward {r.report.reward_agreement:.2f}, done {r.report.done_agreement:.2f}"
                for name, r in zip(("base", "trained")[-len(results):], results, strict=True)))  # fmt: skip
            write_result(results, eval_file)

        recorded_options: dict[str, Any] = (
            {"transitions": held_out, "supply": RECORDED_SUPPLY} if held_out is not None else {}
        )
        results = compare_models(
            specs, n=config.eval_n, domain=pack.name, seed=config.seed, on_batch=report, **recorded_options
        )
        trained_result = results[-1]
        base: dict[str, Any] = {}
        seconds: dict[str, Any] = {}
        if keep_base:
            base = {
                "base": evaluation["base"],
                "base_measured": "in an earlier build",
                "base_measurement": key,
            }
            seconds = {"base": evaluation.get("seconds", {}).get("base")}
        elif measure_base:
            base = {"base": _summary(results[0].report.to_dict()), "base_measured": "in this build",
                    "base_measurement": key}  # fmt: skip
            seconds = {"base": results[0].seconds}
        else:  # the base's numbers of other transitions must not stand beside these
            for name in ("base", "base_measured", "base_measurement"):
                evaluation.pop(name, None)
        evaluation.update(
            **base,
            trained=_summary(trained_result.report.to_dict()),
            seconds={**seconds, "trained": trained_result.seconds},
            seed=config.seed,
            n=trained_result.report.n,
            **{artefact_key: artefact_sha256},
        )
        shipped = replace(shipped, evaluation=evaluation)
        shipped.save()
        logger.info("eval: done in %.0f s", time.perf_counter() - started)
    no_rollouts = _no_rollouts(pack, config) if "rollouts" in stages and config.rollouts else None
    if no_rollouts is not None:
        logger.info("stage 5/%d rollouts: skipped: %s", len(STAGES), no_rollouts)
    elif "rollouts" in stages and config.rollouts:
        from dreamgym_env.bench.consistency import CONSISTENCY_POLICIES, rollout_consistency

        # kept where this model played every policy's episodes (builds before random played two)
        played = {r.get("policy"): r.get("episodes") for r in evaluation.get("rollouts", [])}
        if (
            measured
            and not config.remeasure
            and played == dict.fromkeys(CONSISTENCY_POLICIES, config.rollouts)
        ):
            logger.info("stage 5/%d rollouts: measured on this model already, kept", len(STAGES))
        else:
            from dreamgym_env.experience.local import LocalExperienceModel

            total = config.rollouts * len(CONSISTENCY_POLICIES)
            started = begin("rollouts", f"{total} synthetic episodes replayed in the reference env")
            eta = Eta("rollouts", total, "episodes")
            model = LocalExperienceModel(**shipped.local_settings())
            try:
                reports = rollout_consistency(
                    model,
                    pack,
                    episodes=config.rollouts,
                    policies=CONSISTENCY_POLICIES,
                    seed=config.seed,
                    progress=eta.advance,
                )
            finally:
                model.close()
            evaluation["rollouts"] = [r.to_dict() for r in reports]
            shipped = replace(shipped, evaluation=evaluation)
            shipped.save()
            (work / "rollouts.json").write_text(
                json.dumps(evaluation["rollouts"], indent=2) + "\n", encoding="utf-8"
            )
            logger.info("rollouts: done in %.0f s", time.perf_counter() - started)
    if "report" in stages and "eval" not in stages and not measured:
        stopped = _stopped_evaluation(eval_file, shipped, config)
        if stopped is not None:  # an evaluation stopped early: its last complete batch
            logger.info(
                "report: a stopped evaluation's %d transitions (%s)", stopped["trained"]["n"], eval_file
            )
            evaluation.update(stopped)
            shipped = replace(shipped, evaluation=evaluation)
            shipped.save()
    if "report" in stages:
        begin("report", f"{target / REPORT_NAME}")
        if not evaluation:
            raise DataError(f"nothing measured yet for {pack.name}: run the eval stage first")
        write_report(shipped, evaluation, target / REPORT_NAME)
    logger.info("built %s: %s", pack.name, target / MANIFEST_NAME)
    return shipped
