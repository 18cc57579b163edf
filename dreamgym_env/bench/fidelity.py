"""Fidelity: how faithfully an experience model predicts what a reference env really does.

Build reference transitions from real trajectories (:func:`reference_transitions`), ask any
:class:`~dreamgym_env.experience.base.ExperienceModel` for them, and compare
(:func:`measure_fidelity`): exact next-state match, similarity of the text the agent would see,
reward and episode-end agreement (with precision and recall of reward 1 beside the trivial
"always reward 0, never done" baseline), accuracy (all three right at once), the share of valid
answers and, where the domain has them, the agreement of the state's kind, of the admissible
actions (Jaccard) and, in structured mode, of every field of the abstract state. The paper
bounds the real-vs-synthetic gap by exactly these reward and transition errors.

:func:`score_transitions` keeps the comparison of each transition (:class:`TransitionScore`);
:func:`summarize` turns any subset of them into a report, :func:`fidelity_by_action` one report
per action type (the verb of the domain's action grammar).

In structured mode the report also says how much of a next state the model writes: of the
content that changed from the state, the share the model wrote and the shares the request
supplied (carried by a structural rule, or fixed by the pack's world data and code), for the
model's answers and for the true next states (what the model must write to be right).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pydantic import BaseModel
from rapidfuzz.fuzz import ratio

from dreamgym_env.domain import (
    FIELD_SOURCES,
    ActionError,
    Domain,
    FieldSource,
    RecordedLookup,
    SuppliedFields,
    Supply,
    changed_content,
    share_of_model,
)
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, ExperienceModelError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.types import ExperienceRequest, Step, Task, Trajectory, Transition

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_HISTORY_LEN = 4
"""As the synthetic env's default: the model sees this many past steps."""
DEFAULT_REWARD_TOLERANCE = 0.1
StateMode = Literal["text", "structured"]
SUPPLYING_SOURCES: tuple[FieldSource, ...] = tuple(source for source in FIELD_SOURCES if source != "model")
"""The sources of next-state content besides the model, as :class:`FidelityReport` shares them."""


@dataclass(frozen=True)
class ReferenceTransition:
    """A request as the synthetic env would send it, and what the reference env really did.

    ``supplied``: what fixed next-state fields before the model answered
    (:meth:`~dreamgym_env.domain.Domain.supplied_fields`, as the synthetic env keeps it for a
    step); nothing for a request built without it.
    """

    request: ExperienceRequest
    truth: Transition
    supplied: SuppliedFields = field(default_factory=SuppliedFields)


