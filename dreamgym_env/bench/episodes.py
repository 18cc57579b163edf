"""Benchmark runs: an agent plays episodes of an env id; the results are aggregated per env.

:func:`run_bench` plays ``episodes`` episodes of one registered id (a synthetic ``DreamGym/X-v0``
or a reference ``DreamGym/X-Ref-v0``) on ``num_envs`` envs at once: every step, the agent
decides for all running episodes in one batch (an LLM agent sends its requests together), and
on a synthetic id the experience-model requests of that step go to the model as one batch too
(as :class:`~dreamgym_env.envs.vector.DreamVectorEnv` sends them). Tasks come from the id's
``split`` in a ``seed``-shuffled order, episode ``i`` with seed ``seed + i``, so the same seed
gives a synthetic id and its reference id the same tasks: :func:`sim_to_real_gaps` compares them.

``max_steps`` caps every episode below the id's own step limit: an episode cut there is
truncated, not won. A synthetic step whose experience model fails after its retries (a
:class:`~dreamgym_env.errors.ModelOutputError` or a
:class:`~dreamgym_env.errors.ModelTransportError`) ends that episode as an *errored* failure,
recorded with the error's type and message, and the run goes on with the next episodes; misuse
(:class:`~dreamgym_env.errors.ConfigurationError`, unknown names) is raised.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, SupportsFloat, cast

import gymnasium as gym
import numpy as np

from dreamgym_env.agents.agent import Agent, Turn
from dreamgym_env.agents.rollouts import progress_bar
from dreamgym_env.bench.stats import DEFAULT_CONFIDENCE, wilson_interval
from dreamgym_env.envs.models import experience_model_for
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain, reference_id
from dreamgym_env.envs.stepping import step_many
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import (
    ConfigurationError,
    ExperienceModelError,
    ModelOutputError,
    ModelTransportError,
    UnknownNameError,
    excerpt,
)
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.types import Task

SYNTHETIC_ENTRY_POINT = "dreamgym_env.envs.synthetic:DreamEnv"
StepResult = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
StepOutcome = StepResult | ModelOutputError | ModelTransportError
EPISODE_ERRORS = (ModelOutputError, ModelTransportError)
"""Experience-model failures that end one episode as errored instead of the whole run."""
ERROR_EXCERPT_CHARS = 300
"""An errored episode keeps this much of its error's message."""


