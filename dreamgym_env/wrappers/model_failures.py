"""TruncateOnModelError: a synthetic step the model cannot answer ends the episode, not the training."""

from __future__ import annotations

import logging
from typing import Any, SupportsFloat

import gymnasium as gym

from dreamgym_env.errors import ExperienceModelError, ModelOutputError

logger = logging.getLogger(__name__)


class TruncateOnModelError(gym.Wrapper):
    """End the episode, truncated, when the experience model fails a step after its re-asks.

    A learned model's own episodes drift off the transitions it was trained on, and on a state
    far enough from them it may keep answering malformed transitions; the synthetic env then
    raises :class:`~dreamgym_env.errors.ModelOutputError` and records nothing. A long training
    run should lose that episode, not the run: this wrapper returns the last observation
    unchanged with reward 0, ``terminated=False``, ``truncated=True`` and
    ``info["model_error"]`` (the error's text), so the agent resets as after a time limit.

    Only the errors in ``errors`` are caught (by default the model's unusable answers);
    transport errors (the endpoint is down, every attempt timed out) still raise, since every
    following step would fail too. :attr:`failures` counts the truncated steps and
    :attr:`steps` every step asked, so a report can state the share.

    Example:
        >>> env = TruncateOnModelError(gym.make("DreamGym/WebShop-v0"))  # doctest: +SKIP
        >>> env.reset(seed=0); env.step("search[red shoes]")  # doctest: +SKIP
    """

    def __init__(
        self,
        env: gym.Env,
        errors: tuple[type[ExperienceModelError], ...] = (ModelOutputError,),
    ) -> None:
        super().__init__(env)
        self.errors = errors
        self.failures = 0
        self.steps = 0
        self._last: tuple[Any, dict[str, Any]] | None = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self._last = (observation, info)
        return observation, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        self.steps += 1
        try:
            observation, reward, terminated, truncated, info = self.env.step(action)
        except self.errors as exc:
            if self._last is None:  # a step before any reset is the env's error to report
                raise
            self.failures += 1
            logger.warning("the experience model failed a step; the episode ends truncated: %s", exc)
            observation, info = self._last
            return observation, 0.0, False, True, {**info, "model_error": f"{type(exc).__name__}: {exc}"}
        self._last = (observation, info)
        return observation, reward, terminated, truncated, info
