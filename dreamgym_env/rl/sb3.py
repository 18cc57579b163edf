"""Stable-Baselines3 adapters: a candidate-scoring policy, env set-up, callbacks, evaluation.

Needs the ``sb3`` extra (``stable-baselines3``; ``sb3-contrib`` for :class:`MaskableCandidatePolicy`).
The policy reads the observations of :class:`~dreamgym_env.wrappers.EmbedObservation` over
:class:`~dreamgym_env.wrappers.ChoiceActions`: one shared network scores every candidate action
from its embedding and features, so that what it learns about "a result row that covers the
instruction" holds at every position of the list.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import Schedule
from torch import nn

from dreamgym_env.errors import ConfigurationError, SpaceMismatchError
from dreamgym_env.replay.embedders import Embedder
from dreamgym_env.types import Task
from dreamgym_env.wrappers.choice_actions import DEFAULT_MAX_ACTIONS, ChoiceActions
from dreamgym_env.wrappers.embed_observation import EmbedObservation

DEFAULT_HIDDEN = 64
DEFAULT_PAGE_DIM = 32
_KEYS = ("task", "state", "actions", "features", "progress")
RECENT_EPISODES = 200
"""Finished episodes in the success rate of a progress line."""


def wrap_for_sb3(
    env: gym.Env,
    embedder: Embedder | str | None = "hashed",
    *,
    max_actions: int = DEFAULT_MAX_ACTIONS,
    horizon: int | None = None,
) -> EmbedObservation:
    """``EmbedObservation(ChoiceActions(env))``: a text env as SB3 sees it (Dict obs, Discrete actions)."""
    kwargs = {} if horizon is None else {"horizon": horizon}
    return EmbedObservation(ChoiceActions(env, max_actions=max_actions), embedder, **kwargs)


class CandidateEncoder(BaseFeaturesExtractor):
    """Score each candidate action with one shared network; summarise the page for the critic.

    Input: the Dict observation of :class:`~dreamgym_env.wrappers.EmbedObservation`. The page
    (state, task and progress vectors) is projected to ``page_dim``; each candidate's input is
    its action embedding, its features and the page projection; two ``hidden``-wide layers
    and a linear score follow. Output: ``[scores (K) | mean hidden of the candidates | page]``.
    """

    def __init__(
        self, observation_space: spaces.Dict, hidden: int = DEFAULT_HIDDEN, page_dim: int = DEFAULT_PAGE_DIM
    ) -> None:
        if not isinstance(observation_space, spaces.Dict) or set(observation_space.spaces) != set(_KEYS):
            raise SpaceMismatchError(
                f"CandidateEncoder reads EmbedObservation's Dict space with keys {_KEYS}, got {observation_space!r}"
            )
        k, d = observation_space["actions"].shape  # type: ignore[misc]
        f = observation_space["features"].shape[1]  # type: ignore[index]
        g = observation_space["progress"].shape[0]  # type: ignore[index]
        super().__init__(observation_space, features_dim=k + hidden + page_dim)
        self.max_actions = k
        self.page = nn.Sequential(nn.Linear(2 * d + g, page_dim), nn.Tanh())
        self.candidate = nn.Sequential(
            nn.Linear(d + f + page_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh()
        )
        self.score = nn.Linear(hidden, 1)
        self.linear = nn.Linear(f, 1, bias=False)  # a direct path: features such as overlap count at once

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        page = self.page(
            th.cat([observations["state"], observations["task"], observations["progress"]], dim=-1)
        )
        features = observations["features"]
        inputs = th.cat(
            [observations["actions"], features, page.unsqueeze(1).expand(-1, self.max_actions, -1)], dim=-1
        )
        hidden = self.candidate(inputs)
        scores = (self.score(hidden) + self.linear(features)).squeeze(-1)
        present = features[..., :1]
        pooled = (hidden * present).sum(dim=1) / present.sum(dim=1).clamp(min=1.0)
        return th.cat([scores, pooled, page], dim=-1)


class CandidateHeads(nn.Module):
    """The actor takes the candidate scores as logits; the critic is an MLP over the summary."""

    def __init__(self, features_dim: int, max_actions: int, critic_hidden: int = DEFAULT_HIDDEN) -> None:
        super().__init__()
        self.max_actions = max_actions
        self.latent_dim_pi = max_actions
        self.latent_dim_vf = critic_hidden
        self.value_net = nn.Sequential(nn.Linear(features_dim - max_actions, critic_hidden), nn.Tanh())

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return features[:, : self.max_actions]

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        return self.value_net(features[:, self.max_actions :])


def _set_heads(policy: ActorCriticPolicy) -> None:
    k = int(policy.observation_space["actions"].shape[0])  # type: ignore[index]
    policy.mlp_extractor = CandidateHeads(policy.features_dim, k)  # type: ignore[assignment]


def _finish_build(policy: ActorCriticPolicy, lr_schedule: Schedule) -> None:
    """Take the encoder's scores as the logits, start them near uniform, rebuild the optimizer."""
    policy.action_net = nn.Identity()
    encoder = policy.features_extractor
    if not isinstance(encoder, CandidateEncoder):
        raise SpaceMismatchError(
            f"the candidate policies need a CandidateEncoder, got {type(encoder).__name__}"
        )
    nn.init.orthogonal_(encoder.score.weight, gain=0.01)
    nn.init.zeros_(encoder.score.bias)
    nn.init.zeros_(encoder.linear.weight)
    policy.optimizer = policy.optimizer_class(  # type: ignore[call-arg]
        policy.parameters(), lr=lr_schedule(1), **policy.optimizer_kwargs
    )