@dataclass(frozen=True)
class EpisodeRecord:
    """One benchmark episode.

    ``reward`` is the episode's return; ``invalid_actions`` counts the steps the env rejected,
    ``invalid_outputs`` the agent's answers that held no usable action; ``agent_tokens`` and
    ``model_tokens`` are the tokens (prompt and completion) of the agent and of the
    experience model. An *errored* episode ended when its experience model failed (never won);
    ``error_type`` and ``error`` (an excerpt of the message) say how, and ``steps`` counts the
    steps before the failed one.
    """

    index: int
    task_id: str
    seed: int
    won: bool
    reward: float
    steps: int
    truncated: bool
    invalid_actions: int
    invalid_outputs: int
    agent_tokens: int
    model_tokens: int
    errored: bool = False
    error_type: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class BenchResult:
    """An agent's results on one env id: success with its Wilson interval, and the means.

    ``max_steps`` is the cap the run was given (``None``: none), ``step_limit`` the limit each
    episode actually had (the smaller of the cap and the id's own limit). ``errored`` counts the
    episodes whose experience model failed (they count as failures in the success rate);
    ``errors`` counts them by error type.
    """

    env_id: str
    agent: str
    experience_model: str | None
    split: str
    seed: int
    episodes: int
    successes: int
    success_rate: float
    ci_low: float
    ci_high: float
    confidence: float
    mean_reward: float
    mean_steps: float
    invalid_action_rate: float
    invalid_output_rate: float
    agent_tokens: int
    model_tokens: int
    seconds: float
    max_steps: int | None = None
    step_limit: int | None = None
    errored: int = 0
    errored_rate: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    records: list[EpisodeRecord] = field(default_factory=list)

    @classmethod
    def from_records(
        cls,
        records: Sequence[EpisodeRecord],
        *,
        env_id: str,
        agent: str,
        experience_model: str | None,
        split: str,
        seed: int,
        seconds: float,
        confidence: float = DEFAULT_CONFIDENCE,
        max_steps: int | None = None,
        step_limit: int | None = None,
    ) -> BenchResult:
        """Aggregate episodes: rates of invalid actions and outputs are per step, over all episodes."""
        n = len(records)
        errored = sum(r.errored for r in records)
        successes = sum(r.won for r in records)
        steps = sum(r.steps for r in records)
        low, high = wilson_interval(successes, n, confidence)
        return cls(
            env_id=env_id,
            agent=agent,
            experience_model=experience_model,
            split=split,
            seed=seed,
            episodes=n,
            successes=successes,
            success_rate=successes / n if n else 0.0,
            ci_low=low,
            ci_high=high,
            confidence=confidence,
            mean_reward=float(np.mean([r.reward for r in records])) if n else 0.0,
            mean_steps=steps / n if n else 0.0,
            invalid_action_rate=sum(r.invalid_actions for r in records) / steps if steps else 0.0,
            invalid_output_rate=sum(r.invalid_outputs for r in records) / steps if steps else 0.0,
            agent_tokens=sum(r.agent_tokens for r in records),
            model_tokens=sum(r.model_tokens for r in records),
            seconds=round(seconds, 3),
            max_steps=max_steps,
            step_limit=step_limit,
            errored=errored,
            errored_rate=errored / n if n else 0.0,
            errors=dict(Counter(r.error_type for r in records if r.error_type)),
            records=sorted(records, key=lambda r: r.index),
        )

    def to_dict(self, *, episodes: bool = True) -> dict[str, Any]:
        """A JSON-ready dict (with the per-episode records unless ``episodes`` is False)."""
        data = asdict(self)
        if not episodes:
            data.pop("records")
        return data


@dataclass(frozen=True)
class SimToRealGap:
    """One agent's success on a synthetic id minus its success on the reference id."""

    agent: str
    synthetic_id: str
    reference_id: str
    synthetic_success: float
    reference_success: float

    @property
    def gap(self) -> float:
        return self.synthetic_success - self.reference_success

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "gap": self.gap}


def env_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """The registered spec of ``env_id``; an unknown id suggests the nearest DreamGym id."""
    if env_id not in gym.registry:
        raise UnknownNameError("env id", env_id, [i for i in gym.registry if i.startswith("DreamGym/")])
    return gym.spec(env_id)


def is_synthetic(env_id: str) -> bool:
    """Whether ``env_id`` is a synthetic DreamGym id (its steps come from an experience model)."""
    return env_spec(env_id).entry_point == SYNTHETIC_ENTRY_POINT


def paired_reference_id(env_id: str) -> str | None:
    """The reference id of a synthetic id's domain (``None`` for other ids)."""
    spec = env_spec(env_id)
    domain = spec.kwargs.get("domain")
    if not is_synthetic(env_id) or not isinstance(domain, str):
        return None
    ref = reference_id(get_domain(domain))
    return ref if ref in gym.registry else None


def sim_to_real_gaps(results: Sequence[BenchResult]) -> list[SimToRealGap]:
    """For each agent run on both a synthetic id and its reference id: the two successes."""
    by_key = {(r.agent, r.env_id): r for r in results}
    gaps = []
    for result in results:
        ref = paired_reference_id(result.env_id)
        if ref is not None and (result.agent, ref) in by_key:
            gaps.append(
                SimToRealGap(
                    result.agent,
                    result.env_id,
                    ref,
                    result.success_rate,
                    by_key[result.agent, ref].success_rate,
                )
            )
    return gaps


@dataclass
class _Lane:
    index: int
    seed: int
    task: Task | None
    observation: str
    info: dict[str, Any]
    history: list[tuple[str, str]] = field(default_factory=list)
    reward: float = 0.0
    invalid_actions: int = 0
    invalid_outputs: int = 0
    agent_tokens: int = 0
    model_tokens: int = 0


