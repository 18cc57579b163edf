"""NoisyPolicy: another policy, with a random admissible action a share of the time."""

from __future__ import annotations

from typing import Any

import numpy as np

from dreamgym_env.agents.random import RandomPolicy
from dreamgym_env.domain import Policy
from dreamgym_env.errors import ConfigurationError


class NoisyPolicy:
    """Epsilon-random: with probability ``epsilon`` a random admissible action, else ``policy``'s.

    Used to collect diverse offline data around an expert's behaviour (detours, wrong clicks,
    recoveries). The wrapped policy must cope with pages it did not lead to.

    Example:
        >>> noisy = NoisyPolicy(lambda obs, info: "open[door]", epsilon=0.0, seed=0)
        >>> noisy("room", {"admissible_actions": ["look"]})
        'open[door]'
    """

    def __init__(self, policy: Policy, epsilon: float = 0.3, seed: int | None = None) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ConfigurationError(f"epsilon must be in [0, 1], got {epsilon}")
        self.policy, self.epsilon = policy, epsilon
        self.rng = np.random.default_rng(seed)
        self.random = RandomPolicy(seed=int(self.rng.integers(2**31)))

    def reset(self) -> None:
        """Forward a new episode to the wrapped policy (if it keeps state)."""
        reset = getattr(self.policy, "reset", None)
        if callable(reset):
            reset()

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        if self.rng.random() < self.epsilon:
            return self.random(observation, info)
        return self.policy(observation, info)
