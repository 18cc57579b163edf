"""Rollouts: play episodes of any text env with a policy and record them as trajectories.

Generic across domains: any ``gymnasium.Env[str, str]`` and any policy ``(observation, info) ->
action``; :func:`collect` runs a registered domain's reference env with one of the baseline
policies and writes the offline JSONL format (:mod:`dreamgym_env.replay.jsonl`).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from dreamgym_env.agents.registry import make_policy
from dreamgym_env.domain import Domain, Policy
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Step, Task, Trajectory, state_text

if TYPE_CHECKING:
    from typing_extensions import Unpack

PathLike = str | Path
PIPED_PROGRESS_INTERVAL_S = 30.0
"""Seconds between progress-bar updates when stderr is a file or a pipe, not a terminal."""


StateMode = Literal["text", "structured"]


def _recorded_state(env: gym.Env, observation: str, info: dict[str, Any], state_mode: StateMode) -> str:
    """What a step records of the env's state: its text, or the abstract state's JSON.

    The text is ``info["state"]`` where the env reports it (the model-facing text, when the agent
    sees another: WebShop's real page text), else the observation.
    """
    if state_mode == "text":
        return state_text(observation, info)
    abstract = getattr(env.unwrapped, "abstract_state", None)
    if abstract is None:
        raise ConfigurationError(
            f"{type(env.unwrapped).__name__} has no abstract_state: record its episodes with state_mode='text'"
        )
    return str(abstract.model_dump_json())


def progress_bar(total: int, desc: str, *, unit: str = "it", enabled: bool = True) -> tqdm:
    """A tqdm bar on stderr that never writes a line per item.

    On a terminal it is redrawn in place; into a file or a pipe (CI logs, ``2> log.txt``) it is
    written at most every :data:`PIPED_PROGRESS_INTERVAL_S` seconds, and when it closes. Update
    it with ``set_postfix(..., refresh=False)``: a refresh per item would write each one.
    """
    stream = sys.stderr
    notebook = any(base.__module__ == "tqdm.notebook" for base in tqdm.__mro__)  # a widget, no text
    piped = not notebook and not (hasattr(stream, "isatty") and stream.isatty())
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        disable=not enabled,
        file=stream,
        mininterval=PIPED_PROGRESS_INTERVAL_S if piped else 0.1,
        maxinterval=PIPED_PROGRESS_INTERVAL_S if piped else 10.0,
    )


def stop_reason(info: Mapping[str, Any], action: str, last_action: str | None) -> str | None:
    """Why a scripted episode on a synthetic env cannot usefully go on, or ``None``.

    Checked before stepping ``action``: ``info`` is the last step's (or the reset's) info and
    ``last_action`` that step's action (``None`` at the first step). A scripted policy reading a
    model-written page gets stuck when the page offers no action at all, or when it repeats the
    action the env just rejected (the page is unchanged: it would repeat it to the step limit).
    Used by ``dreamgym episode`` and the demo.
    """
    if info.get("admissible_actions") == []:
        return "the synthetic page offers no action (no clickable label)"
    if last_action is not None and not info.get("action_valid", True) and action == last_action:
        return "the scripted policy repeats an action that is invalid on this page"
    return None


def run_episode(
    env: gym.Env,
    policy: Policy,
    *,
    task: Task | None = None,
    seed: int | None = None,
    policy_name: str = "",
    state_mode: StateMode = "text",
) -> Trajectory:
    """Play one episode of ``env`` with ``policy`` and record it.

    The episode ends when the env terminates or truncates (wrap the env in ``TimeLimit`` or
    give it a step limit). ``metadata`` records ``won``, ``score`` (where the env reports one),
    ``truncated``, ``steps``, ``seed`` and ``state_mode``. With ``state_mode="structured"`` the
    steps' states are the reference env's abstract states (JSON of its domain's state schema),
    the form structured experience requests use; the policy still acts on the text.
    """
    reset = getattr(policy, "reset", None)
    if callable(reset):
        reset()
    observation, info = env.reset(seed=seed, options={"task": task} if task is not None else None)
    episode_task = info.get("task", task)
    if not isinstance(episode_task, Task):
        raise ConfigurationError("the env must report info['task'] (a Task) to record trajectories")
    steps: list[Step] = []
    state = _recorded_state(env, observation, info, state_mode)
    terminated, truncated, won = False, False, False
    while not (terminated or truncated):
        action = policy(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        valid = bool(info.get("action_valid", True))
        after = _recorded_state(env, observation, info, state_mode)
        steps.append(
            Step(
                state=state,
                action=action,
                next_state=after,
                reward=float(reward),
                done=bool(terminated),
                action_valid=valid,
                reasoning=str(info.get("reasoning", "")),
            )
        )
        won = bool(info.get("won", terminated and float(reward) >= 1.0))
        if valid:  # after an invalid action the page itself is unchanged
            state = after
    metadata: dict[str, Any] = {
        "won": won,
        "truncated": bool(truncated),
        "steps": len(steps),
        "seed": seed,
        "state_mode": state_mode,
    }
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
    state_mode: StateMode = "text",
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
    with progress_bar(episodes, f"collect {policy_name or 'policy'}", unit="ep", enabled=progress) as bar:
        for i in range(episodes):
            task = pool[int(order[i % len(pool)])] if pool else None
            trajectory = run_episode(
                env, policy, task=task, seed=seed + i, policy_name=policy_name, state_mode=state_mode
            )
            wins += trajectory.won
            bar.update(1)
            bar.set_postfix(success=f"{wins / (i + 1):.2f}", refresh=False)
            yield trajectory


class EpisodeOptions(TypedDict, total=False):
    """The keywords of :func:`iter_episodes` (defaults there) that :func:`collect_trajectories` passes on."""

    tasks: Sequence[Task] | None
    seed: int
    policy_name: str
    progress: bool
    state_mode: StateMode


def collect_trajectories(
    env: gym.Env, policy: Policy, episodes: int, **options: Unpack[EpisodeOptions]
) -> list[Trajectory]:
    """Play ``episodes`` episodes and return their trajectories (see :func:`iter_episodes`)."""
    return list(iter_episodes(env, policy, episodes, **options))


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

    def format(self) -> str:
        """One readable line: what was collected, how well, how fast, where it went."""
        return (
            f"collected {self.episodes:,} {self.policy} episodes of {self.domain} ({self.split} split): "
            f"{self.transitions:,} transitions ({self.mean_steps:.1f} steps/episode), "
            f"success {self.success_rate:.3f}, {self.seconds:.1f} s → {self.out}"
        )

    def __str__(self) -> str:
        return json.dumps(self.to_dict())


def collect(
    domain: str | Domain,
    policy: str,
    episodes: int,
    out: PathLike,
    *,
    seed: int = 0,
    split: str = "train",
    epsilon: float = 0.3,
    progress: bool = True,
    state_mode: StateMode = "text",
    env: gym.Env | None = None,
) -> CollectSummary:
    """Collect offline trajectories of a domain's reference env (or ``env``) into a JSONL file.

    ``policy`` is ``expert``, ``noisy`` (expert, ``epsilon``-random) or ``random``. Episodes are
    truncated at the domain's ``max_episode_steps``. Trajectories are written as they end.
    ``state_mode="structured"`` records abstract states (for structured grounding and fidelity).
    ``env``: another env of the domain to record, e.g. ``gym.make("DreamGym/WebShop-Real-v0")``
    (a real server's), which the call closes when done; ``split`` is then the env's own.
    """
    pack = get_domain(domain)
    if env is None:
        env = pack.make_reference_env(split=split, max_steps=pack.max_episode_steps)
    actor = make_policy(policy, pack, seed=seed, epsilon=epsilon)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    wins = transitions = count = 0
    with out.open("w", encoding="utf-8") as handle:
        for trajectory in iter_episodes(
            env, actor, episodes, seed=seed, policy_name=policy, progress=progress, state_mode=state_mode
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