def _make_envs(
    env_id: str, count: int, split: str, model: ExperienceModel | None, env_kwargs: Mapping[str, Any]
) -> list[gym.Env]:
    spec = env_spec(env_id)
    kwargs: dict[str, Any] = {"split": split, **env_kwargs}
    if model is not None:
        # The lanes step the DreamEnv itself (batched model calls), so its own step limit applies.
        kwargs = {"experience_model": model, "max_steps": spec.max_episode_steps, **kwargs}
        if isinstance(model, OracleExperienceModel) and not model.restorable:
            # The oracle replays an episode from its start where a state cannot be restored.
            kwargs.setdefault("history_len", spec.max_episode_steps or 1)
    return [gym.make(env_id, **kwargs) for _ in range(count)]


def _step_lanes(envs: Sequence[gym.Env], actions: Mapping[int, str]) -> dict[int, StepOutcome]:
    """Step each lane; on synthetic envs the model requests of all lanes go as one batch.

    A lane whose experience model fails (:data:`EPISODE_ERRORS`) gets the error instead of a
    step result, and only that lane (:func:`~dreamgym_env.envs.stepping.step_many`).
    """
    dreams = {i: envs[i].unwrapped for i in actions}
    if not all(isinstance(env, DreamEnv) for env in dreams.values()):
        return {i: _step_one(envs[i], action) for i, action in actions.items()}
    lanes = list(actions)
    stepped = step_many(
        [cast(DreamEnv, dreams[i]) for i in lanes], [actions[i] for i in lanes], isolate=EPISODE_ERRORS
    )
    return {i: cast(StepOutcome, outcome) for i, outcome in zip(lanes, stepped, strict=True)}


def _step_one(env: gym.Env, action: str) -> StepOutcome:
    try:
        return env.step(action)
    except EPISODE_ERRORS as exc:
        return exc


def _usage_tokens(info: Mapping[str, Any]) -> int:
    usage = info.get("usage")
    if not isinstance(usage, Mapping):
        return 0
    return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)


def run_bench(
    agent: Agent,
    env_id: str,
    episodes: int,
    *,
    seed: int = 0,
    num_envs: int = 1,
    split: str = "test",
    experience_model: ExperienceModel | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    progress: bool = True,
    confidence: float = DEFAULT_CONFIDENCE,
    max_steps: int | None = None,
) -> BenchResult:
    """Play ``episodes`` episodes of ``env_id`` with ``agent`` and aggregate them.

    Arguments:
        agent: decides for all running episodes at once (see :class:`~dreamgym_env.agents.Agent`).
        env_id: a registered id.
        episodes: how many episodes.
        seed: seed of the task order and of the episodes (episode ``i`` gets ``seed + i``).
        num_envs: episodes run at once (the agent's and the model's batch size).
        split: the task split (``"test"`` or ``"train"``).
        experience_model: on a synthetic id, the model every lane shares (the caller closes
            it); ``None`` builds the default one (``default_experience_model``) and closes it.
            Refused on a reference id.
        env_kwargs: more keyword arguments of ``gym.make``.
        progress: show a progress bar on stderr.
        confidence: the level of the success interval.
        max_steps: cap each episode at this many steps (below the id's own limit; an episode
            cut there is truncated, not won); ``None``: the id's own limit only.
    """
    if episodes < 1:
        raise ConfigurationError(f"episodes must be >= 1, got {episodes}")
    if num_envs < 1:
        raise ConfigurationError(f"num_envs must be >= 1, got {num_envs}")
    if max_steps is not None and max_steps < 1:
        raise ConfigurationError(f"max_steps must be >= 1 or None, got {max_steps}")
    own_limit = env_spec(env_id).max_episode_steps
    limits = [n for n in (max_steps, own_limit) if n is not None]
    step_limit = min(limits) if limits else None
    synthetic = is_synthetic(env_id)
    if experience_model is not None and not synthetic:
        raise ConfigurationError(f"{env_id} is a reference env: it takes no experience model")
    model = experience_model
    if synthetic and model is None:
        model = experience_model_for(get_domain(env_spec(env_id).kwargs["domain"]))
    envs = _make_envs(env_id, min(num_envs, episodes), split, model, env_kwargs or {})
    try:
        pool = list(getattr(envs[0].unwrapped, "tasks", None) or [])
        order = np.random.default_rng(seed).permutation(len(pool)) if pool else np.zeros(0, dtype=int)
        started = time.perf_counter()
        records = _play(agent, envs, episodes, seed, pool, order, env_id, progress, max_steps)
        seconds = time.perf_counter() - started
    finally:
        for env in envs:
            env.close()
        if model is not None and experience_model is None:
            model.close()
    return BenchResult.from_records(
        records,
        env_id=env_id,
        agent=agent.name,
        experience_model=model.model_id if model is not None else None,
        split=split,
        seed=seed,
        seconds=seconds,
        confidence=confidence,
        max_steps=max_steps,
        step_limit=step_limit,
    )


