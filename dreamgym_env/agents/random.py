"""RandomPolicy: a uniformly random admissible action."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from dreamgym_env.domain import ACTION_SLOT
from dreamgym_env.errors import ConfigurationError

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")


class RandomPolicy:
    """Picks one of ``info["admissible_actions"]`` uniformly, with its own seeded RNG.

    A free slot in an admissible action (``<query>`` in ``search[<query>]``) is filled with
    one to three words drawn from the observation, so random free text is plausible.

    Example:
        >>> policy = RandomPolicy(seed=0)
        >>> policy("A red door.", {"admissible_actions": ["open[red door]"]})
        'open[red door]'
    """

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        actions = info.get("admissible_actions")
        if not actions:
            raise ConfigurationError("RandomPolicy needs info['admissible_actions'] (a non-empty list)")
        action = str(actions[int(self.rng.integers(len(actions)))])
        if ACTION_SLOT.search(action):
            words = _WORD.findall(observation) or ["item"]
            count = int(self.rng.integers(1, 4))
            filler = " ".join(words[int(i)] for i in self.rng.integers(len(words), size=count))
            action = ACTION_SLOT.sub(filler, action)
        return action
