"""One fidelity measurement in every mode and grounding asked for, and its tables.

:func:`run_fidelity` asks a model the same sampled transitions (:mod:`.sampling`) once per
state mode (``structured``, ``text``) and grounding (``none``, ``replay``) and keeps every
comparison; :func:`run_recorded` asks it recorded transitions as they are
(:func:`~.sampling.recorded_samples`). :class:`FidelityResults` turns them into the JSON for
machines and the tables (overall, by action type, by state field) that the markdown and HTML
reports both show.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from dreamgym_env.bench.consistency import ConsistencyReport
from dreamgym_env.bench.fidelity import (
    FidelityReport,
    StateMode,
    TransitionScore,
    fidelity_by_action,
    score_transitions,
    summarize,
)
from dreamgym_env.bench.sampling import Sample, mode_transitions, replay_grounder
from dreamgym_env.domain import Domain, Supply
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.experience.base import ExperienceModel

Grounding = Literal["none", "replay"]
MODES: tuple[StateMode, ...] = ("structured", "text")
GROUNDINGS: tuple[Grounding, ...] = ("none", "replay")
Table = tuple[list[str], list[list[str]]]
"""Headers and rows of cells, as text."""


@dataclass(frozen=True)
class FidelityRow:
    """The model's answers to every sampled transition in one mode and grounding."""

    mode: StateMode
    grounding: Grounding
    scores: list[TransitionScore]
    wall_s: float

    @property
    def key(self) -> str:
        """``"structured/none"``, ``"text/replay"``, ..."""
        return f"{self.mode}/{self.grounding}"

    @cached_property
    def report(self) -> FidelityReport:
        """The report over every transition of the row."""
        return summarize(self.scores)

    @cached_property
    def by_action(self) -> dict[str, FidelityReport]:
        """One report per action type, the most frequent first."""
        return fidelity_by_action(self.scores)


@dataclass(frozen=True)
class FidelityResults:
    """Every row of one measurement, with what it was measured on."""

    domain: str
    model: str
    seed: int
    history_len: int
    samples: list[Sample]
    rows: list[FidelityRow] = field(default_factory=list)
    rollouts: list[ConsistencyReport] = field(default_factory=list)
    """Rollout consistency per policy (:mod:`.consistency`), where it was measured."""
    supply: Supply = "pack"
    """What the requests let the domain fix before the model answered."""
    trajectories: str | None = None
    """The file the transitions were recorded in; ``None``: sampled from the reference env."""

    @property
    def origin(self) -> str:
        """Where the transitions come from, in words."""
        if self.trajectories is None:
            return "reference transitions (test split; expert, noisy and random episodes)"
        return f"recorded transitions of {self.trajectories}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: each run's :class:`FidelityReport`, its wall time and its reports by action type."""
        return {
            "domain": self.domain,
            "n": len(self.samples),
            "model": self.model,
            "seed": self.seed,
            "history_len": self.history_len,
            "supply": self.supply,
            "trajectories": self.trajectories,
            "runs": {
                row.key: {
                    **row.report.to_dict(),
                    "wall_s": round(row.wall_s, 1),
                    "by_action": {name: report.to_dict() for name, report in row.by_action.items()},
                }
                for row in self.rows
            },
            "rollouts": {report.policy: report.to_dict() for report in self.rollouts},
        }

    def overall_table(self) -> Table:
        """One line per run: every measure of its :class:`FidelityReport`."""
        headers = [
            "run", "valid", "invalid output", "exact", "similarity", "reward", "P(r=1)", "R(r=1)",
            "always-0 reward", "done", "always-0 done", "rubric reward", "rubric done", "accuracy",
            "model share (true)", "model share (answers)", "latency s", "tokens in/out",
        ]  # fmt: skip
        rows = []
        for row in self.rows:
            r = row.report
            rows.append(
                [
                    row.key,
                    *map(
                        _share, (r.valid, r.invalid_output, r.exact_match, r.similarity, r.reward_agreement)
                    ),
                    _share(r.reward_precision),
                    _share(r.reward_recall),
                    *map(_share, (r.always_zero_reward, r.done_agreement, r.always_zero_done)),
                    *map(_share, (r.rubric_reward_agreement, r.rubric_done_agreement, r.accuracy)),
                    *map(_share, (r.true_model_share, r.model_share)),
                    f"{r.latency_s:.2f}",
                    f"{r.prompt_tokens:.0f}/{r.completion_tokens:.0f}",
                ]
            )
        return headers, rows

    def action_table(self) -> Table:
        """One line per run and action type."""
        headers = ["run", "action", "n", "valid", "exact", "similarity", "reward", "done", "accuracy"]
        rows = [
            [
                row.key,
                name,
                str(r.n),
                *map(_share, (r.valid, r.exact_match, r.similarity, r.reward_agreement, r.done_agreement)),
                _share(r.accuracy),
            ]
            for row in self.rows
            for name, r in row.by_action.items()
        ]
        return headers, rows

    def field_table(self) -> Table:
        """Each field of the abstract state: exact agreement (similarity) per structured run."""
        structured = [row for row in self.rows if row.report.fields]
        names = list(dict.fromkeys(name for row in structured for name in row.report.fields))
        reports = [row.report for row in structured]
        rows = [
            [
                name,
                *(f"{_share(r.fields.get(name))} ({_share(r.field_similarity.get(name))})" for r in reports),
            ]
            for name in names
        ]
        return ["field", *(row.key for row in structured)], rows

    def rollout_table(self) -> Table:
        """One line per policy of the rollout-consistency episodes."""
        headers = [
            "policy", "episodes", "mean steps", "steps agreed before divergence", "episodes never diverged",
            "outcome agreement", "success (synthetic)", "success (reference)",
            "synthetic wins the reference does not confirm", "synthetic episodes stopped",
        ]  # fmt: skip
        rows = [
            [
                r.policy,
                str(r.episodes),
                f"{r.mean_steps:.1f}",
                *map(_share, (r.step_agreement, r.full_agreement, r.outcome_agreement)),
                *map(_share, (r.synthetic_success, r.reference_success, r.unconfirmed_wins, r.stopped)),
            ]
            for r in self.rollouts
        ]
        return headers, rows

    def to_markdown(self) -> str:
        """The tables as GitHub markdown, under a title."""
        parts = [
            f"## Fidelity of {self.model} on {self.domain} ({len(self.samples)} transitions, seed {self.seed})",
            f"{len(self.samples)} {self.origin}, supply {self.supply}, {self.history_len} past steps in "
            "each request. Model share: of the content that changes from a state to its next state, the "
            "share the model writes (the rest is carried or supplied by the pack).",
            _markdown(self.overall_table()),
            "### By action type",
            _markdown(self.action_table()),
        ]
        fields = self.field_table()
        if fields[1]:
            parts += ["### By state field: exact match (similarity)", _markdown(fields)]
        if self.rollouts:
            parts += [
                "### Rollout consistency: synthetic episodes replayed in the reference env",
                _markdown(self.rollout_table()),
            ]
        return "\n\n".join(parts) + "\n"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _markdown(table: Table) -> str:
    headers, rows = table
    lines = [headers, ["---"] * len(headers), *rows]
    return "\n".join("| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |" for line in lines)


