"""DreamVectorEnv: N synthetic envs whose model calls of one step go out concurrently."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from dreamgym_env.domain import Domain, Supply
from dreamgym_env.envs.models import env_experience_model
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.stepping import step_many
from dreamgym_env.envs.synthetic import (
    DEFAULT_HISTORY_LEN,
    DreamEnv,
    OnModelError,
    RewardSource,
    StateMode,
    StepResult,
)
from dreamgym_env.envs.tasksets import RESET_OPTIONS, reset_task
from dreamgym_env.errors import ConfigurationError, DreamGymError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.types import Task

VECTOR_RESET_OPTIONS = (*RESET_OPTIONS, "tasks", "group_size")


class DreamVectorEnv(VectorEnv):
    """A batch of :class:`DreamEnv` sharing one experience model, stepped with concurrent calls.

    One ``step`` gathers the valid actions of all sub-envs into a single ``predict`` batch, which
    the backend sends concurrently on one event loop (no processes): with N sub-envs and a model
    latency L, a step takes about L, not N x L. Invalid actions are answered without a call.
    When the model cannot answer a sub-env's request after its retries and re-asks, that
    sub-env's episode ends truncated with ``info["error"]`` (its single-env behaviour, counted in
    :attr:`model_failures`) and the other sub-envs' steps are kept. With
    ``on_model_error="raise"`` a step is all-or-nothing instead: it raises (naming the failed
    sub-envs) and no sub-env records anything, so it can be retried as is.

    Observation and action spaces are tuples of :class:`~dreamgym_env.spaces.UnicodeText`.
    Autoreset is Gymnasium's next-step mode: the step after a sub-env ends resets it and ignores
    its action. Episodes are truncated after ``max_steps`` steps (default: the domain's limit).

    Reset options (besides the single-env ``{"task": ...}`` applied to every sub-env):
    ``{"tasks": [t_0, ..., t_{N-1}]}`` one task per sub-env; ``{"group_size": G}`` consecutive
    groups of G sub-envs share one randomly drawn task, as GRPO groups need.

    Example:
        >>> import gymnasium as gym, dreamgym_env
        >>> envs = gym.make_vec("DreamGym/WebShop-v0", num_envs=8, experience_model=model)  # doctest: +SKIP
        >>> obs, infos = envs.reset(seed=0, options={"group_size": 4})  # doctest: +SKIP
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        num_envs: int,
        domain: str | Domain,
        experience_model: ExperienceModel | str | None = None,
        *,
        max_steps: int | None = None,
        history_len: int = DEFAULT_HISTORY_LEN,
        split: str = "train",
        tasks: Sequence[Task] | None = None,
        render_mode: str | None = None,
        state_mode: StateMode = "text",
        reward_mode: RewardSource = "model",
        on_model_error: OnModelError = "truncate",
        supply: Supply = "pack",
        **model_settings: Any,
    ) -> None:
        if num_envs < 1:
            raise ConfigurationError(f"num_envs must be >= 1, got {num_envs}")
        domain = get_domain(domain)
        experience_model, self._owns_model = env_experience_model(
            type(self), domain, experience_model, model_settings
        )
        self.experience_model = experience_model
        self.num_envs = num_envs
        self.render_mode = render_mode
        self.envs = [
            DreamEnv(
                domain,
                experience_model,
                max_steps=max_steps or domain.max_episode_steps,
                history_len=history_len,
                split=split,
                tasks=tasks,
                state_mode=state_mode,
                reward_mode=reward_mode,
                on_model_error=on_model_error,
                supply=supply,
            )
            for _ in range(num_envs)
        ]
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._autoreset = np.zeros(num_envs, dtype=bool)
        self.autoreset_options: Callable[[int], dict[str, Any] | None] | None = None
        """Called with a sub-env index at its autoreset; its options (e.g. a curriculum's task) apply."""
        self.sub_env_infos: list[dict[str, Any]] = []
        """The last reset's or step's info of each sub-env, before batching (batching is lossy:
        a key's layout follows its first sub-env's value)."""

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        super().reset(seed=seed if isinstance(seed, int) else None)
        seeds = self._seeds(seed)
        reset_task(options, type(self).__name__, VECTOR_RESET_OPTIONS)
        options = dict(options or {})
        tasks = self._reset_tasks(options)
        observations: list[str] = []
        infos: list[dict[str, Any]] = []
        for i, env in enumerate(self.envs):
            env_options = {**options, "task": tasks[i]} if tasks[i] is not None else options
            obs, info = env.reset(seed=seeds[i], options=env_options or None)
            observations.append(obs)
            infos.append(info)
        self._autoreset[:] = False
        self.sub_env_infos = infos
        return tuple(observations), batch_infos(infos)

    def _seeds(self, seed: int | list[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int):
            return [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ConfigurationError(f"got {len(seed)} seeds for {self.num_envs} sub-envs")
        return list(seed)

    def _reset_tasks(self, options: dict[str, Any]) -> list[Task | str | None]:
        tasks = options.pop("tasks", None)
        group_size = options.pop("group_size", None)
        if tasks is not None:
            if len(tasks) != self.num_envs:
                raise ConfigurationError(
                    f"options['tasks'] has {len(tasks)} tasks for {self.num_envs} sub-envs"
                )
            return list(tasks)
        if group_size is not None:
            if group_size < 1 or self.num_envs % group_size:
                raise ConfigurationError(f"group_size {group_size} must divide num_envs {self.num_envs}")
            # Drawn with the vector env's generator, which reset(seed=...) has just seeded.
            drawn = [
                self.envs[0].resolve_task(options.get("task"), self.np_random)
                for _ in range(self.num_envs // group_size)
            ]
            return [drawn[i // group_size] for i in range(self.num_envs)]
        return [None] * self.num_envs

    def step(
        self, actions: Sequence[str]
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env.

        The valid actions go to the model as one ``predict`` batch; invalid actions are answered
        without a call; sub-envs that ended at the previous step are reset. Nothing is recorded
        in any sub-env (no step, no listener call, no reset, no step count) until every answer
        is in. A sub-env whose request the model fails for good ends its episode truncated
        (``info["error"]``). With ``on_model_error="raise"`` the step raises that error instead
        (its message starts with the failed sub-envs, also in its ``sub_envs`` attribute) and
        every sub-env is as it was, so the same ``step(actions)`` can simply be retried; the good
        transitions of the other requests of a failed step are discarded with it.
        """
        if len(actions) != self.num_envs:
            raise ConfigurationError(f"got {len(actions)} actions for {self.num_envs} sub-envs")
        # sub-envs that ended at the previous step are reset once the step succeeds (a failed
        # step leaves them to the retry)
        active = [i for i in range(self.num_envs) if not self._autoreset[i]]

        def name(exc: DreamGymError, positions: list[int], exact: bool) -> None:
            _name_sub_envs(exc, [active[p] for p in positions], exact=exact)

        stepped = step_many([self.envs[i] for i in active], [actions[i] for i in active], on_error=name)
        results = dict(zip(active, cast(list[StepResult], stepped), strict=True))
        observations: list[str] = [""] * self.num_envs
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=bool)
        truncations = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict[str, Any]] = []
        for i, env in enumerate(self.envs):
            if i in results:
                result = results[i]
            else:
                obs, info = env.reset(options=self.autoreset_options(i) if self.autoreset_options else None)
                result = (obs, 0.0, False, False, info)
            observations[i], rewards[i], terminations[i], truncations[i], info = result
            infos.append(info)
        self._autoreset = terminations | truncations
        self.sub_env_infos = infos
        return tuple(observations), rewards, terminations, truncations, batch_infos(infos)

    @property
    def model_failures(self) -> int:
        """Episodes of the sub-envs that ended truncated because the model could not answer a step."""
        return sum(env.model_failures for env in self.envs)

    def render(self) -> tuple[Any, ...] | None:
        """The current page of each sub-env (``render_mode="ansi"``)."""
        if self.render_mode != "ansi":
            return None
        return tuple(env.state for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()
        if self._owns_model:  # the sub-envs were given the model: closing it is the vector env's job
            self.experience_model.close()


def batch_infos(infos: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Gymnasium's vector info layout, built in one pass over all sub-envs.

    Each key maps to an array over the sub-envs (numeric dtypes for bool/int/float values,
    ``object`` otherwise; nested dicts recurse) and ``"_" + key`` to the mask of sub-envs that
    set it. Same result as ``VectorEnv._add_info`` called per sub-env, at a fraction of the cost.
    """
    num_envs = len(infos)
    keys: dict[str, None] = {}
    for info in infos:
        keys.update(dict.fromkeys(info))
    batched: dict[str, Any] = {}
    for key in keys:
        mask = np.fromiter((key in info for info in infos), dtype=bool, count=num_envs)
        values = [info.get(key) for info in infos]
        first = next(value for value, present in zip(values, mask, strict=True) if present)
        kind = type(first)
        if isinstance(first, dict):
            batched[key] = batch_infos([v if isinstance(v, dict) else {} for v in values])
        elif kind in (bool, int, float) and all(
            type(v) is kind for v, m in zip(values, mask, strict=True) if m
        ):
            batched[key] = np.array([v if m else 0 for v, m in zip(values, mask, strict=True)], dtype=kind)
        else:
            array = np.empty(num_envs, dtype=object)
            for j, value in enumerate(values):  # item by item: a slice would probe each for __array__
                array[j] = value
            batched[key] = array
        batched["_" + key] = mask
    return batched


def _name_sub_envs(exc: DreamGymError, indices: Sequence[int], *, exact: bool = True) -> None:
    """Put the failed sub-envs' indices in front of ``exc``'s message and in ``exc.sub_envs``.

    The error keeps its type (callers catch ``ModelTimeoutError`` and the like), its traceback
    and its cause. ``exact`` False: the error did not say which request failed, ``indices`` are
    all the sub-envs of the failed batch.
    """
    shown = ", ".join(map(str, indices))
    plural = "s" if len(indices) > 1 else ""
    where = f"in sub-env{plural} {shown}" if exact else f"in the model batch of sub-env{plural} {shown}"
    if exc.args and isinstance(exc.args[0], str):
        exc.args = (f"vector step failed {where}, nothing recorded: {exc.args[0]}", *exc.args[1:])
    exc.sub_envs = list(indices)  # type: ignore[attr-defined]


def make_vector_env(num_envs: int = 1, **kwargs: Any) -> DreamVectorEnv:
    """``vector_entry_point`` of the DreamGym ids: ``gym.make_vec(id, num_envs=N, **kwargs)``."""
    kwargs.pop("vectorization_mode", None)
    max_episode_steps = kwargs.pop("max_episode_steps", None)
    kwargs.setdefault("max_steps", max_episode_steps)
    return DreamVectorEnv(num_envs, **kwargs)


def sub_envs(env: gym.Env | VectorEnv) -> list[DreamEnv]:
    """The DreamEnv instances behind a single env, a wrapped env or a DreamVectorEnv."""
    base = env.unwrapped
    if isinstance(base, DreamVectorEnv):
        return list(base.envs)
    if isinstance(base, DreamEnv):
        return [base]
    return []
