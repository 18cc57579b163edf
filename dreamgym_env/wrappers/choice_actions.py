"""ChoiceActions: a Discrete action space over a text env's admissible actions, with masks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from dreamgym_env.domain import ACTION_SLOT, Domain, fill_with_instruction
from dreamgym_env.errors import ConfigurationError, SpaceMismatchError
from dreamgym_env.types import Task

DEFAULT_MAX_ACTIONS = 32
INVALID_CHOICE = ""
"""What an index past the candidates sends to the env: an invalid action (failure feedback)."""
Fill = Callable[[str, dict[str, Any], str], Sequence[str]]
"""Turns an admissible action with a free slot into concrete actions, given the step's info and
observation: ``fill(action, info, observation)``."""


def instruction_of(info: dict[str, Any]) -> str:
    """The task instruction from ``info["task"]`` ("" without a task)."""
    task = info.get("task")
    return task.instruction if isinstance(task, Task) else ""


def domain_of(env: gym.Env) -> Domain | None:
    """The domain of a DreamGym env (synthetic or reference, wrapped or not), else ``None``."""
    domain = getattr(env.unwrapped, "domain", None)
    return domain if isinstance(domain, Domain) else None


def slot_filler(domain: Domain | None) -> Fill:
    """Fill free slots the domain's way (:meth:`Domain.fill_slots`); without a domain, with the instruction."""
    fill_slots = domain.fill_slots if domain is not None else fill_with_instruction

    def fill(action: str, info: dict[str, Any], observation: str) -> list[str]:
        task = info.get("task")
        return fill_slots(action, task if isinstance(task, Task) else None, observation)

    return fill


def candidate_actions(info: dict[str, Any], max_actions: int, fill: Fill, observation: str = "") -> list[str]:
    """The concrete candidate actions of a step: admissible actions, placeholders filled, at most K."""
    admissible = info.get("admissible_actions")
    if admissible is None:
        raise ConfigurationError(
            "ChoiceActions needs info['admissible_actions'] from the env (a domain with admissible actions)"
        )
    out: list[str] = []
    for action in admissible:
        for concrete in fill(action, info, observation) if ACTION_SLOT.search(action) else (action,):
            if concrete not in out:
                out.append(concrete)
    return out[:max_actions]


class ChoiceActions(gym.Wrapper):
    """Turn a text-action env into ``Discrete(max_actions)`` over its admissible actions.

    Accepts an env whose action space is a :class:`gymnasium.spaces.Text` (e.g.
    :class:`~dreamgym_env.spaces.UnicodeText`) and whose ``info`` lists
    ``admissible_actions`` at reset and after every step; refuses other action spaces with a
    :class:`~dreamgym_env.errors.SpaceMismatchError`. Observations pass through unchanged.

    Index ``i`` takes the ``i``-th candidate of the current step: the admissible actions in
    their order, each free slot (``<query>``) filled by ``fill`` (default: the env's domain's
    :meth:`~dreamgym_env.domain.Domain.fill_slots`), duplicates dropped, at most ``max_actions`` kept. An index past the candidates
    sends :data:`INVALID_CHOICE`, which the env answers as an invalid action (failure feedback,
    reward 0). :meth:`action_masks` marks the real candidates, as sb3-contrib's MaskablePPO
    expects; ``info["action_candidates"]`` lists them and ``info["action_text"]`` names the
    action a step took.

    Example:
        >>> env = ChoiceActions(gym.make("DreamGym/WebShop-Ref-v0"), max_actions=32)  # doctest: +SKIP
        >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
        >>> info["action_candidates"][0], env.action_masks()[:2]  # doctest: +SKIP
        ('search[i need a long sleeve ...]', array([ True, False]))
    """

    def __init__(
        self, env: gym.Env, max_actions: int = DEFAULT_MAX_ACTIONS, fill: Fill | None = None
    ) -> None:
        if not isinstance(env.action_space, spaces.Text):
            raise SpaceMismatchError(
                f"ChoiceActions accepts a Text action space, got {type(env.action_space).__name__}"
            )
        if max_actions < 1:
            raise ConfigurationError(f"max_actions must be >= 1, got {max_actions}")
        super().__init__(env)
        self.max_actions = max_actions
        self.fill = fill if fill is not None else slot_filler(domain_of(env))
        self.action_space = spaces.Discrete(max_actions)
        self.candidates: list[str] = []

    def _update(self, observation: Any, info: dict[str, Any]) -> dict[str, Any]:
        self.candidates = candidate_actions(info, self.max_actions, self.fill, str(observation))
        return {**info, "action_candidates": list(self.candidates)}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, self._update(observation, info)

    def action(self, index: Any) -> str:
        """The action text that index ``index`` takes now."""
        i = int(index)
        return self.candidates[i] if 0 <= i < len(self.candidates) else INVALID_CHOICE

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        text = self.action(action)
        observation, reward, terminated, truncated, info = self.env.step(text)
        return (
            observation,
            reward,
            terminated,
            truncated,
            {**self._update(observation, info), "action_text": text},
        )

    def action_masks(self) -> np.ndarray:
        """``(max_actions,)`` booleans: True for the indices that are candidates now."""
        mask = np.zeros(self.max_actions, dtype=bool)
        mask[: len(self.candidates)] = True
        if not mask.any():  # a page without actions (the episode's end): any index, a reset comes first
            mask[:] = True
        return mask
