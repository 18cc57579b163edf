"""A trained experience model's manifest: what it was trained on, where its parts are, whether it is stale.

``dreamgym experience train`` writes the manifest (:data:`MANIFEST_NAME`) beside the adapter; a
domain pack that ships a trained model keeps the same files in its ``experience_model/`` folder
(``dreamgym experience build`` writes them there). The manifest records the
:func:`~dreamgym_env.experience.prompt.prompt_fingerprint` of the requests the model learned
and the SHA-256 of its GGUF adapter, so that a pack whose prompt changed, or whose adapter was
replaced, is noticed at load time (:class:`~dreamgym_env.errors.StaleModelWarning`) and by the
packs' tests.

Example::

    trained = TrainedModel.load("dreamgym_env/envs/webshop/experience_model")
    model = LocalExperienceModel(**trained.local_settings())
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol, cast

from dreamgym_env.domain import SUPPLIES, Supply
from dreamgym_env.errors import DataError, StaleModelWarning
from dreamgym_env.experience.prompt import prompt_fingerprint
from dreamgym_env.experience.provision import PRESETS
from dreamgym_env.types import DomainPrompt

MANIFEST_NAME: Final = "dreamgym-experience.json"
ADAPTER_DIR: Final = "adapter"
ADAPTER_GGUF: Final = "adapter.gguf"
MODEL_GGUF: Final = "model.gguf"
"""A distilled model's whole weights and tokenizer (no base): ``dreamgym experience build --kind distilled``."""
DISTILLED_SLOTS: Final = 16
"""Slots a distilled model runs (a 16-env vector env's step decoded together); its KV cache is small."""
DISTILLED_THREADS: Final = 1
"""Threads a distilled model runs on: its matrices are too small to gain from a second thread, and
a thread that waits for a core another process holds stalls every step of the others."""
DISTILLED_CONTEXT: Final = 4096
"""A distilled model's context window where its manifest records none."""
DISTILLED_DIR: Final = "distilled"
"""Where a pack keeps its distilled model, inside its ``experience_model/`` folder (``local:distilled``)."""
DISTILLED_BASE: Final = "distilled"
"""The ``base`` of a distilled model's manifest: it was trained from scratch, not adapted."""
ADAPTER_SPEC: Final = "adapter"
"""``local:adapter``: the pack's LoRA adapter of the embedded base model."""
TrainedKind = Literal["adapter", "distilled"]


class PromptedPack(Protocol):
    """What staleness is judged against: a domain pack's name, prompt and state schema."""

    @property
    def name(self) -> str: ...

    @property
    def prompt(self) -> DomainPrompt: ...

    @property
    def state_json_schema(self) -> dict[str, Any] | None: ...


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def rebuild_command(domain: str, kind: TrainedKind = "adapter") -> str:
    """The one command that rebuilds a pack's trained experience model of ``kind``."""
    return f"dreamgym experience build --domain {domain} --kind {kind}"


def _supply(value: Any, directory: Path) -> Supply:
    if value not in SUPPLIES:
        raise DataError(
            f"{directory}: its manifest's supply must be one of {', '.join(SUPPLIES)}, got {value!r}"
        )
    return cast(Supply, value)


