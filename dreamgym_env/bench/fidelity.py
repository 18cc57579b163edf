"""Fidelity: how faithfully an experience model predicts what a reference env really does.

Build reference transitions from real trajectories (:func:`reference_transitions`), ask any
:class:`~dreamgym_env.experience.base.ExperienceModel` for them, and compare
(:func:`measure_fidelity`): exact next-state match, normalised similarity, reward and episode-end
agreement, and accuracy (all three right at once). The paper bounds the real-vs-synthetic gap
by exactly these reward and transition errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from rapidfuzz.fuzz import ratio

from dreamgym_env.envs.domain import Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.types import ExperienceRequest, Step, Trajectory, Transition

DEFAULT_HISTORY_LEN = 4
"""As the synthetic env's default: the model sees this many past steps."""
DEFAULT_REWARD_TOLERANCE = 0.1


@dataclass(frozen=True)
class ReferenceTransition:
    """A request as the synthetic env would send it, and what the reference env really did."""

    request: ExperienceRequest
    truth: Transition


@dataclass(frozen=True)
class FidelityReport:
    """Shares over ``n`` transitions (similarity: the mean normalised rapidfuzz ratio, 0-1)."""

    n: int
    exact_match: float
    similarity: float
    reward_agreement: float
    done_agreement: float
    accuracy: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    def __str__(self) -> str:
        rows = [f"{name:<17} {value:.3f}" for name, value in self.to_dict().items() if name != "n"]
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
    each request carries ``domain``'s prompt, as the synthetic env's do.
    """
    prompt = get_domain(domain).prompt
    if history_len < 0:
        raise ConfigurationError(f"history_len must be >= 0, got {history_len}")
    out: list[ReferenceTransition] = []
    for trajectory in trajectories:
        past: list[Step] = []
        for step in trajectory.steps:
            if step.action_valid or include_invalid:
                request = ExperienceRequest(
                    prompt=prompt,
                    task=trajectory.task,
                    history=past[-history_len:] if history_len else [],
                    state=step.state,
                    action=step.action,
                )
                truth = Transition(next_state=step.next_state, reward=step.reward, terminated=step.done)
                out.append(ReferenceTransition(request, truth))
            past.append(step)
    return out


def measure_fidelity(
    model: ExperienceModel,
    transitions: Sequence[ReferenceTransition],
    *,
    batch_size: int = 64,
    reward_tolerance: float = DEFAULT_REWARD_TOLERANCE,
) -> FidelityReport:
    """Ask ``model`` for every transition, in batches, and compare with the truth.

    A reward agrees when it is within ``reward_tolerance`` of the true one; next states are
    compared after :func:`normalize_state`.
    """
    if not transitions:
        raise ConfigurationError("measure_fidelity needs at least one reference transition")
    if batch_size < 1:
        raise ConfigurationError(f"batch_size must be >= 1, got {batch_size}")
    exact = similar = rewards = dones = accurate = 0.0
    for begin in range(0, len(transitions), batch_size):
        batch = transitions[begin : begin + batch_size]
        predictions = model.predict_sync([t.request for t in batch])
        for reference, predicted in zip(batch, predictions, strict=True):
            truth, guess = normalize_state(reference.truth.next_state), normalize_state(predicted.next_state)
            same_state = truth == guess
            same_reward = abs(predicted.reward - reference.truth.reward) <= reward_tolerance
            same_done = predicted.terminated == reference.truth.terminated
            exact += same_state
            similar += 1.0 if same_state else ratio(truth, guess) / 100.0
            rewards += same_reward
            dones += same_done
            accurate += same_state and same_reward and same_done
    n = len(transitions)
    return FidelityReport(n, exact / n, similar / n, rewards / n, dones / n, accurate / n)
