"""RayVectorEnv: one Gymnasium vector env whose sub-env batches live in Ray actors."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import ray
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space
from ray.exceptions import RayActorError, RayTaskError

from dreamgym_env.envs.vector import DreamVectorEnv, batch_infos
from dreamgym_env.errors import ConfigurationError, WorkerLostError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.scale.infos import unbatch_infos

EnvSource = str | Callable[[int], VectorEnv]
"""A Gymnasium id (``gym.make_vec`` in each actor) or a picklable ``num_envs -> VectorEnv``."""
StepTuple = tuple[list[str], np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]


class SubEnvBatch:
    """What one Ray actor holds: a vector env of some of the sub-envs.

    Returns observations and infos per sub-env (lists, not batched: batching is lossy), which
    the driver batches once, so its infos have exactly the layout of an in-process vector env
    of all sub-envs.
    """

    def start(
        self,
        env: EnvSource,
        num_envs: int,
        experience_model: Callable[[], ExperienceModel] | None,
        env_kwargs: dict[str, Any],
    ) -> tuple[gym.Space[Any], gym.Space[Any], dict[str, Any]]:
        """Build the model and the env (a method, not ``__init__``: its errors reach the driver typed)."""
        import dreamgym_env  # noqa: F401  (registers the DreamGym ids in this process)

        self.model = experience_model() if experience_model is not None else None
        kwargs = dict(env_kwargs) if self.model is None else {**env_kwargs, "experience_model": self.model}
        self.env: VectorEnv = (
            gym.make_vec(env, num_envs=num_envs, **kwargs) if isinstance(env, str) else env(num_envs)
        )
        if self.env.num_envs != num_envs:
            raise ConfigurationError(f"the env factory built {self.env.num_envs} sub-envs, not {num_envs}")
        self.num_envs = num_envs
        return self.env.single_observation_space, self.env.single_action_space, dict(self.env.metadata)

    def reset(
        self, seeds: list[int | None] | None, options: dict[str, Any] | None
    ) -> tuple[list[str], list[dict[str, Any]]]:
        observations, infos = self.env.reset(seed=seeds, options=options)  # type: ignore[arg-type]
        return list(observations), self._split(infos)

    def step(self, actions: list[Any]) -> StepTuple:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return list(observations), rewards, terminations, truncations, self._split(infos)

    def _split(self, infos: dict[str, Any]) -> list[dict[str, Any]]:
        """Each sub-env's info: a bare DreamVectorEnv keeps them (exact), others' are split from the batch."""
        if isinstance(self.env, DreamVectorEnv):  # not wrapped: a wrapper may change the infos
            return self.env.sub_env_infos
        return unbatch_infos(infos, self.num_envs)

    def render(self) -> tuple[Any, ...] | None:
        return self.env.render()

    def close(self) -> None:
        self.env.close()
        if self.model is not None:  # built here: the actor's to close
            self.model.close()


class RayVectorEnv(VectorEnv):
    """A vector env of ``num_envs`` sub-envs split over ``num_actors`` Ray actors, driven from one process.

    Each actor holds a vector env of a contiguous slice of the sub-envs (a
    :class:`~dreamgym_env.envs.vector.DreamVectorEnv` for a synthetic id, Gymnasium's vector
    env for a reference id) and one :meth:`step` steps all actors at once. Seeds, autoreset and
    infos are those of one in-process vector env of all the sub-envs: an int seed ``s`` gives
    sub-env ``i`` the seed ``s + i``, autoreset is next-step (each actor's own), and infos are
    batched over all sub-envs. With the same seeds and a deterministic model (the oracle), it
    steps exactly as ``gym.make_vec(env, num_envs)`` does in one process.

    GRPO groups: with ``group_size=G`` every actor holds whole groups of ``G`` consecutive
    sub-envs, so the reset option ``{"group_size": G}`` draws each group's task in one actor.

    Failures: a step that fails in some actor (its model, or any other exception there) raises
    that error (type kept, its ``sub_envs`` counted over all sub-envs); the actors that succeeded
    keep their results and the same ``step(actions)`` retried sends the actions only to the actors
    that failed, so no sub-env steps twice. An actor
    that dies raises :class:`~dreamgym_env.errors.WorkerLostError` naming the lost sub-envs, with
    the other actors' results of that step in its ``completed``; the next :meth:`reset` starts new
    actors for the lost ones.

    Ray: started with ``ray.init(address=address)`` when it is not running yet (``None``: a
    local instance, or the cluster ``RAY_ADDRESS`` names); it is left running at :meth:`close`.

    Example:
        >>> import functools
        >>> from dreamgym_env.envs.oracle import OracleExperienceModel
        >>> envs = RayVectorEnv(
        ...     "DreamGym/WebShop-v0", 8, num_actors=2, group_size=4,
        ...     experience_model=functools.partial(OracleExperienceModel, "webshop"),
        ... )  # doctest: +SKIP
        >>> obs, infos = envs.reset(seed=0, options={"group_size": 4})  # doctest: +SKIP

    Args:
        env: a Gymnasium id (each actor calls ``gym.make_vec(env, num_envs=n, **env_kwargs)``)
            or a picklable callable ``num_envs -> VectorEnv``.
        num_envs: the number of sub-envs in all.
        num_actors: the number of actors; each gets whole groups, as evenly as they split.
        group_size: the size of the groups kept on one actor (1: no grouping).
        experience_model: a zero-argument callable building each actor's model (a model holds
            threads and connections, which do not travel), passed as ``experience_model``.
        address: the Ray cluster to join when Ray is not initialised yet.
        actor_options: ``ray.remote`` options of the actors, e.g. ``{"num_cpus": 1}``.
        env_kwargs: passed to ``gym.make_vec`` in each actor.
    """

    def __init__(
        self,
        env: EnvSource,
        num_envs: int,
        *,
        num_actors: int = 2,
        group_size: int = 1,
        experience_model: Callable[[], ExperienceModel] | None = None,
        address: str | None = None,
        actor_options: Mapping[str, Any] | None = None,
        **env_kwargs: Any,
    ) -> None:
        if num_envs < 1 or num_actors < 1 or group_size < 1:
            raise ConfigurationError(
                f"num_envs, num_actors and group_size must be >= 1, got {num_envs}, {num_actors}, {group_size}"
            )
        if num_envs % group_size:
            raise ConfigurationError(f"group_size {group_size} must divide num_envs {num_envs}")
        groups = num_envs // group_size
        if num_actors > groups:
            raise ConfigurationError(
                f"{num_actors} actors for {groups} groups of {group_size}: each actor needs a whole group"
            )
        if experience_model is not None and not callable(experience_model):
            raise ConfigurationError(
                "experience_model must be a zero-argument callable building the model in each actor "
                f"(a class or functools.partial), got {type(experience_model).__name__}"
            )
        if not ray.is_initialized():
            ray.init(address=address)
        self.num_envs = num_envs
        sizes = [len(part) * group_size for part in np.array_split(np.arange(groups), num_actors)]
        starts = np.cumsum([0, *sizes])
        self.slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(starts)]
        """The sub-envs each actor holds."""
        self._actor_args = (env, experience_model, env_kwargs)
        self._actor_class = ray.remote(SubEnvBatch).options(**dict(actor_options or {}))
        self.actors: list[Any] = []
        """The Ray actor handles, one per slice."""
        self._lost: set[int] = set()
        self._held: dict[int, tuple[list[Any], StepTuple]] = {}
        try:
            started = self._start_actors(range(num_actors))
        except BaseException:
            for actor in self.actors:
                ray.kill(actor)
            raise
        observation_space, action_space, metadata = started[0]
        self.metadata = {**metadata, "render_modes": metadata.get("render_modes", [])}
        self.render_mode = env_kwargs.get("render_mode")
        self.single_observation_space = observation_space
        self.single_action_space = action_space
        self.observation_space = batch_space(observation_space, num_envs)
        self.action_space = batch_space(action_space, num_envs)

    def _start_actors(self, indices: Iterable[int]) -> dict[int, Any]:
        """Start (or replace) the actors of these slices; returns each one's spaces and metadata."""
        env, experience_model, env_kwargs = self._actor_args
        futures = {}
        for k in indices:
            actor: Any = self._actor_class.remote()
            if k < len(self.actors):
                self.actors[k] = actor
            else:
                self.actors.append(actor)
            size = self.slices[k].stop - self.slices[k].start
            futures[k] = actor.start.remote(env, size, experience_model, env_kwargs)
        return self._get(futures)

    # -- gymnasium API -----------------------------------------------------------------------
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Reset every sub-env (starting new actors for lost ones first); seeds and options as in-process.

        ``options["tasks"]`` (one task per sub-env) is split over the actors; ``options["group_size"]``
        must divide every actor's number of sub-envs (build with ``group_size`` to have that).
        """
        super().reset(seed=seed if isinstance(seed, int) else None)
        seeds = self._seeds(seed)
        options = dict(options or {})
        tasks = options.pop("tasks", None)
        if tasks is not None and len(tasks) != self.num_envs:
            raise ConfigurationError(f"options['tasks'] has {len(tasks)} tasks for {self.num_envs} sub-envs")
        group_size = options.get("group_size")
        if group_size is not None and any((s.stop - s.start) % group_size for s in self.slices):
            raise ConfigurationError(
                f"group_size {group_size} would split a group over two actors (actors hold "
                f"{[s.stop - s.start for s in self.slices]} sub-envs): build the RayVectorEnv with "
                f"group_size={group_size}"
            )
        lost, self._lost = sorted(self._lost), set()
        self._start_actors(lost)
        self._held.clear()
        futures = {}
        for k, (actor, part) in enumerate(zip(self.actors, self.slices, strict=True)):
            actor_options = {**options, "tasks": list(tasks[part])} if tasks is not None else options
            futures[k] = actor.reset.remote(None if seeds is None else seeds[part], actor_options or None)
        results = self._get(futures)
        observations = [o for k in range(len(self.actors)) for o in results[k][0]]
        infos = [info for k in range(len(self.actors)) for info in results[k][1]]
        return tuple(observations), batch_infos(infos)

    def _seeds(self, seed: int | list[int | None] | None) -> list[int | None] | None:
        if seed is None:
            return None
        if isinstance(seed, int):
            return [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ConfigurationError(f"got {len(seed)} seeds for {self.num_envs} sub-envs")
        return list(seed)

    def step(
        self, actions: Sequence[Any]
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env: each actor steps its slice, all actors at once.

        Raises:
            WorkerLostError: an actor died (now, or at an earlier step not followed by a reset).
            Exception: the error an actor raised (e.g. ``ModelTimeoutError``), its own type where
                it could travel (else Ray's ``RayTaskError``); retry the step.
        """
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ConfigurationError(f"got {len(actions)} actions for {self.num_envs} sub-envs")
        if self._lost:
            raise WorkerLostError(
                f"sub-envs {self._lost_sub_envs()} were lost with their Ray actor: call reset() to "
                "start new actors",
                sub_envs=self._lost_sub_envs(),
            )
        results: dict[int, StepTuple] = {}
        futures = {}
        for k, (actor, part) in enumerate(zip(self.actors, self.slices, strict=True)):
            held = self._held.get(k)
            if held is None:
                futures[k] = actor.step.remote(actions[part])
            elif held[0] != actions[part]:
                raise ConfigurationError(
                    f"sub-envs {part.start}-{part.stop - 1} stepped already with the actions of the failed "
                    "step: retry it with the same actions, or reset"
                )
            else:
                results[k] = held[1]
        self._held.clear()
        results.update(self._get(futures, keep={k: actions[self.slices[k]] for k in futures}))
        observations = [o for k in range(len(self.actors)) for o in results[k][0]]
        infos = [info for k in range(len(self.actors)) for info in results[k][4]]
        rewards, terminations, truncations = (
            np.concatenate([results[k][j] for k in range(len(self.actors))]) for j in (1, 2, 3)
        )
        return tuple(observations), rewards, terminations, truncations, batch_infos(infos)

    def _get(self, futures: dict[int, Any], *, keep: dict[int, list[Any]] | None = None) -> dict[int, Any]:
        """The result of each actor's call; raises when any actor died or failed.

        With ``keep`` (the actions of a step), the results of the actors that succeeded are held
        for the retry of a failed step.
        """
        results: dict[int, Any] = {}
        lost: list[int] = []
        failed: dict[int, Exception] = {}
        for k, future in futures.items():
            try:
                results[k] = ray.get(future)
            except RayActorError:
                lost.append(k)
            except RayTaskError as exc:
                # Any error, typed or not: the other actors' results are held all the same, or a
                # retry would step their sub-envs twice. The actor's own exception where it travelled.
                failed[k] = exc.cause if isinstance(exc.cause, Exception) else exc
        if lost:
            self._lost.update(lost)
            completed = {}
            if keep is not None:
                for k, result in results.items():
                    for j, i in enumerate(range(self.slices[k].start, self.slices[k].stop)):
                        completed[i] = tuple(part[j] for part in result)
            raise WorkerLostError(
                f"the Ray actor of sub-envs {self._lost_sub_envs()} died; the other sub-envs' results of "
                "this call are in the error's `completed`; call reset() to start new actors",
                sub_envs=self._lost_sub_envs(),
                completed=completed,
            )
        if failed:
            if keep is not None:
                self._held = {k: (keep[k], result) for k, result in results.items()}
            first = next(iter(failed.values()))
            sub_envs = [
                i
                for k, exc in failed.items()
                for i in range(self.slices[k].start, self.slices[k].stop)
                if i - self.slices[k].start in getattr(exc, "sub_envs", range(self.num_envs))
            ]
            if first.args and isinstance(first.args[0], str):
                first.args = (f"in the Ray actor of sub-envs {sub_envs}: {first.args[0]}", *first.args[1:])
            with contextlib.suppress(AttributeError):  # an exception type with __slots__ keeps no attribute
                first.sub_envs = sub_envs  # type: ignore[attr-defined]
            raise first
        return results

    def _lost_sub_envs(self) -> list[int]:
        return [i for k in sorted(self._lost) for i in range(self.slices[k].start, self.slices[k].stop)]

    def render(self) -> tuple[Any, ...] | None:
        """The sub-envs' renders, in order (each actor's env renders its own)."""
        rendered = self._get({k: actor.render.remote() for k, actor in enumerate(self.actors)})
        if any(r is None for r in rendered.values()):
            return None
        return tuple(item for k in range(len(self.actors)) for item in rendered[k])

    def close_extras(self, **kwargs: Any) -> None:
        """Close every living actor's env and end the actors (Ray itself keeps running)."""
        for k, actor in enumerate(self.actors):
            if k not in self._lost:
                with contextlib.suppress(RayActorError):  # died meanwhile: nothing left to close
                    ray.get(actor.close.remote())
            ray.kill(actor)
