"""ReplayGrounding: retrieved real transitions in every experience request, new ones written back."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from dreamgym_env.domain import ParsedAction
from dreamgym_env.envs.synthetic import DreamEnv, RemoveHook
from dreamgym_env.envs.vector import sub_envs
from dreamgym_env.errors import ConfigurationError, SpaceMismatchError
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.grounding import (
    COMPACT_DEMO_NEXT_STATE_CHARS,
    COMPACT_DEMO_STATE_CHARS,
    DEFAULT_K,
    ReplayGrounder,
)
from dreamgym_env.replay.records import GROUNDING_SOURCES, SOURCES
from dreamgym_env.types import Source, Step, Task, state_text


def _ground(
    env: gym.Env | VectorEnv,
    buffer: ExperienceReplayBuffer,
    k: int,
    write_back: bool,
    sources: Sequence[Source] | None,
    record_invalid: bool,
    state_chars: int | None,
    next_state_chars: int | None,
) -> tuple[list[DreamEnv], ReplayGrounder, _Hooks]:
    """The synthetic envs behind ``env``, the grounder of the wrapper's arguments and its hooks on them."""
    dream_envs = _dream_envs(env)
    grounder = ReplayGrounder(
        buffer,
        k=k,
        sources=sources,
        write_back=write_back,
        record_invalid=record_invalid,
        state_chars=state_chars,
        next_state_chars=next_state_chars,
        # what an action names, by the synthetic envs' domain (one domain per wrapper)
        action_arguments=dream_envs[0].domain.action_arguments if dream_envs else None,
    )
    return dream_envs, grounder, _Hooks(grounder, dream_envs, _inner_hooks(env))


def _dream_envs(env: gym.Env | VectorEnv) -> list[DreamEnv]:
    """The synthetic envs behind ``env``: itself, a vector env's sub-envs, a SimToReal's synthetic side."""
    found = sub_envs(env)
    synthetic = getattr(env.unwrapped, "synthetic_env", None)  # SimToReal and alike
    if not found and synthetic is not None:
        found = sub_envs(synthetic)
    return found


class _Hooks:
    """The hooks one grounding wrapper put into synthetic envs, and the inner grounding it suspended.

    Grounding an env twice must not give 2k demonstrations and two writes a step: the outermost
    grounding wins. A new grounding suspends the one it wraps (its hooks removed) and gives it
    back on close, which leaves the wrapped env as it found it.
    """

    def __init__(self, grounder: ReplayGrounder, dream_envs: list[DreamEnv], inner: Any) -> None:
        self.grounder = grounder
        self.dream_envs = dream_envs
        self.inner: _Hooks | None = inner
        self.removers: list[RemoveHook] = []
        self.active = False
        if self.inner is not None:
            self.inner.suspend()
        self.resume()

    def resume(self) -> None:
        if self.active:
            return
        for env in self.dream_envs:
            self.removers.append(env.add_context_provider(self.grounder.demonstrations))
            self.removers.append(env.add_recorded_lookup(self.grounder.recorded_next_state))
            self.removers.append(env.add_step_listener(self.grounder.record_synthetic()))
        self.active = True

    def suspend(self) -> None:
        for remove in self.removers:
            remove()
        self.removers.clear()
        self.active = False

    def close(self) -> None:
        """Remove this grounding's hooks and give the wrapped grounding back its own."""
        was_active = self.active
        self.suspend()
        if self.inner is not None and was_active:
            self.inner.resume()
        self.inner = None


def _inner_hooks(env: Any) -> _Hooks | None:
    """The hooks of the nearest grounding wrapper inside ``env``'s wrapper chain, if any."""
    while env is not None:
        hooks = getattr(env, "_hooks", None)
        if isinstance(hooks, _Hooks):
            return hooks
        env = getattr(env, "env", None)
    return None


def _check_text_spaces(name: str, observation_space: spaces.Space, action_space: spaces.Space) -> None:
    for kind, space in (("observation", observation_space), ("action", action_space)):
        if not isinstance(space, spaces.Text):
            raise SpaceMismatchError(
                f"{name} needs a text {kind} space (gymnasium.spaces.Text), got {space!r}"
            )


def _record_source(info: dict[str, Any], hooked: bool) -> Source | None:
    """Which source tag a step seen by the wrapper gets, or ``None`` when a listener recorded it."""
    source = info.get("source")
    if source == "synthetic" and hooked:
        return None  # the DreamEnv's step listener wrote it already
    if source in SOURCES:
        return source  # type: ignore[no-any-return]
    return None if hooked else "real"


