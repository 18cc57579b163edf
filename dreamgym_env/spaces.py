"""A text space for free-form observations and actions."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

DEFAULT_MAX_LENGTH = 16_384


class UnicodeText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` that contains any Unicode string up to ``max_length``.

    Gymnasium's ``Text`` default charset is alphanumeric, so ``"search[red shoes]"`` would not be
    a member. Here membership only checks type and length; ``sample`` draws from a printable ASCII
    charset so that samples stay readable.

    Example:
        >>> space = UnicodeText(max_length=64)
        >>> space.contains("click[Buy Now] — ünïcode ok")
        True
    """

    def __init__(
        self, max_length: int = DEFAULT_MAX_LENGTH, *, min_length: int = 0, seed: Any = None
    ) -> None:
        printable = "".join(chr(c) for c in range(32, 127))
        super().__init__(max_length=max_length, min_length=min_length, charset=printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        # Bounded sample length keeps sampled actions cheap to print and send.
        if mask is None and probability is None:
            length = int(self.np_random.integers(self.min_length, min(self.max_length, 64) + 1))
            chars = self.np_random.choice(np.array(list(self.character_set)), size=length)
            return "".join(chars)
        return super().sample(mask=mask, probability=probability)