class _CandidateScoring:
    """What both candidate policies change in their actor-critic base (the class after this one)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("features_extractor_class", CandidateEncoder)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        _set_heads(self)  # type: ignore[arg-type]

    def _build(self, lr_schedule: Schedule) -> None:
        super()._build(lr_schedule)  # type: ignore[misc]
        _finish_build(self, lr_schedule)  # type: ignore[arg-type]


class CandidatePolicy(_CandidateScoring, ActorCriticPolicy):
    """PPO/A2C policy over ``EmbedObservation(ChoiceActions(env))`` that scores each candidate.

    The logits are the :class:`CandidateEncoder` scores (no extra action layer); the critic is
    an MLP over the encoder's summary.

    Example:
        >>> from stable_baselines3 import PPO
        >>> model = PPO(CandidatePolicy, wrap_for_sb3(env))  # doctest: +SKIP
    """


if importlib.util.find_spec("sb3_contrib") is not None:
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    class MaskableCandidatePolicy(_CandidateScoring, MaskableActorCriticPolicy):
        """:class:`CandidatePolicy` for sb3-contrib's MaskablePPO (padding slots masked out)."""


def is_maskable(model: Any) -> bool:
    """Whether ``model`` is an sb3-contrib maskable model (its ``predict`` takes ``action_masks``)."""
    if importlib.util.find_spec("sb3_contrib") is None:
        return False
    return isinstance(getattr(model, "policy", None), MaskableActorCriticPolicy)


# -- training helpers --------------------------------------------------------------------------
@dataclass
class EpisodeLog:
    """Finished training episodes: env steps at the end of each, whether it was won, its source."""

    timesteps: list[int] = field(default_factory=list)
    won: list[bool] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def success_curve(self, window: int = 200) -> tuple[np.ndarray, np.ndarray]:
        """``(timesteps, rolling success rate over the last window episodes)``."""
        won = np.asarray(self.won, dtype=float)
        if won.size == 0:
            return np.zeros(0), np.zeros(0)
        cumulative = np.concatenate([[0.0], np.cumsum(won)])
        idx = np.arange(1, won.size + 1)
        start = np.maximum(0, idx - window)
        return np.asarray(self.timesteps), (cumulative[idx] - cumulative[start]) / (idx - start)