class ReplayGrounding(gym.Wrapper[str, str, str, str]):
    """Ground a synthetic env's experience model in a replay buffer, and enrich the buffer.

    Before each valid step, the k transitions of ``buffer`` whose ``(state, action)`` are most
    similar to the step's (cosine of their embeddings, same domain, sources in ``sources``) are
    added to the experience request as demonstrations, their states compacted to bound the
    prompt. After each step the transition is written back: steps predicted by the model are
    tagged ``synthetic``; steps of a real (reference) env, whose ``info["source"]`` is
    ``"real"``, are tagged ``real``. Invalid-action steps are not written unless
    ``record_invalid``. A synthetic env made with ``supply="replay"`` also takes the next
    state of a stored real transition of exactly its ``(state, action)`` as given fields
    (``info["field_sources"]`` says ``"replay"``): the model writes only what no recording fixes.

    Accepts a :class:`~dreamgym_env.envs.synthetic.DreamEnv` (wrapped or not), a SimToReal env
    (grounds its synthetic side, records its real steps), or any text env reporting
    ``info["source"] = "real"`` (write-back only). Observation and action spaces must be
    :class:`gymnasium.spaces.Text`; they are unchanged. Vector envs take
    :class:`VectorReplayGrounding`.

    The wrapper leaves the wrapped env as it found it: its hooks are removed on ``close()``.
    Wrapping an already grounded env grounds it once: the outer wrapper's retrieval and
    write-back replace the inner one's (k demonstrations a request, one write a step) until
    the outer wrapper is closed. The buffer is not closed with the wrapper (it may be shared);
    the wrapper commits it.

    Example:
        >>> buffer = ExperienceReplayBuffer("webshop.db")                          # doctest: +SKIP
        >>> buffer.load_jsonl("webshop_offline.jsonl")                              # doctest: +SKIP
        >>> env = ReplayGrounding(gym.make("DreamGym/WebShop-v0"), buffer, k=4)   # doctest: +SKIP
        >>> obs, info = env.reset(seed=0)                                           # doctest: +SKIP
        >>> obs, reward, terminated, truncated, info = env.step("search[red shoes]")  # doctest: +SKIP
        >>> info["demonstrations"]                                                  # doctest: +SKIP
        4

    Args:
        env: the env to ground.
        buffer: an :class:`~dreamgym_env.replay.buffer.ExperienceReplayBuffer`.
        k: demonstrations per request (0: write-back only).
        write_back: write new transitions to the buffer.
        sources: sources retrieved (default offline and real; ``None``: all, synthetic included).
        record_invalid: also write back invalid-action steps.
        state_chars, next_state_chars: compaction of text demonstration pages; structured (JSON)
            states are compacted field by field (``None``: every state whole).
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        buffer: ExperienceReplayBuffer,
        k: int = DEFAULT_K,
        write_back: bool = True,
        sources: Sequence[Source] | None = GROUNDING_SOURCES,
        *,
        record_invalid: bool = False,
        state_chars: int | None = COMPACT_DEMO_STATE_CHARS,
        next_state_chars: int | None = COMPACT_DEMO_NEXT_STATE_CHARS,
    ) -> None:
        if isinstance(env, VectorEnv):
            raise ConfigurationError(
                "ReplayGrounding wraps a single env; use VectorReplayGrounding for vector envs"
            )
        _check_text_spaces(type(self).__name__, env.observation_space, env.action_space)
        super().__init__(env)
        self.dream_envs, self.grounder, self._hooks = _ground(
            env, buffer, k, write_back, sources, record_invalid, state_chars, next_state_chars
        )
        self._state = ""
        self._task: Task | None = None
        self._episode_id = ""
        self._step_index = 0

    @property
    def buffer(self) -> ExperienceReplayBuffer:
        return self.grounder.buffer

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        task = info.get("task")
        self._task = task if isinstance(task, Task) else None
        self._state = state_text(observation, info)
        self._episode_id = uuid.uuid4().hex
        self._step_index = 0
        return observation, info

    def step(self, action: str) -> tuple[str, Any, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        source = _record_source(info, hooked=bool(self.dream_envs)) if self._hooks.active else None
        task = info.get("task", self._task)
        valid = bool(info.get("action_valid", True))
        state = state_text(observation, info)
        if source is not None and isinstance(task, Task):
            step = Step(
                state=self._state,
                action=action if isinstance(action, str) else repr(action),
                next_state=state,
                reward=float(reward),
                done=bool(terminated),
                action_valid=valid,
                reasoning=str(info.get("reasoning") or ""),
            )
            self.grounder.record(
                task, step, source=source, episode_id=self._episode_id, step_index=self._step_index
            )
        self._step_index += 1
        if valid:  # after an invalid action the page itself is unchanged
            self._state = state
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        self._hooks.close()
        self.grounder.buffer.commit()
        super().close()


class VectorReplayGrounding(VectorWrapper):
    """:class:`ReplayGrounding` for vector envs; retrieval for all sub-envs in one batch.

    On a :class:`~dreamgym_env.envs.vector.DreamVectorEnv`, each ``step`` embeds the keys of all
    sub-envs and searches the index once (:meth:`ExperienceReplayBuffer.search_many`) before the
    sub-envs build their requests; each sub-env's steps are written back as ``synthetic``. On
    any other vector env of text spaces whose infos carry ``source`` (``"real"``), steps are
    written back from the vector step results (Gymnasium's next-step autoreset only).

    Same arguments as :class:`ReplayGrounding`.
    """

    def __init__(
        self,
        env: VectorEnv,
        buffer: ExperienceReplayBuffer,
        k: int = DEFAULT_K,
        write_back: bool = True,
        sources: Sequence[Source] | None = GROUNDING_SOURCES,
        *,
        record_invalid: bool = False,
        state_chars: int | None = COMPACT_DEMO_STATE_CHARS,
        next_state_chars: int | None = COMPACT_DEMO_NEXT_STATE_CHARS,
    ) -> None:
        _check_text_spaces(type(self).__name__, env.single_observation_space, env.single_action_space)
        super().__init__(env)
        self.dream_envs, self.grounder, self._hooks = _ground(
            env, buffer, k, write_back, sources, record_invalid, state_chars, next_state_chars
        )
        if not self.dream_envs:
            mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
            if mode != AutoresetMode.NEXT_STEP:
                raise ConfigurationError(
                    f"{type(self).__name__} records real vector envs in NEXT_STEP autoreset mode only, got {mode}"
                )
        n = env.num_envs
        self._states = [""] * n
        self._tasks: list[Task | None] = [None] * n
        self._episode_ids = [""] * n
        self._step_indices = [0] * n
        self._resetting = np.zeros(n, dtype=bool)

    @property
    def buffer(self) -> ExperienceReplayBuffer:
        return self.grounder.buffer

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        for i in range(self.num_envs):
            self._start_episode(i, observations[i], infos)
        self._resetting[:] = False
        return observations, infos

    def _start_episode(self, i: int, observation: str, infos: dict[str, Any]) -> None:
        self._states[i] = str(_info_item(infos, "state", i, default=observation))
        self._tasks[i] = _info_item(infos, "task", i)
        self._episode_ids[i] = uuid.uuid4().hex
        self._step_indices[i] = 0

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        self._prefetch(actions)
        try:
            observations, rewards, terminations, truncations, infos = self.env.step(actions)
        finally:
            self.grounder.clear_prefetched()
        if not self.dream_envs and self._hooks.active:
            self._record_real(actions, observations, rewards, terminations, infos)
        self._resetting = np.asarray(terminations, dtype=bool) | np.asarray(truncations, dtype=bool)
        return observations, rewards, terminations, truncations, infos

    def _prefetch(self, actions: Any) -> None:
        """Retrieve for every sub-env's (state, action) at once; the providers pick the results up."""
        if not self.dream_envs or self.grounder.k == 0 or not self._hooks.active:
            return
        by_domain: dict[str, list[tuple[str, str]]] = {}
        for dream_env, action in zip(self.dream_envs, actions, strict=True):
            if dream_env.task is None or not isinstance(action, str):
                continue
            parsed = dream_env.domain.parse_action(action)
            if isinstance(parsed, ParsedAction):
                by_domain.setdefault(dream_env.task.domain, []).append((dream_env.state, parsed.text))
        for domain, pairs in by_domain.items():
            self.grounder.prefetch(domain, pairs)

    def _record_real(
        self, actions: Any, observations: Any, rewards: Any, terminations: Any, infos: dict[str, Any]
    ) -> None:
        for i in range(self.num_envs):
            if self._resetting[i]:  # this step reset sub-env i and ignored its action
                self._start_episode(i, observations[i], infos)
                continue
            source = _record_source({"source": _info_item(infos, "source", i)}, hooked=False)
            task = _info_item(infos, "task", i) or self._tasks[i]
            valid = bool(_info_item(infos, "action_valid", i, default=True))
            state = str(_info_item(infos, "state", i, default=observations[i]))
            if source is not None and isinstance(task, Task):
                step = Step(
                    state=self._states[i],
                    action=str(actions[i]),
                    next_state=state,
                    reward=float(rewards[i]),
                    done=bool(terminations[i]),
                    action_valid=valid,
                )
                self.grounder.record(
                    task,
                    step,
                    source=source,
                    episode_id=self._episode_ids[i],
                    step_index=self._step_indices[i],
                )
            self._step_indices[i] += 1
            if valid:
                self._states[i] = state

    def close(self, **kwargs: Any) -> None:
        self._hooks.close()
        self.grounder.buffer.commit()
        super().close(**kwargs)


def _info_item(infos: dict[str, Any], key: str, i: int, default: Any = None) -> Any:
    """Entry ``i`` of a vector env's batched info ``key`` (``default`` where it is absent)."""
    values = infos.get(key)
    mask = infos.get(f"_{key}")
    if values is None or (mask is not None and not mask[i]):
        return default
    return values[i]
