"""CurriculumReset: the curriculum chooses the task of every reset and learns from every return."""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

from dreamgym_env.curriculum.curriculum import DEFAULT_NUM_SEEDS, Curriculum
from dreamgym_env.curriculum.generator import GenerationReport
from dreamgym_env.curriculum.selection import GeneratedShare
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

logger = logging.getLogger(__name__)

DEFAULT_GENERATE_EVERY: Final = 64
"""Finished episodes between two generations (when the curriculum has a generator)."""
DEFAULT_GENERATE_N: Final = 8
"""Tasks asked for per generation."""


class _Driver:
    """What both wrappers share: recording returns and running generation in the background."""

    def __init__(
        self,
        curriculum: Curriculum,
        lam: float | None,
        generate_every: int | None,
        generate_n: int,
        num_seeds: int,
    ) -> None:
        if not isinstance(curriculum, Curriculum):
            raise ConfigurationError(f"curriculum must be a Curriculum, got {type(curriculum).__name__}")
        if generate_every is not None and generate_every < 1:
            raise ConfigurationError(f"generate_every must be >= 1 or None, got {generate_every}")
        if generate_n < 1 or num_seeds < 1:
            raise ConfigurationError("generate_n and num_seeds must be >= 1")
        if lam is not None:
            curriculum.share = GeneratedShare(lam)
        self.curriculum = curriculum
        self.generate_every = generate_every if curriculum.generator is not None else None
        self.generate_n, self.num_seeds = generate_n, num_seeds
        self.episodes = 0
        self.reports: list[GenerationReport] = []
        self._since = 0
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future[GenerationReport] | None = None

    def finished(self, task_id: str, episode_return: float) -> None:
        self.curriculum.record(task_id, episode_return)
        self.episodes += 1
        self._since += 1
        if self.generate_every is not None and self._since >= self.generate_every and self._pending is None:
            self._since = 0
            self._start_generation()

    def _start_generation(self) -> None:
        generator = self.curriculum.generator
        assert generator is not None
        seeds = self.curriculum.seeds(self.num_seeds)
        if not seeds:
            logger.debug("no task has reward variance > 0 yet; generation postponed")
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dreamgym-curriculum")
        self._pending = self._executor.submit(generator.generate_sync, seeds, self.generate_n)

    def poll(self, wait: bool = False, timeout: float | None = None) -> GenerationReport | None:
        """Add the tasks of a finished background generation (re-raising its error, if any)."""
        pending = self._pending
        if pending is None or (not wait and not pending.done()):
            return None
        report = pending.result(timeout=timeout)
        self._pending = None
        added = self.curriculum.add_generated(report.accepted)
        self.reports.append(report)
        logger.info("curriculum: %d generated tasks added (%s)", len(added), report.counts())
        return report

    @property
    def generating(self) -> bool:
        return self._pending is not None

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None


class _DriverAccess:
    """What both curriculum wrappers expose of their driver."""

    _driver: _Driver

    @property
    def curriculum(self) -> Curriculum:
        return self._driver.curriculum

    @property
    def reports(self) -> list[GenerationReport]:
        """Reports of the generations merged so far."""
        return self._driver.reports

    @property
    def episodes(self) -> int:
        """Finished episodes (of any sub-env) recorded so far."""
        return self._driver.episodes

    def wait_for_generation(self, timeout: float | None = None) -> GenerationReport | None:
        """Block until a running generation ends and add its tasks; ``None`` if none runs."""
        return self._driver.poll(wait=True, timeout=timeout)


class CurriculumReset(_DriverAccess, gym.Wrapper[Any, Any, Any, Any]):
    """Resets into the tasks a :class:`~dreamgym_env.curriculum.Curriculum` chooses, by reward variance.

    Accepts any env whose ``reset`` takes ``options={"task": Task}`` (DreamEnv, the reference
    envs), wrapped or not; spaces are unchanged. Vector envs (``DreamVectorEnv``) take
    :class:`CurriculumResetVector`, which also takes ``group_size``.

    * ``reset()`` without a task in ``options`` resets into ``curriculum.choose(1)``: a task of
      high reward variance, an unexplored one, or (at most the share ``lam``) a generated one.
      A task passed in ``options`` is used as given (and its return still recorded).
    * Each finished episode (terminated or truncated) records its return for its task.
    * Every ``generate_every`` finished episodes, when the curriculum has a generator, new
      variations of the highest-variance tasks are requested in a background thread; they join
      the pool at a later reset or step. A generation that failed raises its error there.

    Args:
        env: the env to wrap.
        curriculum: the curriculum (its tasks must be tasks ``env`` can reset into).
        lam: the largest share of generated tasks among resets (``None``: the curriculum's).
        generate_every: finished episodes between generations (``None``: never).
        generate_n: tasks asked for per generation.
        num_seeds: seed tasks shown per generation.

    Example:
        >>> env = CurriculumReset(gym.make("DreamGym/WebShop-v0"), Curriculum(tasks), lam=0.3)  # doctest: +SKIP
        >>> obs, info = env.reset()  # info["task"] is the curriculum's choice  # doctest: +SKIP
    """

    def __init__(
        self,
        env: gym.Env,
        curriculum: Curriculum,
        lam: float | None = None,
        generate_every: int | None = DEFAULT_GENERATE_EVERY,
        *,
        generate_n: int = DEFAULT_GENERATE_N,
        num_seeds: int = DEFAULT_NUM_SEEDS,
    ) -> None:
        if isinstance(env, VectorEnv):
            raise ConfigurationError(
                "CurriculumReset wraps a single env; use CurriculumResetVector for vector envs"
            )
        if not isinstance(env, gym.Env):
            raise ConfigurationError(f"CurriculumReset wraps a gymnasium Env, got {type(env).__name__}")
        super().__init__(env)
        self._driver = _Driver(curriculum, lam, generate_every, generate_n, num_seeds)
        self._task_id: str | None = None
        self._return = 0.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self._driver.poll()
        options = dict(options or {})
        if options.get("task") is None:
            options["task"] = self.curriculum.choose(1)[0]
        obs, info = self.env.reset(seed=seed, options=options)
        chosen = options["task"]
        self._task_id = str(info.get("task_id", chosen.id if isinstance(chosen, Task) else chosen))
        self._return = 0.0
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        if (terminated or truncated) and self._task_id is not None:
            self._driver.poll()
            self._driver.finished(self._task_id, self._return)
            self._task_id = None
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        self._driver.close()
        super().close()