@dataclass(frozen=True)
class TrainedModel:
    """A training run's manifest: what was trained on what, where its parts are, what it cost."""

    directory: Path
    base: str
    """The base model: a preset name (``qwen-0.5b``), a GGUF file or a Hugging Face directory."""
    base_gguf: Path | None
    adapter_gguf: Path | None
    domain: str
    train_task_ids: frozenset[str]
    config: dict[str, Any]
    stats: dict[str, Any] = field(default_factory=dict)
    state_mode: str | None = None
    prompt_fingerprint: str | None = None
    """:func:`~dreamgym_env.experience.prompt.prompt_fingerprint` of the requests it was trained on."""
    adapter_sha256: str | None = None
    """The GGUF adapter's SHA-256, recorded when it was written."""
    data: dict[str, Any] = field(default_factory=dict)
    """What the training data were (file, SHA-256, examples per policy, tasks), where recorded."""
    evaluation: dict[str, Any] = field(default_factory=dict)
    """The held-out measurements of ``dreamgym experience build``, where recorded."""
    model_gguf: Path | None = None
    """A distilled model's GGUF (weights, tokenizer, chat template): it runs alone, without a base."""
    model_sha256: str | None = None
    system_prompt: bool = True
    """Whether the model reads the system prompt; a distilled model learned the domain's rules
    from data, so its requests leave it out (a constant prefix it would only pay for)."""
    supply: Supply = "pack"
    """What fixed next-state fields in the requests it learned (:data:`~dreamgym_env.domain.Supply`):
    ``"pack"``, the domain's world data too (a reference env's data; manifests that record
    nothing), or ``"none"``, the structural rules only (trained from recorded trajectories)."""

    @property
    def kind(self) -> TrainedKind:
        """``distilled`` (trained from scratch, one GGUF) or ``adapter`` (a LoRA adapter of a base)."""
        return "distilled" if self.base == DISTILLED_BASE else "adapter"

    @property
    def rebuild_command(self) -> str:
        """The command that rebuilt this model as it is (its recipe's flags), or its kind's default recipe."""
        return str(self.config.get("build_command") or rebuild_command(self.domain, self.kind))

    @property
    def adapter_dir(self) -> Path:
        return self.directory / ADAPTER_DIR

    def save(self) -> None:
        payload = {
            "base": self.base,
            "base_gguf": str(self.base_gguf) if self.base_gguf else None,
            "adapter_gguf": self.adapter_gguf.name if self.adapter_gguf else None,
            "adapter_sha256": self.adapter_sha256,
            "model_gguf": self.model_gguf.name if self.model_gguf else None,
            "model_sha256": self.model_sha256,
            "system_prompt": self.system_prompt,
            "supply": self.supply,
            "domain": self.domain,
            "state_mode": self.state_mode,
            "prompt_fingerprint": self.prompt_fingerprint,
            "data": self.data,
            "config": self.config,
            "stats": self.stats,
            "evaluation": self.evaluation,
            "train_task_ids": sorted(self.train_task_ids),
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / MANIFEST_NAME).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path) -> TrainedModel:
        directory = Path(directory)
        try:
            payload = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DataError(
                f"{directory} is not a trained experience model (no readable {MANIFEST_NAME}): {exc}"
            ) from None
        return cls(
            directory=directory,
            base=payload["base"],
            base_gguf=Path(payload["base_gguf"]) if payload.get("base_gguf") else None,
            adapter_gguf=directory / payload["adapter_gguf"] if payload.get("adapter_gguf") else None,
            domain=payload["domain"],
            train_task_ids=frozenset(payload.get("train_task_ids", ())),
            config=payload.get("config", {}),
            stats=payload.get("stats", {}),
            state_mode=payload.get("state_mode"),
            prompt_fingerprint=payload.get("prompt_fingerprint"),
            adapter_sha256=payload.get("adapter_sha256"),
            data=payload.get("data", {}),
            evaluation=payload.get("evaluation", {}),
            model_gguf=directory / payload["model_gguf"] if payload.get("model_gguf") else None,
            model_sha256=payload.get("model_sha256"),
            system_prompt=bool(payload.get("system_prompt", True)),
            supply=_supply(payload.get("supply", "pack"), directory),
        )

    @classmethod
    def find(cls, directory: str | Path | None) -> TrainedModel | None:
        """The trained model in ``directory``, or ``None`` when it holds none (or is ``None``)."""
        if directory is None or not (Path(directory) / MANIFEST_NAME).is_file():
            return None
        return cls.load(directory)

    def staleness(self, pack: PromptedPack, state_mode: str | None = None) -> str | None:
        """Why ``pack``'s requests (in ``state_mode``, default the trained one) differ from the ones it learned; ``None`` when they do not.

        Also when its adapter file is not the one the manifest records.
        """
        if self.prompt_fingerprint is None:
            return "its manifest records no prompt fingerprint (trained before they were recorded)"
        mode = state_mode or self.state_mode
        if mode != self.state_mode:
            return f"it was trained on {self.state_mode} requests, this env sends {mode} ones"
        schema = pack.state_json_schema if mode == "structured" else None
        now = prompt_fingerprint(pack.prompt, schema)
        if now != self.prompt_fingerprint:
            return (
                f"it was trained on prompt {self.prompt_fingerprint}, the {pack.name!r} pack's is now {now}"
            )
        for what, path, sha256 in (
            ("adapter", self.adapter_gguf, self.adapter_sha256),
            ("model", self.model_gguf, self.model_sha256),
        ):
            if sha256 is not None and path is not None:
                if not path.is_file():
                    return f"its {what} {path.name} is missing"
                if file_sha256(path) != sha256:
                    return f"its {what} {path.name} is not the file its manifest records"
        return None

    def warn_if_stale(self, pack: PromptedPack, state_mode: str | None = None) -> bool:
        """Warn (:class:`~dreamgym_env.errors.StaleModelWarning`) with the command that rebuilds it; returns whether stale."""
        reason = self.staleness(pack, state_mode)
        if reason is not None:
            warnings.warn(
                f"{self.directory}: a stale experience model: {reason}. Rebuild it: {self.rebuild_command}",
                StaleModelWarning,
                stacklevel=3,
            )
        return reason is not None

    def local_settings(self) -> dict[str, Any]:
        """The :class:`~dreamgym_env.experience.local.LocalExperienceModel` arguments that serve it (base and GGUF adapter, or the distilled model)."""
        if self.model_gguf is not None:  # small: many slots are cheap; its context is what it was trained for
            return {
                "model_path": str(self.model_gguf),
                "system_prompt": self.system_prompt,
                "n_parallel": DISTILLED_SLOTS,
                "n_threads": DISTILLED_THREADS,
                "n_ctx": int(self.config.get("shape", {}).get("context", DISTILLED_CONTEXT)),
            }
        if self.adapter_gguf is None:
            raise DataError(
                f"{self.directory}: trained from a Hugging Face directory, so it has no GGUF adapter for "
                "the local backend; serve it with the transformers backend"
            )
        if self.base.strip().lower() in PRESETS:
            base: dict[str, Any] = {"preset": self.base}
        elif self.base_gguf is not None:
            base = {"model_path": str(self.base_gguf)}
        else:
            raise DataError(
                f"{self.directory}: its base {self.base!r} is no GGUF model the local backend runs"
            )
        return {**base, "lora_adapter": str(self.adapter_gguf)}

    def describe(self) -> str:
        """A short name for logs: the domain's adapter, its base and its held-out reward agreement where measured."""
        measured = self.evaluation.get("trained", {})
        numbers = (
            f", held-out reward agreement {measured['reward_agreement']:.2f}, episode end "
            f"{measured['done_agreement']:.2f} on {measured['n']} transitions"
            if {"reward_agreement", "done_agreement", "n"} <= measured.keys()
            else ""
        )
        what = (
            f"distilled model ({self.config.get('size', '?')})"
            if self.model_gguf is not None
            else f"trained adapter on {self.base}"
        )
        return f"the {self.domain} pack's {what} ({self.stats.get('steps', '?')} steps{numbers})"


