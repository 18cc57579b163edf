"""Offline trajectories: collect them from any text env with a policy, write and read JSONL.

One JSON line per :class:`~dreamgym_env.types.Trajectory` (format: docs/data-format.md).
Collection is generic across domains: any ``gymnasium.Env[str, str]`` and any policy
``(observation, info) -> action``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from pydantic import ValidationError
from tqdm.auto import tqdm

from dreamgym_env.envs.domain import Policy
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.types import Step, Task, Trajectory

PathLike = str | Path


# -- JSONL I/O ---------------------------------------------------------------------------------
def write_trajectories(path: PathLike, trajectories: Iterable[Trajectory], *, append: bool = False) -> int:
    """Write one JSON line per trajectory; returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("a" if append else "w", encoding="utf-8") as handle:
        for trajectory in trajectories:
            handle.write(trajectory.model_dump_json() + "\n")
            count += 1
    return count


def iter_trajectories(path: PathLike) -> Iterator[Trajectory]:
    """Read trajectories lazily; a bad line raises :class:`DataError` naming the file and line."""
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read offline trajectories from {path}: {exc}") from exc
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield Trajectory.model_validate_json(line)
            except ValidationError as exc:
                raise DataError(f"{path}:{number}: not a trajectory: {exc.errors()[0]['msg']}") from exc


def read_trajectories(path: PathLike) -> list[Trajectory]:
    """Read every trajectory of a JSONL file."""
    return list(iter_trajectories(path))


# -- collection --------------------------------------------------------------------------------
def run_episode(
    env: gym.Env, policy: Policy, *, task: Task | None = None, seed: int | None = None, policy_name: str = ""
) -> Trajectory:
    """Play one episode of ``env`` with ``policy`` and record it.

    The episode ends when the env terminates or truncates (wrap the env in ``TimeLimit`` or
    give it a step limit). ``metadata`` records ``won``, ``score`` (where the env reports one),
    ``truncated``, ``steps`` and ``seed``.
    """
    reset = getattr(policy, "reset", None)
    if callable(reset):
        reset()
    observation, info = env.reset(seed=seed, options={"task": task} if task is not None else None)
    episode_task = info.get("task", task)
    if not isinstance(episode_task, Task):
        raise ConfigurationError("the env must report info['task'] (a Task) to record trajectories")
    steps: list[Step] = []
    state, terminated, truncated, won = observation, False, False, False
    while not (terminated or truncated):
        action = policy(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        valid = bool(info.get("action_valid", True))
        steps.append(
            Step(
                state=state,
                action=action,
                next_state=observation,
                reward=float(reward),
                done=bool(terminated),
                action_valid=valid,
                reasoning=str(info.get("reasoning", "")),
            )
        )
        won = bool(info.get("won", terminated and float(reward) >= 1.0))
        if valid:  # after an invalid action the page itself is unchanged
            state = observation
    metadata: dict[str, Any] = {"won": won, "truncated": bool(truncated), "steps": len(steps), "seed": seed}
    if "score" in info:
        metadata["score"] = float(info["score"])
    source = info.get("source", "real")
    return Trajectory(
        task=episode_task,
        steps=steps,
        source=source if source in ("offline", "real", "synthetic") else "real",
        policy=policy_name,
        metadata=metadata,
    )


def iter_episodes(
    env: gym.Env,
    policy: Policy,
    episodes: int,
    *,
    tasks: Sequence[Task] | None = None,
    seed: int = 0,
    policy_name: str = "",
    progress: bool = True,
) -> Iterator[Trajectory]:
    """Play ``episodes`` episodes, yielding each trajectory as it ends (with a progress bar).

    Tasks: ``tasks`` if given, else the env's own ``tasks`` (``env.unwrapped.tasks``) where it
    has them, else whatever the env draws. They are visited in a ``seed``-shuffled order, each
    once before any repeats. Episode ``i`` resets the env with seed ``seed + i``.
    """
    if episodes < 0:
        raise ConfigurationError(f"episodes must be >= 0, got {episodes}")
    pool = list(tasks) if tasks is not None else list(getattr(env.unwrapped, "tasks", None) or [])
    order = np.random.default_rng(seed).permutation(len(pool)) if pool else np.zeros(0, dtype=int)
    wins = 0
    with tqdm(
        total=episodes, desc=f"collect {policy_name or 'policy'}", unit="ep", disable=not progress
    ) as bar:
        for i in range(episodes):
            task = pool[int(order[i % len(pool)])] if pool else None
            trajectory = run_episode(env, policy, task=task, seed=seed + i, policy_name=policy_name)
            wins += trajectory.won
            bar.update(1)
            bar.set_postfix(success=f"{wins / (i + 1):.2f}")
            yield trajectory


def collect_trajectories(
    env: gym.Env,
    policy: Policy,
    episodes: int,
    *,
    tasks: Sequence[Task] | None = None,
    seed: int = 0,
    policy_name: str = "",
    progress: bool = True,
) -> list[Trajectory]:
    """Play ``episodes`` episodes and return their trajectories (see :func:`iter_episodes`)."""
    return list(
        iter_episodes(
            env, policy, episodes, tasks=tasks, seed=seed, policy_name=policy_name, progress=progress
        )
    )


@dataclass(frozen=True)
class CollectSummary:
    """What :func:`collect` did."""

    domain: str
    policy: str
    split: str
    episodes: int
    transitions: int
    success_rate: float
    mean_steps: float
    seconds: float
    out: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return json.dumps(self.to_dict())


def collect(
    domain: str,
    policy: str,
    episodes: int,
    out: PathLike,
    *,
    seed: int = 0,
    split: str = "train",
    epsilon: float = 0.3,
    progress: bool = True,
) -> CollectSummary:
    """Collect offline trajectories of a domain's reference env into a JSONL file.

    ``policy`` is ``expert``, ``noisy`` (expert, ``epsilon``-random) or ``random``. Episodes are
    truncated at the domain's ``max_episode_steps``. Trajectories are written as they end.
    """
    from dreamgym_env.agents.registry import make_policy
    from dreamgym_env.envs.domains import get_domain

    pack = get_domain(domain)
    env = pack.make_reference_env(split=split, max_steps=pack.max_episode_steps)
    actor = make_policy(policy, pack, seed=seed, epsilon=epsilon)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    wins = transitions = count = 0
    with out.open("w", encoding="utf-8") as handle:
        for trajectory in iter_episodes(
            env, actor, episodes, seed=seed, policy_name=policy, progress=progress
        ):
            handle.write(trajectory.model_dump_json() + "\n")
            count += 1
            wins += trajectory.won
            transitions += len(trajectory.steps)
    env.close()
    return CollectSummary(
        domain=pack.name,
        policy=policy,
        split=split,
        episodes=count,
        transitions=transitions,
        success_rate=wins / count if count else 0.0,
        mean_steps=transitions / count if count else 0.0,
        seconds=round(time.perf_counter() - start, 3),
        out=str(out),
    )