class CurriculumResetVector(_DriverAccess, VectorWrapper):
    """The vector form of :class:`CurriculumReset` (``CurriculumReset(vector_env, ...)`` builds it).

    Accepts a ``DreamVectorEnv`` (or any vector env whose ``reset`` takes ``options={"tasks":
    [...]}``); spaces are unchanged. ``reset()`` hands every sub-env a task of the curriculum;
    with ``group_size`` G (here or in ``reset``'s options) ``num_envs / G`` distinct tasks are
    chosen and each is run by G consecutive sub-envs (the same-task groups of GRPO). Returns of
    finished sub-env episodes are recorded as they end. When the vector env offers an
    ``autoreset_options`` hook, a sub-env that autoresets also gets its task from the
    curriculum (one at a time: groups are formed at ``reset()``); without it the vector env
    draws that task itself, and its return is still recorded.
    """

    def __init__(
        self,
        env: VectorEnv,
        curriculum: Curriculum,
        lam: float | None = None,
        generate_every: int | None = DEFAULT_GENERATE_EVERY,
        *,
        group_size: int | None = None,
        generate_n: int = DEFAULT_GENERATE_N,
        num_seeds: int = DEFAULT_NUM_SEEDS,
    ) -> None:
        if not isinstance(env, VectorEnv):
            raise ConfigurationError(f"CurriculumResetVector wraps a VectorEnv, got {type(env).__name__}")
        super().__init__(env)
        if group_size is not None and (group_size < 1 or env.num_envs % group_size):
            raise ConfigurationError(f"group_size {group_size} must divide num_envs {env.num_envs}")
        self._driver = _Driver(curriculum, lam, generate_every, generate_n, num_seeds)
        self.group_size = group_size
        self._task_ids: list[str | None] = [None] * env.num_envs
        self._returns = np.zeros(env.num_envs, dtype=np.float64)
        self._autoreset = np.zeros(env.num_envs, dtype=bool)
        base = env.unwrapped
        self.chooses_autoreset_tasks = hasattr(base, "autoreset_options")
        if self.chooses_autoreset_tasks:
            base.autoreset_options = self._autoreset_options  # type: ignore[attr-defined]

    def _autoreset_options(self, index: int) -> dict[str, Any]:
        return {"task": self.curriculum.choose(1)[0]}

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self._driver.poll()
        options = dict(options or {})
        group_size = options.pop("group_size", self.group_size)
        if options.get("tasks") is None and options.get("task") is None:
            n = self.num_envs
            if group_size:
                if group_size < 1 or n % group_size:
                    raise ConfigurationError(f"group_size {group_size} must divide num_envs {n}")
                chosen = self.curriculum.choose(n // group_size)
                options["tasks"] = [chosen[i // group_size] for i in range(n)]
            else:
                options["tasks"] = self.curriculum.choose(n)
        elif group_size:
            options["group_size"] = group_size
        obs, infos = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]  # a list too
        self._task_ids = [str(t) for t in infos["task_id"]]
        self._returns[:] = 0.0
        self._autoreset[:] = False
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self._driver.poll()
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        ids = infos.get("task_id")
        for i in range(self.num_envs):
            if self._autoreset[i]:  # this step reset sub-env i
                self._task_ids[i] = str(ids[i]) if ids is not None else None
                self._returns[i] = 0.0
                continue
            self._returns[i] += float(rewards[i])
            task_id = self._task_ids[i]
            if (terminations[i] or truncations[i]) and task_id is not None:
                self._driver.finished(task_id, float(self._returns[i]))
        self._autoreset = np.logical_or(terminations, truncations)
        return obs, rewards, terminations, truncations, infos

    def close(self, **kwargs: Any) -> None:
        self._driver.close()
        super().close(**kwargs)
