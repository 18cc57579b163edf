"""Group rollouts for GRPO-style training: N tasks x G rollouts each, group-normalised advantages.

GRPO needs several rollouts of the same task to compare: the advantage of a rollout is its
return minus the mean return of its group (divided by the group's standard deviation). The same
group statistics drive the DreamGym curriculum (reward variance ``V = mean((r_i - mean r)^2)``).
:func:`collect_groups` runs the rollouts on any text envs; synthetic envs that share an
experience model are stepped together, so that one step of all rollouts is one concurrent batch
of model calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import gymnasium as gym
import numpy as np

from dreamgym_env.envs.stepping import step_many
from dreamgym_env.envs.synthetic import DreamEnv, StepResult
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

BatchPolicy = Callable[[Sequence[str], Sequence[dict[str, Any]]], Sequence[str]]
"""A policy over a batch: ``(observations, infos) -> actions``, one action per observation."""
ADVANTAGE_EPS = 1e-6


@dataclass
class GroupEpisode:
    """One rollout: the observations the actions were chosen at, the actions and their rewards."""

    task: Task
    group: int
    observations: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    won: bool = False
    truncated: bool = False
    advantage: float = 0.0

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards))


def group_advantages(
    returns: Sequence[float] | np.ndarray, group_size: int, *, scale: bool = True
) -> np.ndarray:
    """GRPO advantages: each return minus its group's mean, divided by the group's std when ``scale``.

    ``returns`` holds consecutive groups of ``group_size``. A group whose returns are all equal
    gets advantages 0 (nothing to learn from it).
    """
    r = np.asarray(returns, dtype=np.float64)
    if group_size < 1 or r.size % group_size:
        raise ConfigurationError(f"group_size {group_size} must divide the number of returns {r.size}")
    grouped = r.reshape(-1, group_size)
    centered = grouped - grouped.mean(axis=1, keepdims=True)
    if scale:
        centered = centered / (grouped.std(axis=1, keepdims=True) + ADVANTAGE_EPS)
    return centered.reshape(-1)


def reward_variance(returns: Sequence[float] | np.ndarray, group_size: int) -> np.ndarray:
    """Per group ``V = mean((r_i - mean r)^2)``: highest for a 50/50 split of wins and losses."""
    r = np.asarray(returns, dtype=np.float64)
    if group_size < 1 or r.size % group_size:
        raise ConfigurationError(f"group_size {group_size} must divide the number of returns {r.size}")
    return r.reshape(-1, group_size).var(axis=1)


def per_env_policy(policy: Callable[[str, dict[str, Any]], str]) -> BatchPolicy:
    """Turn a text policy ``(observation, info) -> action`` into a :data:`BatchPolicy`."""
    return lambda observations, infos: [policy(o, i) for o, i in zip(observations, infos, strict=True)]


def step_envs(envs: Sequence[gym.Env], actions: Sequence[Any]) -> list[StepResult]:
    """Step each env with its action; unwrapped :class:`DreamEnv` s go together (:func:`~dreamgym_env.envs.stepping.step_many`: one batch a model).

    Other envs (reference envs, wrapped envs) are stepped one after another.
    """
    results: list[StepResult | None] = [None] * len(envs)
    dreams = [i for i, env in enumerate(envs) if isinstance(env, DreamEnv)]
    for i, (env, action) in enumerate(zip(envs, actions, strict=True)):
        if i not in dreams:
            observation, reward, terminated, truncated, info = env.step(action)
            results[i] = (observation, float(reward), bool(terminated), bool(truncated), info)
    stepped = step_many([cast(DreamEnv, envs[i]) for i in dreams], [actions[i] for i in dreams])
    for i, result in zip(dreams, stepped, strict=True):
        results[i] = cast(StepResult, result)
    return [r for r in results if r is not None]


def _task_pool(env: gym.Env) -> Sequence[Task]:
    tasks = getattr(env.unwrapped, "tasks", None)
    if not tasks:
        raise ConfigurationError("pass tasks=...: the env does not list its tasks (env.unwrapped.tasks)")
    return tasks


def collect_groups(
    envs: DreamVectorEnv | Sequence[gym.Env],
    policy: BatchPolicy,
    *,
    group_size: int,
    num_tasks: int | None = None,
    tasks: Sequence[Task] | None = None,
    seed: int | None = None,
    max_steps: int | None = None,
    scale: bool = True,
) -> list[GroupEpisode]:
    """Run ``group_size`` rollouts of each task; return the episodes with GRPO advantages.

    Arguments:
        envs: a :class:`DreamVectorEnv` (its sub-envs are used directly, without autoreset) or
            a list of envs (each rollout gets one; with fewer envs than rollouts, the rollouts
            run in waves of ``len(envs)``).
        policy: chooses the actions of all running rollouts at once; each info carries
            ``rollout``, the index of its rollout in the returned list (to keep per-rollout state).
        group_size: G, rollouts per task.
        num_tasks: N, tasks drawn at random (with ``seed``) from the first env's ``tasks``;
            ignored when ``tasks`` is given.
        tasks: the tasks to run, in order.
        seed: seeds the task draw and each rollout's reset.
        max_steps: a cap on each rollout's steps on top of the envs' own limits.
        scale: divide by the group's standard deviation (GRPO); ``False`` only centres.

    Returns the ``N * G`` episodes, the G rollouts of a task consecutive (``group`` = task index),
    each with its ``advantage`` (of the episode's total reward).
    """
    pool: list[gym.Env] = list(envs.envs) if isinstance(envs, DreamVectorEnv) else list(envs)
    if not pool:
        raise ConfigurationError("collect_groups needs at least one env")
    if group_size < 1:
        raise ConfigurationError(f"group_size must be >= 1, got {group_size}")
    if tasks is None:
        if num_tasks is None or num_tasks < 1:
            raise ConfigurationError("pass tasks=... or num_tasks >= 1")
        candidates = _task_pool(pool[0])
        rng = np.random.default_rng(seed)
        tasks = [
            candidates[int(i)]
            for i in rng.choice(len(candidates), size=num_tasks, replace=num_tasks > len(candidates))
        ]
    episodes = [GroupEpisode(task=task, group=g) for g, task in enumerate(tasks) for _ in range(group_size)]
    for start in range(0, len(episodes), len(pool)):
        wave = episodes[start : start + len(pool)]
        _run_wave(
            pool[: len(wave)],
            wave,
            policy,
            first=start,
            seed=None if seed is None else seed + start,
            max_steps=max_steps,
        )
    advantages = group_advantages([e.total_reward for e in episodes], group_size, scale=scale)
    for episode, advantage in zip(episodes, advantages, strict=True):
        episode.advantage = float(advantage)
    return episodes


def _run_wave(
    envs: Sequence[gym.Env],
    episodes: Sequence[GroupEpisode],
    policy: BatchPolicy,
    *,
    first: int,
    seed: int | None,
    max_steps: int | None,
) -> None:
    observations: list[str] = []
    infos: list[dict[str, Any]] = []
    for i, (env, episode) in enumerate(zip(envs, episodes, strict=True)):
        observation, info = env.reset(seed=None if seed is None else seed + i, options={"task": episode.task})
        observations.append(observation)
        infos.append({**info, "rollout": first + i})
    active = list(range(len(envs)))
    while active:
        actions = list(policy([observations[i] for i in active], [infos[i] for i in active]))
        if len(actions) != len(active):
            raise ConfigurationError(
                f"the policy returned {len(actions)} actions for {len(active)} observations"
            )
        results = step_envs([envs[i] for i in active], actions)
        still = []
        for i, action, (observation, reward, terminated, truncated, info) in zip(
            active, actions, results, strict=True
        ):
            episode = episodes[i]
            episode.observations.append(observations[i])
            episode.actions.append(action)
            episode.rewards.append(float(reward))
            observations[i], infos[i] = observation, {**info, "rollout": first + i}
            capped = max_steps is not None and len(episode.actions) >= max_steps
            if terminated or truncated or capped:
                episode.won = bool(info.get("won", False))
                episode.truncated = bool(truncated or (capped and not terminated))
            else:
                still.append(i)
        active = still
