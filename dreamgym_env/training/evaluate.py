"""The fidelity report of an experience model, base or trained, on held-out tasks.

Transitions are drawn by the shared sampler (:func:`dreamgym_env.bench.sampling.sample_transitions`:
test-split episodes of the expert, noisy and random policies, in structured mode), so the same
``n`` and ``seed`` give the same transitions before and after training. A trained model's
manifest lists the tasks it was trained on; a drawn transition of one of them is an error, not
a silent leak.

Example::

    result = evaluate_model("runs/webshop-lora", n=100)   # the embedded model with the adapter
    result = evaluate_model("qwen-0.5b", n=100, domain="webshop")  # the base, for comparison
    print(result.format())
    base, trained = compare_models(["qwen-0.5b", "runs/webshop-lora"], n=100)  # same transitions
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, Literal

from dreamgym_env.bench.fidelity import (
    FidelityReport,
    ReferenceTransition,
    TransitionScore,
    score_transitions,
    summarize,
)
from dreamgym_env.bench.sampling import sample_transitions
from dreamgym_env.domain import Supply
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.trained import MANIFEST_NAME, TrainedModel

Backend = Literal["local", "transformers"]
DEFAULT_EVAL_BATCH: Final = 4
"""Requests asked at once: the local backend's default slots."""


@dataclass(frozen=True)
class EvalResult:
    """A fidelity report with what was measured: the model, the domain, the wall time."""

    model: str
    domain: str
    backend: Backend
    seed: int
    seconds: float
    report: FidelityReport

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "report": self.report.to_dict()}

    def format(self) -> str:
        head = (
            f"{self.model} on {self.report.n} held-out {self.domain} transitions (seed {self.seed}, "
            f"{self.backend} backend): {self.seconds:.0f} s wall, "
            f"{self.seconds / max(1, self.report.n):.1f} s a transition"
        )
        return f"{head}\n{self.report}"


def load_model(
    spec: str, *, backend: Backend = "local", **settings: Any
) -> tuple[ExperienceModel, TrainedModel | None]:
    """The experience model ``spec`` names, and its training manifest when it is a trained one.

    ``spec``: a directory written by ``dreamgym experience train`` (the local backend loads its
    base GGUF with the adapter; the ``transformers`` backend its base with the PEFT adapter), a
    ``.gguf`` file or a preset name (local backend). ``settings`` go to the backend.
    """
    path = Path(spec).expanduser()
    trained = TrainedModel.load(path) if (path / MANIFEST_NAME).is_file() else None
    if trained is not None:
        trained.warn_if_stale(get_domain(trained.domain))
    if backend == "transformers":
        if trained is None:
            raise ConfigurationError(
                f"the transformers backend needs a trained model directory, got {spec!r}"
            )
        from dreamgym_env.training.serving import TransformersExperienceModel

        return TransformersExperienceModel(path, **settings), trained
    if backend != "local":
        raise ConfigurationError(f"backend must be 'local' or 'transformers', got {backend!r}")
    from dreamgym_env.experience.selection import model_from_spec

    return model_from_spec(f"local:{spec}", **settings), trained  # a trained directory, a .gguf or a preset


def evaluate_model(
    spec: str,
    *,
    n: int = 100,
    domain: str | None = None,
    seed: int = 0,
    backend: Backend = "local",
    batch_size: int = DEFAULT_EVAL_BATCH,
    **settings: Any,
) -> EvalResult:
    """Measure the fidelity of the model ``spec`` names (see :func:`load_model`) on ``n`` held-out transitions.

    ``domain`` defaults to the trained model's; a base model needs it. ``settings`` go to the backend.
    """
    return compare_models(
        [spec], n=n, domain=domain, seed=seed, backend=backend, batch_size=batch_size, **settings
    )[0]


def compare_models(
    specs: Sequence[str],
    *,
    n: int = 100,
    domain: str | None = None,
    seed: int = 0,
    backend: Backend = "local",
    batch_size: int = DEFAULT_EVAL_BATCH,
    on_batch: Callable[[list[EvalResult]], object] | None = None,
    transitions: Sequence[ReferenceTransition] | None = None,
    supply: Supply = "pack",
    **settings: Any,
) -> list[EvalResult]:
    """Measure several models (a base and its trained adapter) on the same held-out transitions, batch by batch.

    Each batch of ``batch_size`` transitions is asked of every model in turn, and ``on_batch``
    gets the results so far (one :class:`EvalResult` a model, over the same transitions): a run
    stopped early still compares like with like. ``domain`` defaults to the first trained model's;
    ``settings`` go to every model's backend. ``transitions`` (held-out recorded ones, made with
    ``supply``; see :func:`~dreamgym_env.bench.fidelity.score_transitions`) are asked instead of
    ``n`` drawn from the domain's reference env.
    """
    models: list[tuple[str, ExperienceModel]] = []
    trained: list[TrainedModel] = []
    try:
        for spec in specs:
            model, manifest = load_model(spec, backend=backend, **settings)
            models.append((spec, model))
            trained += [manifest] if manifest is not None else []
        name = domain or (trained[0].domain if trained else None)
        if name is None:
            raise ConfigurationError("pass the domain: no model was trained on one")
        pack = get_domain(name)
        if transitions is None:
            transitions = [s.reference for s in sample_transitions(pack, n, seed=seed)]
        seen = {t.request.task.id for t in transitions} & {i for m in trained for i in m.train_task_ids}
        if seen:
            raise DataError(f"the evaluation would use tasks seen in training: {sorted(seen)[:5]}")
        scores: dict[str, list[TransitionScore]] = {spec: [] for spec, _ in models}
        seconds = dict.fromkeys(scores, 0.0)
        results: list[EvalResult] = []
        for begin in range(0, len(transitions), batch_size):
            batch = transitions[begin : begin + batch_size]
            for spec, model in models:
                started = time.perf_counter()
                scores[spec] += score_transitions(
                    model, batch, domain=pack, batch_size=batch_size, supply=supply
                )
                seconds[spec] += time.perf_counter() - started
            results = [
                EvalResult(spec, pack.name, backend, seed, round(seconds[spec], 1), summarize(scores[spec]))
                for spec, _ in models
            ]
            if on_batch is not None:
                on_batch(results)
        return results
    finally:
        for _, model in models:
            model.close()


def write_result(result: EvalResult | Sequence[EvalResult], path: str | Path) -> None:
    """Write an evaluation as JSON (several, as a list)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = result.to_dict() if isinstance(result, EvalResult) else [r.to_dict() for r in result]
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
