"""The Wilson interval on known outcomes, against published values and an independent formula."""

from __future__ import annotations

import numpy as np
import pytest

from dreamgym_env.bench.stats import wilson_interval, z_score
from dreamgym_env.errors import ConfigurationError


def quadratic_bounds(successes: int, trials: int, z: float) -> tuple[float, float]:
    """The Wilson bounds as the roots in p of (p - p_hat)^2 = z^2 p (1 - p) / n."""
    p_hat, k = successes / trials, z * z / trials
    roots = np.roots([1 + k, -(2 * p_hat + k), p_hat * p_hat])
    low, high = sorted(float(r.real) for r in roots)
    return max(0.0, low), min(1.0, high)


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        # Computed by hand with z = 1.959964 (e.g. 5/10: centre 0.5, half-width 0.3634).
        (5, 10, 0.2366, 0.7634),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 10, 0.0179, 0.4042),
        (40, 40, 0.9124, 1.0),
        (0, 40, 0.0, 0.0876),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_known_outcomes(successes, trials, low, high):
    got = wilson_interval(successes, trials)
    assert got == pytest.approx((low, high), abs=5e-5)


@pytest.mark.parametrize(
    ("successes", "trials"), [(0, 1), (1, 3), (7, 20), (50, 100), (299, 300), (300, 300)]
)
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_matches_the_quadratic_form_and_is_symmetric(successes, trials, confidence):
    low, high = wilson_interval(successes, trials, confidence)
    assert (low, high) == pytest.approx(quadratic_bounds(successes, trials, z_score(confidence)), abs=1e-9)
    mirror_low, mirror_high = wilson_interval(trials - successes, trials, confidence)
    assert (low, high) == pytest.approx((1 - mirror_high, 1 - mirror_low), abs=1e-12)
    assert 0.0 <= low <= successes / trials <= high <= 1.0


def test_higher_confidence_is_wider_and_more_trials_narrower():
    narrow, wide = wilson_interval(3, 10, 0.9), wilson_interval(3, 10, 0.99)
    assert wide[0] < narrow[0] and wide[1] > narrow[1]
    few, many = wilson_interval(3, 10), wilson_interval(300, 1000)
    assert many[1] - many[0] < few[1] - few[0]
    assert z_score() == pytest.approx(1.959964, abs=1e-6)


def test_no_trials_is_the_whole_range_and_bad_counts_are_refused():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    for successes, trials in ((3, 2), (-1, 5), (0, -1)):
        with pytest.raises(ConfigurationError):
            wilson_interval(successes, trials)
    with pytest.raises(ConfigurationError):
        z_score(1.0)