class TrainingMonitor(BaseCallback):
    """Logs finished episodes and counts real steps; stops training when ``real_step_budget`` is spent.

    A step is real when its ``info["source"]`` is ``"real"`` (the reference env, or
    :class:`~dreamgym_env.wrappers.SimToReal` serving from the real env). With
    ``progress_every_s``, ``report`` gets a progress line (timesteps, episodes, recent success,
    steps per second) at the first step that many seconds of ``clock`` after training started
    or after the last line.
    """

    def __init__(
        self,
        real_step_budget: int | None = None,
        log: EpisodeLog | None = None,
        *,
        progress_every_s: float | None = None,
        report: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        if progress_every_s is not None and progress_every_s <= 0:
            raise ConfigurationError(f"progress_every_s must be > 0 or None, got {progress_every_s}")
        self.real_step_budget = real_step_budget
        self.real_steps = 0
        self.log = log if log is not None else EpisodeLog()
        self.progress_every_s, self.report, self.clock = progress_every_s, report, clock
        self._last_line_at = 0.0
        self._last_line_timesteps = 0

    def _on_training_start(self) -> None:
        self._last_line_at, self._last_line_timesteps = self.clock(), self.num_timesteps

    def _on_step(self) -> bool:
        infos: Sequence[dict[str, Any]] = self.locals.get("infos", ())
        dones = self.locals.get("dones", np.zeros(len(infos), dtype=bool))
        for info, done in zip(infos, dones, strict=True):
            if info.get("source") == "real":
                self.real_steps += 1
            if done:
                self.log.timesteps.append(self.num_timesteps)
                self.log.won.append(bool(info.get("won", False)))
                self.log.sources.append(str(info.get("source", "")))
        if self.progress_every_s is not None:
            now = self.clock()
            if now - self._last_line_at >= self.progress_every_s:
                self.report(self._progress_line(now - self._last_line_at))
                self._last_line_at, self._last_line_timesteps = now, self.num_timesteps
        return self.real_step_budget is None or self.real_steps < self.real_step_budget

    def _progress_line(self, seconds: float) -> str:
        """Where training stands, with the steps per second over the last ``seconds``."""
        recent = self.log.won[-RECENT_EPISODES:]
        success = (
            f"success {sum(recent) / len(recent):.1%} over the last {len(recent)}"
            if recent
            else "none finished yet"
        )
        budget = (
            f", {self.real_steps:,} of {self.real_step_budget:,} real steps"
            if self.real_step_budget is not None
            else ""
        )
        rate = (self.num_timesteps - self._last_line_timesteps) / seconds
        return (
            f"{self.num_timesteps:,} steps, {len(self.log.won):,} episodes ({success}){budget}, "
            f"{rate:.1f} steps/s"
        )


@dataclass(frozen=True)
class EvalResult:
    """Success over evaluation episodes (one per task)."""

    episodes: int
    wins: int
    mean_steps: float

    @property
    def success(self) -> float:
        return self.wins / self.episodes if self.episodes else 0.0


def evaluate_policy_on_tasks(
    model: Any, env: gym.Env, tasks: Sequence[Task], *, deterministic: bool = True, seed: int = 0
) -> EvalResult:
    """Run ``model`` (an SB3 model) once on each task of ``tasks`` in ``env``; count wins.

    ``env`` is a ``wrap_for_sb3`` env (or any env with ``action_masks`` for maskable models);
    masks are passed when the model takes them.
    """
    maskable = is_maskable(model)
    wins, steps = 0, 0
    for i, task in enumerate(tasks):
        observation, info = env.reset(seed=seed + i, options={"task": task})
        done = False
        while not done:
            kwargs = {"action_masks": env.get_wrapper_attr("action_masks")()} if maskable else {}
            action, _ = model.predict(observation, deterministic=deterministic, **kwargs)
            observation, _, terminated, truncated, info = env.step(int(action))
            steps += 1
            done = terminated or truncated
        wins += bool(info.get("won", False))
    return EvalResult(len(tasks), wins, steps / max(1, len(tasks)))
