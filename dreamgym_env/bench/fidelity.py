"""Fidelity: how faithfully an experience model predicts what a reference env really does.

Build reference transitions from real trajectories (:func:`reference_transitions`), ask any
:class:`~dreamgym_env.experience.base.ExperienceModel` for them, and compare
(:func:`measure_fidelity`): exact next-state match, similarity of the text the agent would see,
reward and episode-end agreement (with precision and recall of reward 1 beside the trivial
"always reward 0, never done" baseline), accuracy (all three right at once), the share of valid
answers and, where the domain has them, the agreement of the state's kind, of the admissible
actions (Jaccard) and, in structured mode, of every field of the abstract state. The paper
bounds the real-vs-synthetic gap by exactly these reward and transition errors.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from rapidfuzz.fuzz import ratio

from dreamgym_env.envs.domain import ActionError, Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, ExperienceModelError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.types import ExperienceRequest, Step, Trajectory, Transition

DEFAULT_HISTORY_LEN = 4
"""As the synthetic env's default: the model sees this many past steps."""
DEFAULT_REWARD_TOLERANCE = 0.1
StateMode = Literal["text", "structured"]


@dataclass(frozen=True)
class ReferenceTransition:
    """A request as the synthetic env would send it, and what the reference env really did."""

    request: ExperienceRequest
    truth: Transition


@dataclass(frozen=True)
class FidelityReport:
    """Shares over ``n`` transitions; a failed answer counts as wrong on every measure.

    ``similarity``: the mean normalised rapidfuzz ratio (0-1) of the text the agent would see.
    ``valid``: answers that came back as a state of the domain (the rest failed or did not parse).
    ``reward_precision`` / ``reward_recall``: of predicted reward 1 against true reward 1 (``None``
    when there is nothing to divide by); ``always_zero_reward`` / ``always_zero_done``: what
    answering "reward 0, not done" every time would agree on. ``kind_agreement``,
    ``admissible_jaccard`` and ``fields`` (per field of the abstract state) are ``None`` / empty
    where the domain or the mode has nothing to compare. ``rubric_reward_agreement``: the reward
    agreement when the domain's rubric scores the predicted state where it can
    (``reward_mode="rubric"``), structured mode only. ``latency_s``, ``prompt_tokens`` and
    ``completion_tokens`` are means per answered transition.
    """

    n: int
    exact_match: float
    similarity: float
    reward_agreement: float
    done_agreement: float
    accuracy: float
    valid: float = 1.0
    reward_precision: float | None = None
    reward_recall: float | None = None
    always_zero_reward: float = 0.0
    always_zero_done: float = 0.0
    rubric_reward_agreement: float | None = None
    kind_agreement: float | None = None
    admissible_jaccard: float | None = None
    fields: dict[str, float] = field(default_factory=dict)
    latency_s: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        rows = []
        for name, value in self.to_dict().items():
            if name in ("n", "fields") or value is None:
                continue
            rows.append(f"{name:<19} {value:.3f}")
        rows += [f"field {name:<13} {value:.3f}" for name, value in self.fields.items()]
        return "\n".join([f"fidelity over {self.n} transitions", *rows])


def normalize_state(text: str) -> str:
    """A state with each line's whitespace collapsed and blank lines dropped."""
    return "\n".join(" ".join(line.split()) for line in text.strip().splitlines() if line.strip())