def run_fidelity(
    model: ExperienceModel,
    domain: Domain,
    samples: Sequence[Sample],
    *,
    modes: Sequence[StateMode] = MODES,
    groundings: Sequence[Grounding] = GROUNDINGS,
    seed: int = 0,
    k: int | None = None,
    batch_size: int = 4,
    progress: Callable[[int], object] | None = None,
    on_row: Callable[[FidelityRow], object] | None = None,
    supply: Supply = "pack",
) -> list[FidelityRow]:
    """Ask ``model`` every sample in each of ``modes`` × ``groundings``; one row each.

    ``replay`` grounding retrieves ``k`` demonstrations (default: :data:`~.sampling.GROUNDING_K`)
    from a buffer of expert episodes (:func:`~.sampling.replay_grounder`, seeded by ``seed``).
    ``supply``: the one the samples were drawn with. ``progress`` is called with each answered
    batch's size, ``on_row`` with each finished row.
    """
    unknown = [m for m in modes if m not in MODES] + [g for g in groundings if g not in GROUNDINGS]
    if unknown:
        raise ConfigurationError(f"unknown modes or groundings {unknown}; known: {MODES} and {GROUNDINGS}")
    rows: list[FidelityRow] = []
    for mode in modes:
        for grounding in groundings:
            grounder = None
            if grounding == "replay":
                grounder = replay_grounder(domain, mode, seed=seed, **({"k": k} if k is not None else {}))
            references = mode_transitions(domain, samples, mode, grounder=grounder, supply=supply)
            started = time.perf_counter()
            scores = score_transitions(
                model, references, domain=domain, batch_size=batch_size, progress=progress
            )
            rows.append(FidelityRow(mode, grounding, scores, time.perf_counter() - started))
            if on_row is not None:
                on_row(rows[-1])
    return rows


def run_recorded(
    model: ExperienceModel,
    domain: Domain,
    samples: Sequence[Sample],
    *,
    batch_size: int = 4,
    progress: Callable[[int], object] | None = None,
) -> FidelityRow:
    """Ask ``model`` recorded samples (:func:`~.sampling.recorded_samples`) as they are: one ungrounded row.

    Its mode is the trajectories': structured where every request has the domain's schema, text
    where none has; a mix is refused (measure such files apart).
    """
    references = [sample.reference for sample in samples]
    structured = {reference.request.state_schema is not None for reference in references}
    if len(structured) > 1:
        raise ConfigurationError("the trajectories mix structured and text states; measure them apart")
    mode: StateMode = "structured" if structured == {True} else "text"
    started = time.perf_counter()
    scores = score_transitions(model, references, domain=domain, batch_size=batch_size, progress=progress)
    return FidelityRow(mode, "none", scores, time.perf_counter() - started)