@dataclass(frozen=True)
class PackModels:
    """The trained experience models one domain pack ships, and the one its synthetic envs use by default.

    ``adapter``: the LoRA adapter of the embedded base (the pack's ``experience_model/`` folder);
    ``distilled``: the small model trained from scratch (its ``distilled/`` subfolder).
    ``preferred`` names the default; where the pack ships only the other, that one is the default.
    """

    adapter: TrainedModel | None = None
    distilled: TrainedModel | None = None
    preferred: TrainedKind = "adapter"

    @classmethod
    def find(cls, directory: str | Path | None, preferred: TrainedKind = "adapter") -> PackModels:
        """The models in a pack's ``experience_model/`` folder (``None``: it ships none)."""
        if directory is None:
            return cls(preferred=preferred)
        return cls(
            TrainedModel.find(directory), TrainedModel.find(Path(directory) / DISTILLED_DIR), preferred
        )

    def get(self, kind: TrainedKind) -> TrainedModel | None:
        """The pack's model of ``kind``, or ``None`` when it ships none."""
        return self.adapter if kind == "adapter" else self.distilled

    @property
    def default(self) -> TrainedModel | None:
        """The preferred model, else the other one, else ``None`` (the prompted base answers)."""
        other: TrainedKind = "distilled" if self.preferred == "adapter" else "adapter"
        return self.get(self.preferred) or self.get(other)