def reference_transitions(
    trajectories: Iterable[Trajectory],
    domain: str | Domain,
    *,
    history_len: int = DEFAULT_HISTORY_LEN,
    include_invalid: bool = False,
) -> list[ReferenceTransition]:
    """One reference transition per recorded step.

    Invalid actions are skipped by default: the synthetic env answers them itself and never
    asks the model. ``history`` holds the ``history_len`` steps before, as the env sends it;
    each request carries ``domain``'s prompt, as the synthetic env's do. Trajectories recorded
    with ``state_mode="structured"`` (their states are abstract states) give structured requests.
    """
    if history_len < 0:
        raise ConfigurationError(f"history_len must be >= 0, got {history_len}")
    pack = get_domain(domain)
    out: list[ReferenceTransition] = []
    for trajectory in trajectories:
        structured = trajectory.metadata.get("state_mode") == "structured"
        if structured and pack.state_json_schema is None:
            raise ConfigurationError(f"domain {pack.name!r} has no state schema for structured trajectories")
        past: list[Step] = []
        for step in trajectory.steps:
            if step.action_valid or include_invalid:
                request = ExperienceRequest(
                    prompt=pack.prompt,
                    state_schema=pack.state_json_schema if structured else None,
                    task=trajectory.task,
                    history=past[-history_len:] if history_len else [],
                    state=step.state,
                    action=step.action,
                )
                truth = Transition(next_state=step.next_state, reward=step.reward, terminated=step.done)
                out.append(ReferenceTransition(request, truth))
            past.append(step)
    return out


def _answers(model: ExperienceModel, batch: Sequence[ReferenceTransition]) -> list[Transition | None]:
    """The model's answers; where the batch fails, each request alone, a failure as ``None``."""
    requests = [t.request for t in batch]
    try:
        return list(model.predict_sync(requests))
    except ExperienceModelError:
        answers: list[Transition | None] = []
        for request in requests:
            try:
                answers.append(model.predict_one(request))
            except ExperienceModelError:
                answers.append(None)
        return answers