@dataclass(frozen=True)
class FidelityReport:
    """Shares over ``n`` transitions; a failed answer counts as wrong on every measure.

    ``similarity``: the mean normalised rapidfuzz ratio (0-1) of the text the agent would see.
    ``valid``: answers that came back as a state of the domain (the rest failed or did not parse);
    ``invalid_output``: requests the model gave no answer for (its output was not a transition).
    ``reward_precision`` / ``reward_recall``: of predicted reward 1 against true reward 1 (``None``
    when there is nothing to divide by); ``always_zero_reward`` / ``always_zero_done``: what
    answering "reward 0, not done" every time would agree on. ``kind_agreement``,
    ``admissible_jaccard``, ``fields`` (exact agreement per field of the abstract state) and
    ``field_similarity`` (rapidfuzz ratio of each field's JSON) are ``None`` / empty where the
    domain or the mode has nothing to compare. ``rubric_reward_agreement``: the reward
    agreement when the domain's rubric scores the predicted state where it can
    (``reward_mode="rubric"``), structured mode only; ``rubric_done_agreement``: the episode-end
    agreement when, in a domain whose episodes end exactly at a win (``Domain.ends_when_won``),
    the rubric's win decides the end instead of the model. ``latency_s``, ``prompt_tokens``,
    ``evaluated_prompt_tokens`` (the prompt tokens the model computed: those its server did not
    reuse from the KV cache) and ``completion_tokens`` are means per answered transition.

    ``model_share`` (structured mode; ``None`` where nothing changed or nothing was compared): of
    the characters that differ between a state and the model's next state (settled by the domain
    where the request let it), the share the model wrote, summed over the answered transitions;
    ``supplied_share`` the share of each other source (``carried``, ``pack``, ``replay``).
    ``true_model_share`` / ``true_supplied_share``: the same of the true next states, the
    request's carried and given fields counted as supplied: how much of a real next state the
    model has to write.
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
    rubric_done_agreement: float | None = None
    kind_agreement: float | None = None
    admissible_jaccard: float | None = None
    fields: dict[str, float] = field(default_factory=dict)
    field_similarity: dict[str, float] = field(default_factory=dict)
    invalid_output: float = 0.0
    latency_s: float = 0.0
    prompt_tokens: float = 0.0
    evaluated_prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    model_share: float | None = None
    supplied_share: dict[str, float] = field(default_factory=dict)
    true_model_share: float | None = None
    true_supplied_share: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        rows = []
        for name, value in self.to_dict().items():
            if name == "n" or value is None or isinstance(value, dict):
                continue
            rows.append(f"{name:<19} {value:.3f}")
        rows += [f"supplied {source:<10} {value:.3f}" for source, value in self.supplied_share.items()]
        rows += [
            f"true supplied {source:<5} {value:.3f}" for source, value in self.true_supplied_share.items()
        ]
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
    supply: Supply = "pack",
    recorded: RecordedLookup | None = None,
) -> list[ReferenceTransition]:
    """One reference transition per recorded step.

    Invalid actions are skipped by default: the synthetic env answers them itself and never
    asks the model. ``history`` holds the ``history_len`` steps before, as the env sends it;
    each request carries ``domain``'s prompt, as the synthetic env's do, and what ``supply``
    lets the domain fix (:meth:`~dreamgym_env.domain.Domain.supplied_fields`): ``"none"`` reads
    nothing of the pack's world, only its grammar, prompt and state schema; ``"replay"`` adds
    the next state ``recorded`` finds for the step (a replay buffer's lookup). Trajectories recorded
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
                supplied = _supplied(pack, trajectory.task, step, structured, supply, recorded)
                request = ExperienceRequest(
                    prompt=pack.prompt,
                    state_schema=pack.state_json_schema if structured else None,
                    **supplied.request_fields(),
                    task=trajectory.task,
                    history=past[-history_len:] if history_len else [],
                    state=step.state,
                    action=step.action,
                )
                truth = Transition(next_state=step.next_state, reward=step.reward, terminated=step.done)
                out.append(ReferenceTransition(request, truth, supplied))
            past.append(step)
    return out


def _supplied(
    pack: Domain, task: Task, step: Step, structured: bool, supply: Supply, recorded: RecordedLookup | None
) -> SuppliedFields:
    """What the synthetic env fixes before asking for ``step``: nothing for an invalid action, only world lines for a text state."""
    parsed = pack.parse_action(step.action) if step.action_valid else None
    if parsed is None or isinstance(parsed, ActionError):
        return SuppliedFields()
    found = recorded(task, step.state, parsed.text) if supply == "replay" and recorded is not None else None
    supplied = pack.supplied_fields(task, step.state, parsed, supply=supply, recorded=found)
    return supplied if structured else SuppliedFields(world=supplied.world)


def action_type(domain: Domain, action: str) -> str:
    """The verb of ``action`` in ``domain``'s grammar (``search``, ``go``, ...); ``"invalid"`` if it has none."""
    parsed = domain.parse_action(action)
    return "invalid" if isinstance(parsed, ActionError) else parsed.verb


@dataclass(frozen=True)
class TransitionScore:
    """How the model's answer to one reference transition compares with the truth.

    ``true_text`` / ``predicted_text``: the next states as the agent would see them (abstract
    states rendered); ``predicted`` is ``None`` when the model gave no answer (``error`` says
    why). ``valid``: the answer is a state of the domain; the comparisons are ``False`` / 0 and
    ``fields`` 0 where it is not. ``rubric_agrees`` is ``None`` where no abstract state was
    predicted; ``rubric_scored`` says whether the domain's rubric (not the model) gave the reward,
    ``rubric_ended`` whether it also decided the episode end (``rubric_done_agrees``).
    ``kind_agrees`` and ``jaccard`` are ``None`` where the domain has nothing to compare.
    ``content`` / ``true_content`` (structured mode): the characters of the answer's next state
    (settled as the synthetic env settles it) / of the true one that differ from the state, by
    who wrote them (:func:`~dreamgym_env.domain.changed_content`; the truth's carried and given
    fields count as supplied); ``None`` where there is no such state.
    """

    reference: ReferenceTransition
    action_type: str
    true_text: str
    true_win: bool
    true_zero_reward: bool
    predicted: Transition | None = None
    error: str | None = None
    predicted_text: str | None = None
    valid: bool = False
    exact: bool = False
    similarity: float = 0.0
    reward_agrees: bool = False
    done_agrees: bool = False
    predicted_win: bool = False
    rubric_agrees: bool | None = None
    rubric_scored: bool = False
    rubric_done_agrees: bool | None = None
    rubric_ended: bool = False
    kind_agrees: bool | None = None
    jaccard: float | None = None
    fields: dict[str, float] = field(default_factory=dict)
    field_similarity: dict[str, float] = field(default_factory=dict)
    content: dict[FieldSource, int] | None = None
    true_content: dict[FieldSource, int] | None = None

    @property
    def accurate(self) -> bool:
        """Next state, reward and episode end all right."""
        return self.exact and self.reward_agrees and self.done_agrees


def _answers(
    model: ExperienceModel, batch: Sequence[ReferenceTransition]
) -> list[Transition | ExperienceModelError]:
    """The model's answers; where the batch fails, each request alone, a failure as its error."""
    requests = [t.request for t in batch]
    try:
        return list(model.predict_sync(requests))
    except ExperienceModelError:
        answers: list[Transition | ExperienceModelError] = []
        for request in requests:
            try:
                answers.append(model.predict_one(request))
            except ExperienceModelError as exc:
                answers.append(exc)
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


def _content(
    supplied: SuppliedFields, state: BaseModel | None, answered: BaseModel | None, settled: BaseModel | None
) -> dict[FieldSource, int] | None:
    """The characters of ``settled`` that differ from ``state``, by who wrote them; ``None`` without the states."""
    if state is None or answered is None or settled is None:
        return None
    return changed_content(state.model_dump(), settled.model_dump(), supplied.sources(answered, settled))


def _score(
    pack: Domain,
    reference: ReferenceTransition,
    answer: Transition | ExperienceModelError,
    reward_tolerance: float,
    supply: Supply,
) -> TransitionScore:
    views = _Views(pack, reference.request.state_schema is not None)
    truth = reference.truth
    true_abstract = views.abstract(truth.next_state)
    true_text = views.text(truth.next_state, true_abstract)
    true_actions = views.actions(true_text, true_abstract)
    state_abstract = views.abstract(reference.request.state)
    base: dict[str, Any] = {
        "reference": reference,
        "action_type": action_type(pack, reference.request.action),
        "true_text": true_text,
        "true_win": truth.reward >= 1.0 - reward_tolerance,
        "true_zero_reward": abs(truth.reward) <= reward_tolerance,
        # what of the true next state the pack would have written: its settling applies to it too
        "true_content": _content(
            reference.supplied,
            state_abstract,
            true_abstract,
            reference.supplied.settled(true_abstract) if true_abstract is not None else None,
        ),
    }
    predicted = answer if isinstance(answer, Transition) else None
    answered = views.abstract(predicted.next_state) if predicted is not None else None
    guess_abstract = answered
    action = pack.parse_action(reference.request.action)
    if (
        reference.supplied.settles
        and answered is not None
        and state_abstract is not None
        and not isinstance(action, ActionError)
    ):
        # what the synthetic env would show: the model's next state, settled by the domain
        guess_abstract = reference.supplied.settled(answered)
    if predicted is None or (views.structured and guess_abstract is None):
        zeros = dict.fromkeys(type(true_abstract).model_fields, 0.0) if true_abstract is not None else {}
        return TransitionScore(
            **base,
            predicted=predicted,
            error=str(answer) if predicted is None else None,
            predicted_text=predicted.next_state if predicted is not None else None,
            kind_agrees=False if true_abstract is not None and pack.state_kind_field else None,
            jaccard=0.0 if true_actions is not None else None,
            fields=zeros,
            field_similarity=dict(zeros),
        )
    guess_text = views.text(predicted.next_state, guess_abstract)
    truth_norm, guess_norm = normalize_state(true_text), normalize_state(guess_text)
    same_state = truth_norm == guess_norm
    rubric_agrees, rubric_scored, rubric_done_agrees, rubric_ended = None, False, None, False
    if guess_abstract is not None:
        rubric = (
            pack.rubric_reward(reference.request.task, guess_abstract, action)
            if supply == "pack" and not isinstance(action, ActionError)
            else None
        )
        rubric_scored = rubric is not None
        scored = rubric if rubric is not None else predicted.reward
        rubric_agrees = abs(scored - truth.reward) <= reward_tolerance
        rubric_ended = rubric is not None and pack.ends_when_won
        ends = (
            rubric >= 1.0 - reward_tolerance if rubric is not None and rubric_ended else predicted.terminated
        )
        rubric_done_agrees = ends == truth.terminated
    jaccard = None
    if true_actions is not None:
        guess_actions = views.actions(guess_text, guess_abstract) or set()
        union = true_actions | guess_actions
        jaccard = len(true_actions & guess_actions) / len(union) if union else 1.0
    kind_agrees = None
    fields: dict[str, float] = {}
    field_similarity: dict[str, float] = {}
    if true_abstract is not None and guess_abstract is not None:
        if pack.state_kind_field:
            kind_agrees = getattr(true_abstract, pack.state_kind_field, None) == getattr(
                guess_abstract, pack.state_kind_field, None
            )
        for name in type(true_abstract).model_fields:
            true_json, guess_json = _json(getattr(true_abstract, name)), _json(getattr(guess_abstract, name))
            fields[name] = float(true_json == guess_json)
            field_similarity[name] = 1.0 if true_json == guess_json else ratio(true_json, guess_json) / 100.0
    return TransitionScore(
        **base,
        predicted=predicted,
        predicted_text=guess_text,
        valid=True,
        exact=same_state,
        similarity=1.0 if same_state else ratio(truth_norm, guess_norm) / 100.0,
        reward_agrees=abs(predicted.reward - truth.reward) <= reward_tolerance,
        done_agrees=predicted.terminated == truth.terminated,
        predicted_win=predicted.reward >= 1.0 - reward_tolerance,
        rubric_agrees=rubric_agrees,
        rubric_scored=rubric_scored,
        rubric_done_agrees=rubric_done_agrees,
        rubric_ended=rubric_ended,
        kind_agrees=kind_agrees,
        jaccard=jaccard,
        fields=fields,
        field_similarity=field_similarity,
        content=_content(reference.supplied, state_abstract, answered, guess_abstract),
    )


def score_transitions(
    model: ExperienceModel,
    transitions: Sequence[ReferenceTransition],
    *,
    domain: str | Domain | None = None,
    batch_size: int = 64,
    reward_tolerance: float = DEFAULT_REWARD_TOLERANCE,
    supply: Supply = "pack",
    progress: Callable[[int], object] | None = None,
) -> list[TransitionScore]:
    """Ask ``model`` for every transition, in batches, and compare each answer with the truth.

    A reward agrees when it is within ``reward_tolerance`` of the true one; next states are
    compared as the text the agent would see (structured states rendered), after
    :func:`normalize_state`. ``domain`` (default: the first transition's task's, registered)
    gives the action types, the state kind, the admissible actions and the abstract fields.
    ``supply`` is the requests' (see :func:`reference_transitions`): with ``"pack"`` the domain
    settles a predicted state as the synthetic env would and its rubric scores it where it can;
    with ``"none"`` nothing of the pack's world code runs, and the model's state stands as it
    wrote it. ``progress`` is called with the size of each answered batch.
    """
    if not transitions:
        raise ConfigurationError("measuring fidelity needs at least one reference transition")
    if batch_size < 1:
        raise ConfigurationError(f"batch_size must be >= 1, got {batch_size}")
    pack = get_domain(domain if domain is not None else transitions[0].request.task.domain)
    scores: list[TransitionScore] = []
    for begin in range(0, len(transitions), batch_size):
        batch = transitions[begin : begin + batch_size]
        for reference, answer in zip(batch, _answers(model, batch), strict=True):
            scores.append(_score(pack, reference, answer, reward_tolerance, supply))
        if progress is not None:
            progress(len(batch))
    return scores


def _mean(values: Sequence[float], n: int | None = None) -> float:
    return sum(values) / (n if n is not None else len(values))


def _shares(contents: Iterable[dict[FieldSource, int] | None]) -> tuple[float | None, dict[str, float]]:
    """The model's share of the changed characters summed over ``contents``, and each supplying source's."""
    totals: dict[FieldSource, int] = dict.fromkeys(FIELD_SOURCES, 0)
    for content in contents:
        for source, size in (content or {}).items():
            totals[source] += size
    whole = sum(totals.values())
    if not whole:
        return None, {}
    return share_of_model(totals), {source: totals[source] / whole for source in SUPPLYING_SOURCES}


def summarize(scores: Sequence[TransitionScore]) -> FidelityReport:
    """The report over ``scores`` (any subset of one :func:`score_transitions` run)."""
    if not scores:
        raise ConfigurationError("summarize needs at least one scored transition")
    n = len(scores)
    valid = [s for s in scores if s.valid]
    answered = [s.predicted for s in scores if s.predicted is not None]
    predicted_wins = sum(s.predicted_win for s in valid)
    true_wins = sum(s.true_win for s in scores)
    both_wins = sum(s.predicted_win and s.true_win for s in valid)
    kinds = [float(s.kind_agrees) for s in scores if s.kind_agrees is not None]
    jaccards = [s.jaccard for s in scores if s.jaccard is not None]
    fields: dict[str, list[float]] = defaultdict(list)
    field_similarity: dict[str, list[float]] = defaultdict(list)
    for s in scores:
        for name, value in s.fields.items():
            fields[name].append(value)
        for name, value in s.field_similarity.items():
            field_similarity[name].append(value)
    model_share, supplied_share = _shares(s.content for s in scores)
    true_model_share, true_supplied_share = _shares(s.true_content for s in scores)
    return FidelityReport(
        n=n,
        exact_match=_mean([s.exact for s in scores]),
        similarity=_mean([s.similarity for s in scores]),
        reward_agreement=_mean([s.reward_agrees for s in scores]),
        done_agreement=_mean([s.done_agrees for s in scores]),
        accuracy=_mean([s.accurate for s in scores]),
        valid=len(valid) / n,
        reward_precision=both_wins / predicted_wins if predicted_wins else None,
        reward_recall=both_wins / true_wins if true_wins else None,
        always_zero_reward=_mean([s.true_zero_reward for s in scores]),
        always_zero_done=_mean([not s.reference.truth.terminated for s in scores]),
        rubric_reward_agreement=_mean([bool(s.rubric_agrees) for s in scores])
        if any(s.rubric_scored for s in scores)
        else None,
        rubric_done_agreement=_mean([bool(s.rubric_done_agrees) for s in scores])
        if any(s.rubric_ended for s in scores)
        else None,
        kind_agreement=_mean(kinds) if kinds else None,
        admissible_jaccard=_mean(jaccards) if jaccards else None,
        fields={name: _mean(values) for name, values in fields.items()},
        field_similarity={name: _mean(values) for name, values in field_similarity.items()},
        invalid_output=(n - len(answered)) / n,
        latency_s=_mean([t.usage.latency_s for t in answered]) if answered else 0.0,
        prompt_tokens=_mean([t.usage.prompt_tokens for t in answered]) if answered else 0.0,
        evaluated_prompt_tokens=_mean(
            [t.usage.prompt_tokens - t.usage.cached_prompt_tokens for t in answered]
        )
        if answered
        else 0.0,
        completion_tokens=_mean([t.usage.completion_tokens for t in answered]) if answered else 0.0,
        model_share=model_share,
        supplied_share=supplied_share,
        true_model_share=true_model_share,
        true_supplied_share=true_supplied_share,
    )


def fidelity_by_action(scores: Sequence[TransitionScore]) -> dict[str, FidelityReport]:
    """One report per action type, the most frequent first."""
    groups: dict[str, list[TransitionScore]] = defaultdict(list)
    for s in scores:
        groups[s.action_type].append(s)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return {name: summarize(group) for name, group in ordered}


class ScoringOptions(TypedDict, total=False):
    """The keywords of :func:`score_transitions` (defaults there) that :func:`measure_fidelity` passes on."""

    domain: str | Domain | None
    batch_size: int
    reward_tolerance: float
    supply: Supply


def measure_fidelity(
    model: ExperienceModel, transitions: Sequence[ReferenceTransition], **options: Unpack[ScoringOptions]
) -> FidelityReport:
    """Ask ``model`` for every transition, in batches, and compare with the truth.

    :func:`score_transitions` then :func:`summarize`: see those for how answers are compared.
    """
    return summarize(score_transitions(model, transitions, **options))
