"""Rollout consistency: whether an episode played in the synthetic env happens in the reference env too.

One-step fidelity (:mod:`.fidelity`) asks the model each transition from the true history. An
agent in the synthetic env acts on the model's own earlier answers instead, so one wrong page
can send the rest of the episode elsewhere. :func:`rollout_consistency` plays episodes of a
policy in the synthetic env, replays every action in the reference env on the same task, and
records per episode how many steps agreed (the same observation, reward and episode end) before
the first divergence, and whether both envs gave the episode the same outcome (won or not). A
win the reference env does not confirm is a reward an agent would learn to chase; the random
policy, far from any model's data, finds them where expert and noisy episodes do not.

Example:
    >>> reports = rollout_consistency(model, get_domain("webshop"), episodes=50)  # doctest: +SKIP
    >>> [(r.policy, r.outcome_agreement) for r in reports]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym

from dreamgym_env.agents import make_policy
from dreamgym_env.bench.fidelity import DEFAULT_HISTORY_LEN, StateMode, normalize_state
from dreamgym_env.domain import Domain, Policy
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import ConfigurationError, ModelOutputError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.types import Task

__all__ = ["CONSISTENCY_POLICIES", "ConsistencyReport", "EpisodeConsistency", "rollout_consistency"]

CONSISTENCY_POLICIES = ("expert", "noisy", "random")
"""The policies whose synthetic episodes are replayed by default."""


@dataclass(frozen=True)
class EpisodeConsistency:
    """One synthetic episode and its replay in the reference env.

    ``agreed``: the steps before the first divergence (``steps`` when there was none; 0 when the
    first observations already differ). ``*_won``: each env's outcome; the reference env's is
    its outcome at the step it ended, or at the synthetic episode's end if it had not ended.
    ``stopped``: the synthetic episode could not go on (a state the model wrote with no
    admissible action, or a step it kept answering unusably after its re-asks); it counts as
    not won and as diverged from there.
    """

    policy: str
    task_id: str
    steps: int
    agreed: int
    synthetic_won: bool
    reference_won: bool
    stopped: bool = False

    @property
    def outcome_agrees(self) -> bool:
        """Both envs won, or both did not."""
        return self.synthetic_won == self.reference_won


@dataclass(frozen=True)
class ConsistencyReport:
    """One policy's episodes: how far they agree, and whether their outcomes do."""

    policy: str
    episodes: int
    step_agreement: float
    """Mean share of an episode's steps before its first divergence."""
    full_agreement: float
    """Share of episodes that never diverged (and were not stopped)."""
    outcome_agreement: float
    """Share of episodes whose outcome (won or not) is the same in both envs."""
    mean_steps: float
    synthetic_success: float
    reference_success: float
    stopped: float = 0.0
    """Share of synthetic episodes that could not go on (see :class:`EpisodeConsistency`)."""
    unconfirmed_wins: float = 0.0
    """Share of episodes won in the synthetic env and not in the reference env (false rewards)."""

    @classmethod
    def of(cls, policy: str, episodes: Sequence[EpisodeConsistency]) -> ConsistencyReport:
        """The report over ``episodes`` (at least one)."""
        n = len(episodes)
        return cls(
            policy=policy,
            episodes=n,
            step_agreement=sum(e.agreed / max(e.steps, 1) for e in episodes) / n,
            full_agreement=sum(e.agreed == e.steps and not e.stopped for e in episodes) / n,
            outcome_agreement=sum(e.outcome_agrees for e in episodes) / n,
            mean_steps=sum(e.steps for e in episodes) / n,
            synthetic_success=sum(e.synthetic_won for e in episodes) / n,
            reference_success=sum(e.reference_won for e in episodes) / n,
            stopped=sum(e.stopped for e in episodes) / n,
            unconfirmed_wins=sum(e.synthetic_won and not e.reference_won for e in episodes) / n,
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return asdict(self)


def _won(info: dict[str, Any], reward: float, terminated: bool) -> bool:
    return bool(info.get("won", terminated and reward >= 1.0))


def play_and_replay(
    synthetic: gym.Env, reference: gym.Env, policy: Policy, task: Task, *, policy_name: str, seed: int
) -> EpisodeConsistency:
    """Play one episode of ``policy`` in ``synthetic`` on ``task`` and replay its actions in ``reference``."""
    reset = getattr(policy, "reset", None)
    if callable(reset):
        reset()
    observation, info = synthetic.reset(seed=seed, options={"task": task})
    reference_observation, _ = reference.reset(seed=seed, options={"task": task})
    diverged = normalize_state(observation) != normalize_state(reference_observation)
    steps = agreed = 0
    terminated = truncated = reference_ended = synthetic_won = reference_won = stopped = False
    while not (terminated or truncated):
        if info.get("admissible_actions") == []:  # the model wrote a state with nothing to do
            stopped = True
            break
        action = policy(observation, info)
        try:
            observation, reward, terminated, truncated, info = synthetic.step(action)
        except ModelOutputError:  # the env recorded nothing; the episode cannot go on
            stopped = True
            break
        steps += 1
        synthetic_won = _won(info, float(reward), terminated)
        same = False
        if not reference_ended:
            reference_observation, ref_reward, ref_terminated, ref_truncated, ref_info = reference.step(
                action
            )
            reference_won = _won(ref_info, float(ref_reward), ref_terminated)
            reference_ended = ref_terminated or ref_truncated
            same = (
                normalize_state(observation) == normalize_state(reference_observation)
                and float(reward) == float(ref_reward)
                and terminated == ref_terminated
            )
        diverged = diverged or not same
        agreed += not diverged
    if stopped:
        synthetic_won = False
    return EpisodeConsistency(policy_name, task.id, steps, agreed, synthetic_won, reference_won, stopped)


def rollout_consistency(
    model: ExperienceModel,
    domain: Domain,
    *,
    episodes: int = 50,
    policies: Sequence[str] = CONSISTENCY_POLICIES,
    state_mode: StateMode = "structured",
    history_len: int = DEFAULT_HISTORY_LEN,
    seed: int = 0,
    progress: Callable[[int], object] | None = None,
) -> list[ConsistencyReport]:
    """``episodes`` synthetic episodes of each of ``policies`` on test tasks, replayed in the reference env.

    Episode ``i`` of every policy plays test task ``i`` (cycling through the split), so the
    policies' reports compare like with like. ``progress`` is called with 1 after each episode.
    """
    if episodes < 1:
        raise ConfigurationError(f"episodes must be >= 1, got {episodes}")
    tasks = domain.tasks("test")
    synthetic = DreamEnv(
        domain,
        model,
        split="test",
        max_steps=domain.max_episode_steps,
        history_len=history_len,
        state_mode=state_mode,
        on_model_error="raise",  # an unanswered step is counted as stopped, not as a truncation
    )
    reference = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    reports = []
    try:
        for index, name in enumerate(policies):
            policy = make_policy(name, domain, seed=seed + index)
            played = []
            for episode in range(episodes):
                task = tasks[episode % len(tasks)]
                played.append(
                    play_and_replay(synthetic, reference, policy, task, policy_name=name, seed=seed + episode)
                )
                if progress is not None:
                    progress(1)
            reports.append(ConsistencyReport.of(name, played))
    finally:
        synthetic.close()
        reference.close()
    return reports