class _Views:
    """The comparable views of a state: its text as the agent sees it, its abstract fields, its actions."""

    def __init__(self, domain: Domain, structured: bool) -> None:
        self.domain, self.structured = domain, structured

    def abstract(self, state: str) -> Any:
        if not self.structured:
            return None
        try:
            return self.domain.parse_state(state)
        except ValueError:
            return None

    def text(self, state: str, abstract: Any) -> str:
        return self.domain.render_state(abstract) if abstract is not None else state

    def actions(self, text: str, abstract: Any) -> set[str] | None:
        found = (
            self.domain.state_admissible_actions(abstract)
            if abstract is not None
            else self.domain.admissible_actions(text)
        )
        return set(found) if found is not None else None


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def measure_fidelity(
    model: ExperienceModel,
    transitions: Sequence[ReferenceTransition],
    *,
    domain: str | Domain | None = None,
    batch_size: int = 64,
    reward_tolerance: float = DEFAULT_REWARD_TOLERANCE,
) -> FidelityReport:
    """Ask ``model`` for every transition, in batches, and compare with the truth.

    A reward agrees when it is within ``reward_tolerance`` of the true one; next states are
    compared as the text the agent would see (structured states rendered), after
    :func:`normalize_state`. ``domain`` (default: the first transition's task's, registered)
    gives the state kind, the admissible actions and the abstract fields to compare.
    """
    if not transitions:
        raise ConfigurationError("measure_fidelity needs at least one reference transition")
    if batch_size < 1:
        raise ConfigurationError(f"batch_size must be >= 1, got {batch_size}")
    pack = get_domain(domain if domain is not None else transitions[0].request.task.domain)
    totals: dict[str, float] = dict.fromkeys(
        ("exact", "similar", "rewards", "dones", "accurate", "valid", "zero_reward", "zero_done"), 0.0
    )
    kinds: list[float] = []
    jaccards: list[float] = []
    fields: dict[str, list[float]] = {}
    predicted_wins = true_wins = both_wins = 0
    rubric_agreements: list[float] = []
    rubric_used = False
    latency = prompt_tokens = completion_tokens = 0.0
    answered = 0
    for begin in range(0, len(transitions), batch_size):
        batch = transitions[begin : begin + batch_size]
        for reference, predicted in zip(batch, _answers(model, batch), strict=True):
            views = _Views(pack, reference.request.state_schema is not None)
            truth = reference.truth
            true_abstract = views.abstract(truth.next_state)
            true_text = views.text(truth.next_state, true_abstract)
            true_actions = views.actions(true_text, true_abstract)
            true_win = truth.reward >= 1.0 - reward_tolerance
            true_wins += true_win
            totals["zero_reward"] += abs(truth.reward) <= reward_tolerance
            totals["zero_done"] += not truth.terminated
            guess_abstract = views.abstract(predicted.next_state) if predicted is not None else None
            valid = predicted is not None and (not views.structured or guess_abstract is not None)
            if predicted is not None:
                answered += 1
                latency += predicted.usage.latency_s
                prompt_tokens += predicted.usage.prompt_tokens
                completion_tokens += predicted.usage.completion_tokens
            if predicted is None or not valid:
                if true_actions is not None:
                    jaccards.append(0.0)
                if true_abstract is not None:
                    kinds.append(0.0)
                    for name in type(true_abstract).model_fields:
                        fields.setdefault(name, []).append(0.0)
                continue
            guess_text = views.text(predicted.next_state, guess_abstract)
            truth_norm, guess_norm = normalize_state(true_text), normalize_state(guess_text)
            same_state = truth_norm == guess_norm
            same_reward = abs(predicted.reward - truth.reward) <= reward_tolerance
            same_done = predicted.terminated == truth.terminated
            predicted_win = predicted.reward >= 1.0 - reward_tolerance
            predicted_wins += predicted_win
            both_wins += predicted_win and true_win
            totals["valid"] += 1
            totals["exact"] += same_state
            totals["similar"] += 1.0 if same_state else ratio(truth_norm, guess_norm) / 100.0
            totals["rewards"] += same_reward
            totals["dones"] += same_done
            totals["accurate"] += same_state and same_reward and same_done
            if guess_abstract is not None:
                action = pack.parse_action(reference.request.action)
                rubric = (
                    pack.rubric_reward(reference.request.task, guess_abstract, action)
                    if not isinstance(action, ActionError)
                    else None
                )
                rubric_used = rubric_used or rubric is not None
                scored = rubric if rubric is not None else predicted.reward
                rubric_agreements.append(float(abs(scored - truth.reward) <= reward_tolerance))
            guess_actions = views.actions(guess_text, guess_abstract)
            if true_actions is not None:
                guess_actions = guess_actions or set()
                union = true_actions | guess_actions
                jaccards.append(len(true_actions & guess_actions) / len(union) if union else 1.0)
            if true_abstract is not None and guess_abstract is not None:
                kinds.append(
                    float(
                        getattr(true_abstract, pack.state_kind_field or "", None)
                        == getattr(guess_abstract, pack.state_kind_field or "", None)
                    )
                )
                for name in type(true_abstract).model_fields:
                    same = _json(getattr(true_abstract, name)) == _json(getattr(guess_abstract, name))
                    fields.setdefault(name, []).append(float(same))
    n = len(transitions)
    return FidelityReport(
        n=n,
        exact_match=totals["exact"] / n,
        similarity=totals["similar"] / n,
        reward_agreement=totals["rewards"] / n,
        done_agreement=totals["dones"] / n,
        accuracy=totals["accurate"] / n,
        valid=totals["valid"] / n,
        reward_precision=both_wins / predicted_wins if predicted_wins else None,
        reward_recall=both_wins / true_wins if true_wins else None,
        always_zero_reward=totals["zero_reward"] / n,
        always_zero_done=totals["zero_done"] / n,
        rubric_reward_agreement=sum(rubric_agreements) / n if rubric_used else None,
        kind_agreement=sum(kinds) / len(kinds) if kinds and pack.state_kind_field else None,
        admissible_jaccard=sum(jaccards) / len(jaccards) if jaccards else None,
        fields={name: sum(values) / len(values) for name, values in fields.items()},
        latency_s=latency / answered if answered else 0.0,
        prompt_tokens=prompt_tokens / answered if answered else 0.0,
        completion_tokens=completion_tokens / answered if answered else 0.0,
    )