def _play(
    agent: Agent,
    envs: Sequence[gym.Env],
    episodes: int,
    seed: int,
    pool: Sequence[Task],
    order: np.ndarray,
    env_id: str,
    progress: bool,
    max_steps: int | None,
) -> list[EpisodeRecord]:
    records: list[EpisodeRecord] = []
    lanes: dict[int, _Lane] = {}
    upcoming = iter(range(episodes))

    def start(lane: int) -> None:
        index = next(upcoming, None)
        if index is None:
            lanes.pop(lane, None)
            return
        task = pool[int(order[index % len(pool)])] if pool else None
        observation, info = envs[lane].reset(
            seed=seed + index, options={"task": task} if task is not None else None
        )
        agent.start_episode(lane, seed + index)
        episode_task = info.get("task", task)
        lanes[lane] = _Lane(
            index, seed + index, episode_task if isinstance(episode_task, Task) else None, observation, info
        )

    with progress_bar(episodes, f"{agent.name} on {env_id}", unit="ep", enabled=progress) as bar:

        def finish(lane: int, record: EpisodeRecord) -> None:
            records.append(record)
            wins = sum(r.won for r in records)
            bar.update(1)
            bar.set_postfix(success=f"{wins / len(records):.2f}", refresh=False)
            start(lane)

        for lane in range(len(envs)):
            start(lane)
        while lanes:
            running = sorted(lanes)
            turns = [
                Turn(i, lanes[i].observation, lanes[i].info, lanes[i].task, tuple(lanes[i].history))
                for i in running
            ]
            decisions = agent.act(turns)
            if len(decisions) != len(turns):
                raise ConfigurationError(f"{agent!r} gave {len(decisions)} decisions for {len(turns)} turns")
            results = _step_lanes(envs, {i: d.action for i, d in zip(running, decisions, strict=True)})
            for i, decision in zip(running, decisions, strict=True):
                state = lanes[i]
                state.agent_tokens += decision.prompt_tokens + decision.completion_tokens
                outcome = results[i]
                if isinstance(outcome, EPISODE_ERRORS):  # the failed step is not counted
                    finish(i, _record(state, won=False, truncated=False, error=outcome))
                    continue
                observation, reward, terminated, truncated, info = outcome
                state.invalid_outputs += not decision.output_valid
                state.history.append((decision.action, observation))
                state.observation, state.info = observation, info
                state.reward += float(reward)
                state.invalid_actions += not info.get("action_valid", True)
                state.model_tokens += _usage_tokens(info)
                capped = max_steps is not None and len(state.history) >= max_steps
                if terminated or truncated or capped:
                    won = bool(terminated) and bool(info.get("won", float(reward) >= 1.0))
                    finish(i, _record(state, won=won, truncated=not terminated))
    return records


def _record(
    state: _Lane, *, won: bool, truncated: bool, error: ExperienceModelError | None = None
) -> EpisodeRecord:
    task_id = state.task.id if state.task is not None else str(state.info.get("task_id", ""))
    return EpisodeRecord(
        index=state.index,
        task_id=task_id,
        seed=state.seed,
        won=won,
        reward=state.reward,
        steps=len(state.history),
        truncated=truncated,
        invalid_actions=state.invalid_actions,
        invalid_outputs=state.invalid_outputs,
        agent_tokens=state.agent_tokens,
        model_tokens=state.model_tokens,
        errored=error is not None,
        error_type=type(error).__name__ if error is not None else None,
        error=excerpt(str(error), ERROR_EXCERPT_CHARS) if error is not None else None,
    )
