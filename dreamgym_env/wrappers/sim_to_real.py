"""SimToReal: one agent, two envs (synthetic and real), switched at reset by a schedule."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, SupportsFloat

import gymnasium as gym
import numpy as np

from dreamgym_env.errors import ConfigurationError, SpaceMismatchError
from dreamgym_env.types import Step, Task, state_text

EnvSource = Literal["synthetic", "real"]
SOURCES: tuple[EnvSource, ...] = ("synthetic", "real")
RealStepListener = Callable[[Task, Step], None]
"""Called with every step the real env served (e.g. to write it to a replay buffer)."""


@dataclass(frozen=True)
class SourceCounts:
    """Steps and episodes served so far by each env; real steps are the budget that matters."""

    synthetic_steps: int = 0
    real_steps: int = 0
    synthetic_episodes: int = 0
    real_episodes: int = 0

    @property
    def steps(self) -> int:
        return self.synthetic_steps + self.real_steps

    @property
    def episodes(self) -> int:
        return self.synthetic_episodes + self.real_episodes


Schedule = Callable[[SourceCounts, np.random.Generator], EnvSource]
"""Decides at each reset which env serves the next episode, from the counts so far."""


@dataclass(frozen=True)
class SyntheticFirst:
    """Synthetic until ``episodes`` synthetic episodes or ``steps`` synthetic steps, then real.

    The switch happens at the first reset after the threshold (an episode is never cut).
    """

    episodes: int | None = None
    steps: int | None = None

    def __post_init__(self) -> None:
        if (self.episodes is None) == (self.steps is None):
            raise ConfigurationError("SyntheticFirst takes exactly one of episodes= or steps=")
        if (self.episodes or 0) < 0 or (self.steps or 0) < 0:
            raise ConfigurationError(f"SyntheticFirst thresholds must be >= 0, got {self}")

    def __call__(self, counts: SourceCounts, rng: np.random.Generator) -> EnvSource:
        if self.episodes is not None:
            return "synthetic" if counts.synthetic_episodes < self.episodes else "real"
        assert self.steps is not None
        return "synthetic" if counts.synthetic_steps < self.steps else "real"


@dataclass(frozen=True)
class RealWithProbability:
    """Each episode is real with probability ``p`` (drawn with the wrapper's seeded RNG)."""

    p: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ConfigurationError(f"RealWithProbability p must be in [0, 1], got {self.p}")

    def __call__(self, counts: SourceCounts, rng: np.random.Generator) -> EnvSource:
        return "real" if rng.random() < self.p else "synthetic"


class SimToReal(gym.Env):
    """Serve one agent from a synthetic env or a real env, chosen at each reset.

    The DreamGym sim-to-real recipe: train in the synthetic env, then continue in the real one
    with far fewer real interactions. Both envs must have equal observation and action spaces
    (checked at construction, :class:`~dreamgym_env.errors.SpaceMismatchError` otherwise); any
    env pair fits, e.g. ``DreamGym/WebShop-v0`` and ``DreamGym/WebShop-Ref-v0``.

    Which env serves the next episode is decided at ``reset`` by, in order:

    1. an explicit :meth:`switch` (``switch("real")``; ``switch()`` toggles), which pins the
       source for every following episode until ``switch(None)`` hands control back;
    2. the ``schedule``: :class:`SyntheticFirst` (``episodes=N`` or ``steps=N``),
       :class:`RealWithProbability` (``p``), or any callable ``(counts, rng) -> "synthetic" |
       "real"`` (see :data:`Schedule`); ``None`` (the default) means synthetic until switched.

    ``info["source"]`` says which env served the reset or step; :attr:`counts` holds the steps
    and episodes of each. Steps of the real env are passed to every listener added with
    :meth:`add_real_step_listener`, e.g. ``lambda task, step: buffer.add(task, step,
    source="real")``; or wrap the whole in
    :class:`~dreamgym_env.wrappers.replay_grounding.ReplayGrounding`, which grounds the
    synthetic side and writes real steps to the buffer tagged ``real``.

    Observation and action spaces are those of the two envs (any kind, as long as they are
    equal); wrap the ``SimToReal`` env, not its two sides, in adapters such as
    :class:`~dreamgym_env.wrappers.choice_actions.ChoiceActions`.

    Example:
        >>> env = SimToReal(gym.make("DreamGym/WebShop-v0"), gym.make("DreamGym/WebShop-Ref-v0"),
        ...                 schedule=SyntheticFirst(steps=10_000))  # doctest: +SKIP
        >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
        >>> info["source"], env.counts.real_steps  # doctest: +SKIP
        ('synthetic', 0)
    """

    def __init__(
        self,
        synthetic_env: gym.Env,
        real_env: gym.Env,
        schedule: Schedule | None = None,
    ) -> None:
        for name in ("observation_space", "action_space"):
            synthetic_space, real_space = getattr(synthetic_env, name), getattr(real_env, name)
            if synthetic_space != real_space:
                raise SpaceMismatchError(
                    f"SimToReal needs equal {name}s; the synthetic env has {synthetic_space!r}, "
                    f"the real env has {real_space!r}"
                )
        if schedule is not None and not callable(schedule):
            raise ConfigurationError(f"schedule must be callable or None, got {type(schedule).__name__}")
        self.envs: dict[EnvSource, gym.Env] = {"synthetic": synthetic_env, "real": real_env}
        self.observation_space = synthetic_env.observation_space
        self.action_space = synthetic_env.action_space
        self.metadata = dict(synthetic_env.metadata)
        self.render_mode = synthetic_env.render_mode
        self.schedule = schedule
        self.counts = SourceCounts()
        self.source: EnvSource = "synthetic"
        self._pinned: EnvSource | None = None
        self._pending_seed: dict[EnvSource, int | None] = {"synthetic": None, "real": None}
        self._listeners: list[RealStepListener] = []
        self._task: Task | None = None
        self._state = ""

    @property
    def synthetic_env(self) -> gym.Env:
        return self.envs["synthetic"]

    @property
    def real_env(self) -> gym.Env:
        return self.envs["real"]

    @property
    def domain(self) -> Any:
        """The domain both envs play (the synthetic env's, else the real env's), or ``None``."""
        for env in (self.synthetic_env, self.real_env):
            domain = getattr(env.unwrapped, "domain", None)
            if domain is not None:
                return domain
        return None

    @property
    def active_env(self) -> gym.Env:
        """The env serving the current episode."""
        return self.envs[self.source]

    def switch(self, to: EnvSource | Literal["toggle"] | None = "toggle") -> None:
        """Pin the source of the following episodes (from the next reset on).

        ``switch()`` toggles, ``switch("real")`` / ``switch("synthetic")`` pins that env, and
        ``switch(None)`` returns the choice to the schedule.
        """
        if to == "toggle":
            current = self._pinned or self.source
            self._pinned = "real" if current == "synthetic" else "synthetic"
        elif to is None or to in SOURCES:
            self._pinned = to
        else:
            raise ConfigurationError(f"switch() takes 'synthetic', 'real', None or 'toggle', got {to!r}")

    def add_real_step_listener(self, listener: RealStepListener) -> None:
        """Call ``listener(task, step)`` for every step the real env serves."""
        self._listeners.append(listener)

    def next_source(self) -> EnvSource:
        """The env that the next reset will choose (draws from the RNG for random schedules)."""
        if self._pinned is not None:
            return self._pinned
        if self.schedule is None:
            return "synthetic"
        source = self.schedule(self.counts, self.np_random)
        if source not in SOURCES:
            raise ConfigurationError(f"the schedule returned {source!r}; expected 'synthetic' or 'real'")
        return source

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:  # each env gets the seed at its own next reset
            self._pending_seed = {"synthetic": seed, "real": seed}
        self.source = self.next_source()
        env_seed, self._pending_seed[self.source] = self._pending_seed[self.source], None
        observation, info = self.active_env.reset(seed=env_seed, options=options)
        self._count(episodes=1)
        task = info.get("task")
        self._task = task if isinstance(task, Task) else None
        self._state = state_text(observation, info)
        return observation, {**info, "source": self.source}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.active_env.step(action)
        self._count(steps=1)
        if self.source == "real" and self._listeners and self._task is not None:
            step = Step(
                state=self._state,
                action=str(action),
                next_state=state_text(observation, info),
                reward=float(reward),
                done=bool(terminated),
                action_valid=bool(info.get("action_valid", True)),
            )
            for listener in self._listeners:
                listener(self._task, step)
        if isinstance(observation, str) and info.get("action_valid", True):
            self._state = state_text(observation, info)
        return observation, reward, terminated, truncated, {**info, "source": self.source}

    def _count(self, *, steps: int = 0, episodes: int = 0) -> None:
        c = self.counts
        if self.source == "real":
            self.counts = replace(
                c, real_steps=c.real_steps + steps, real_episodes=c.real_episodes + episodes
            )
        else:
            self.counts = replace(
                c,
                synthetic_steps=c.synthetic_steps + steps,
                synthetic_episodes=c.synthetic_episodes + episodes,
            )

    def render(self) -> Any:
        return self.active_env.render()

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
