"""The Curriculum: a task pool, its reward statistics, variance-based choice and task generation."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dreamgym_env.curriculum.clusters import ByTask, Grouping, TaskClusters
from dreamgym_env.curriculum.generator import GenerationReport, TaskGenerator
from dreamgym_env.curriculum.selection import (
    DEFAULT_EXPLORE,
    DEFAULT_LAMBDA,
    DEFAULT_MIN_EPISODES,
    GeneratedShare,
    TaskScore,
    VarianceSelector,
)
from dreamgym_env.curriculum.stats import DEFAULT_WINDOW, TaskStats, reward_variance
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.types import Task

if TYPE_CHECKING:
    import gymnasium as gym
    from gymnasium.vector import VectorEnv

    from dreamgym_env.curriculum.chat import ChatModel

DEFAULT_NUM_SEEDS = 4
"""Seed tasks shown to the model per generation (the paper's m)."""


class _Part:
    """Original or generated tasks: their ids and their groups' scores, slot by slot (numpy, grown by doubling)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._variance = np.zeros(64, dtype=np.float64)
        self._episodes = np.zeros(64, dtype=np.int64)

    def append(self, task_id: str) -> int:
        if len(self.ids) == len(self._variance):
            self._variance = np.concatenate([self._variance, np.zeros_like(self._variance)])
            self._episodes = np.concatenate([self._episodes, np.zeros_like(self._episodes)])
        self.ids.append(task_id)
        return len(self.ids) - 1

    def set(self, index: int, score: TaskScore) -> None:
        self._variance[index], self._episodes[index] = score.variance, score.episodes

    @property
    def variance(self) -> np.ndarray:
        return self._variance[: len(self.ids)]

    @property
    def episodes(self) -> np.ndarray:
        return self._episodes[: len(self.ids)]


class Curriculum:
    """Chooses the tasks of resets by reward variance and grows the pool with generated tasks.

    The pool holds the original tasks and the generated ones. :meth:`choose` hands out tasks for
    resets (generated ones capped at the share ``lam``), :meth:`record` takes the return of each
    finished episode, :meth:`seeds` names the tasks whose reward variance is highest, and
    :meth:`generate` asks the generator for variations of them and adds the accepted ones.

    Args:
        tasks: the original tasks (e.g. a domain's train split).
        stats: a :class:`TaskStats`, a SQLite path (persistent; may be the replay buffer's
            file), or ``None`` (in memory). Generated tasks stored there come back into the pool.
        generator: a :class:`TaskGenerator` for :meth:`generate` (optional).
        grouping: ``"task"`` (each task is its own group, for GRPO-style groups), ``"cluster"``
            (:class:`TaskClusters` of the tasks, for PPO-style training) or a grouping object.
        lam: the largest share of generated tasks among the tasks handed out.
        explore, min_episodes: see :class:`VarianceSelector`.
        window: recent rewards per task that its variance is computed over.
        seed: seed of every draw.

    Example:
        >>> curriculum = Curriculum(get_domain("webshop").tasks("train"), stats="runs/curriculum.db")  # doctest: +SKIP
        >>> task = curriculum.choose(1)[0]  # doctest: +SKIP
        >>> curriculum.record(task, reward=1.0)  # doctest: +SKIP
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        *,
        stats: TaskStats | str | Path | None = None,
        generator: TaskGenerator | None = None,
        grouping: str | Grouping = "task",
        lam: float = DEFAULT_LAMBDA,
        explore: float = DEFAULT_EXPLORE,
        min_episodes: int = DEFAULT_MIN_EPISODES,
        window: int = DEFAULT_WINDOW,
        seed: int | None = None,
    ) -> None:
        if not tasks:
            raise ConfigurationError("a curriculum needs at least one task")
        self.stats = stats if isinstance(stats, TaskStats) else TaskStats(stats, window=window)
        self.generator = generator
        self.selector = VarianceSelector(explore=explore, min_episodes=min_episodes, seed=seed)
        self.share = GeneratedShare(lam)
        self.rng = np.random.default_rng(None if seed is None else seed + 1)
        if grouping == "task":
            self.grouping: Grouping = ByTask()
        elif grouping == "cluster":
            self.grouping = TaskClusters(tasks, seed=seed or 0)
        elif isinstance(grouping, str):
            raise UnknownNameError("grouping", grouping, ("task", "cluster"))
        else:
            self.grouping = grouping
        self._lock = threading.RLock()
        self._tasks: dict[str, Task] = {}
        self._original, self._generated = _Part(), _Part()
        self._position: dict[str, tuple[_Part, int]] = {}
        self._members: dict[str, list[str]] = {}
        self._group_of: dict[str, str] = {}
        self._scores: dict[str, TaskScore] = {}
        self._dirty: set[str] = set()
        for task in tasks:
            self._add(task, generated=False)
        self._add_generated(self.stats.generated, persist=False)
        if generator is not None:
            generator.remember(self._tasks.values())

    @classmethod
    def for_env(
        cls,
        env: gym.Env | VectorEnv,
        *,
        chat: ChatModel | None = None,
        **kwargs: Any,
    ) -> Curriculum:
        """A curriculum over the tasks of a DreamGym env, generating with ``chat`` if given.

        Any env (wrapped or not) whose base has ``tasks`` and ``domain`` works: a synthetic or
        reference env, or a vector env of synthetic envs (its first sub-env's tasks).
        """
        base: Any = env.unwrapped
        sub_envs = getattr(base, "envs", None)
        if sub_envs:
            base = sub_envs[0]
        tasks, domain = getattr(base, "tasks", None), getattr(base, "domain", None)
        if tasks is None or domain is None:
            raise ConfigurationError(
                f"{type(base).__name__} has no tasks and domain to build a curriculum from"
            )
        generator = TaskGenerator(chat, domain) if chat is not None else None
        return cls(list(tasks), generator=generator, **kwargs)

    # -- the pool ------------------------------------------------------------------------------
    def _add(self, task: Task, *, generated: bool) -> bool:
        if task.id in self._tasks:
            return False
        self._tasks[task.id] = task
        part = self._generated if generated else self._original
        self._position[task.id] = (part, part.append(task.id))
        key = self.grouping.key(task)
        self._group_of[task.id] = key
        self._members.setdefault(key, []).append(task.id)
        self._dirty.add(key)
        return True

    def _add_generated(self, tasks: Iterable[Task], *, persist: bool) -> list[Task]:
        with self._lock:
            added = [task for task in tasks if self._add(task, generated=True)]
            if persist and added:
                self.stats.add_generated(added)
            return added

    def add_generated(self, tasks: Iterable[Task]) -> list[Task]:
        """Add generated tasks to the pool (and to the statistics file); returns the new ones."""
        added = self._add_generated(tasks, persist=True)
        if self.generator is not None:
            self.generator.remember(added)
        return added

    @property
    def tasks(self) -> list[Task]:
        """The original tasks."""
        return [self._tasks[i] for i in self._original.ids]

    @property
    def generated(self) -> list[Task]:
        """The generated tasks in the pool, oldest first."""
        return [self._tasks[i] for i in self._generated.ids]

    def task(self, task_id: str) -> Task:
        """The pool's task ``task_id``."""
        try:
            return self._tasks[task_id]
        except KeyError:
            raise UnknownNameError("task id", task_id, self._tasks) from None

    def __contains__(self, task: object) -> bool:
        return (task.id if isinstance(task, Task) else task) in self._tasks

    def __len__(self) -> int:
        return len(self._tasks)

    # -- statistics ----------------------------------------------------------------------------
    def score(self, task: Task | str) -> TaskScore:
        """The reward variance and episode count of ``task``'s group."""
        task_id = task.id if isinstance(task, Task) else task
        key = self._group_of.get(task_id, task_id)
        with self._lock:
            if key in self._dirty:
                self._refresh(key)
            cached = self._scores.get(key)
            if cached is None:  # a task outside the pool
                cached = self._group_score([task_id])
        return cached

    def _group_score(self, members: Sequence[str]) -> TaskScore:
        records = [record for record in map(self.stats.get, members) if record is not None]
        rewards = [r for record in records for r in record.recent]
        return TaskScore(reward_variance(rewards), sum(record.episodes for record in records))

    def _refresh(self, key: str) -> None:
        """Recompute a group's score and write it to every member's slot."""
        self._dirty.discard(key)
        members = self._members.get(key)
        if members is None:
            return
        score = self._scores[key] = self._group_score(members)
        for member in members:
            part, index = self._position[member]
            part.set(index, score)

    def _flush(self) -> None:
        for key in list(self._dirty):
            self._refresh(key)

    def variance(self, task: Task | str) -> float:
        """Reward variance ``V`` of ``task``'s group over its recent episodes."""
        return self.score(task).variance

    def record(self, task: Task | str, reward: float, *, step: int | None = None) -> None:
        """Record the return of one finished episode of ``task``."""
        self.record_many([(task, reward)], step=step)

    def record_group(self, task: Task | str, rewards: Sequence[float], *, step: int | None = None) -> None:
        """Record the returns of a group of rollouts of one task."""
        self.record_many([(task, r) for r in rewards], step=step)

    def record_many(self, episodes: Iterable[tuple[Task | str, float]], *, step: int | None = None) -> None:
        """Record finished episodes ``(task, return)`` in one transaction."""
        items = [(t.id if isinstance(t, Task) else t, float(r)) for t, r in episodes]
        with self._lock:
            self.stats.record_many(items, step=step)
            self._dirty.update(self._group_of[t] for t, _ in items if t in self._group_of)

    # -- choosing ------------------------------------------------------------------------------
    def choose(self, n: int = 1, *, distinct: bool = True) -> list[Task]:
        """``n`` tasks for the next resets: at most the share ``lam`` generated, the rest original.

        Within each part, tasks are drawn by reward variance with exploration
        (:class:`VarianceSelector`); ``distinct`` avoids repeats within the batch while it can.
        """
        with self._lock:
            self._flush()
            n_generated = self.share.quota(n, len(self._generated.ids))
            chosen = self._draw(self._generated, n_generated, distinct) + self._draw(
                self._original, n - n_generated, distinct
            )
        order = self.rng.permutation(len(chosen))
        return [chosen[int(i)] for i in order]

    def _draw(self, part: _Part, k: int, distinct: bool) -> list[Task]:
        if k == 0:
            return []
        indices = self.selector.choose_arrays(part.variance, part.episodes, k, distinct=distinct)
        return [self._tasks[part.ids[i]] for i in indices]

    def seeds(self, m: int = DEFAULT_NUM_SEEDS) -> list[Task]:
        """The tasks to vary: one tried task from each of the ``m`` groups of highest ``V > 0``."""
        with self._lock:
            self._flush()
            keys = list(self._members)
            best = self.selector.seeds([self._scores[k] for k in keys], m)
            seeds = []
            for index in best:
                tried = [i for i in self._members[keys[index]] if self.stats.episodes(i) > 0]
                seeds.append(self._tasks[tried[int(self.rng.integers(len(tried)))]])
            return seeds

    # -- generating ----------------------------------------------------------------------------
    def generate(self, n: int, *, num_seeds: int = DEFAULT_NUM_SEEDS) -> GenerationReport:
        """Ask the generator for ``n`` variations of the current seeds and add the accepted ones."""
        if self.generator is None:
            raise ConfigurationError(
                "this curriculum has no task generator (pass generator=TaskGenerator(...))"
            )
        seeds = self.seeds(num_seeds)
        if not seeds:
            return GenerationReport(note="no task has reward variance > 0 yet: nothing to vary")
        report = self.generator.generate_sync(seeds, n)
        self.add_generated(report.accepted)
        return report

    def close(self) -> None:
        """Close the statistics file."""
        self.stats.close()

    def __repr__(self) -> str:
        return (
            f"Curriculum(tasks={len(self._original.ids)}, generated={len(self._generated.ids)}, "
            f"lam={self.share.lam}, grouping={self.grouping!r}, stats={self.stats!r})"
        )
