"""Confidence intervals of success rates.

The Wilson score interval (Wilson 1927) of a binomial proportion: unlike the normal
approximation it stays inside [0, 1] and is not empty at 0 or N successes, which is what small
benchmark runs (a few dozen episodes, success near 0 or 1) need.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Final

from dreamgym_env.errors import ConfigurationError

DEFAULT_CONFIDENCE: Final = 0.95


def z_score(confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The two-sided standard-normal quantile of ``confidence`` (1.95996... for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ConfigurationError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson_interval(
    successes: int, trials: int, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``trials``; ``(0.0, 1.0)`` for no trials.

    With ``p = successes / trials`` and ``z`` the normal quantile of ``confidence``, the interval
    is ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``.

    Example:
        >>> low, high = wilson_interval(5, 10)
        >>> round(low, 4), round(high, 4)
        (0.2366, 0.7634)
    """
    if trials < 0 or not 0 <= successes <= max(trials, 0):
        raise ConfigurationError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return 0.0, 1.0
    z = z_score(confidence)
    n, p = float(trials), successes / trials
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At 0 or n successes one bound is exactly 0 or 1; rounding must not move it.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high
