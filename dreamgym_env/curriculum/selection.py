"""Choosing tasks by reward variance: which task a reset gets, which tasks seed new variations.

Two decisions, both seeded and reproducible:

* **Resets** (:meth:`VarianceSelector.choose`): with probability ``explore`` a task that is not
  yet explored (fewer than ``min_episodes`` episodes; never-tried tasks are among them) is drawn
  uniformly, or, when every task is explored, any task (a revisit, so that mastered and failed
  tasks are checked again). Otherwise a task is drawn with probability proportional to its
  reward variance ``V``: tasks the policy sometimes solves and sometimes fails are drawn most.
  When no explored task has ``V > 0`` yet, the exploration branch is taken.
* **Seeds** (:meth:`VarianceSelector.seeds`): the ``m`` explored tasks of highest ``V > 0``,
  ties broken by the seeded RNG.

:class:`GeneratedShare` caps the share of generated tasks: over all tasks handed out so far, at
most ``lam`` of them are generated ones (the paper's lambda).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dreamgym_env.errors import ConfigurationError

DEFAULT_EXPLORE = 0.2
DEFAULT_MIN_EPISODES = 2
DEFAULT_LAMBDA = 0.3


@dataclass(frozen=True)
class TaskScore:
    """What selection knows of a candidate: its reward variance and how many episodes it has."""

    variance: float
    episodes: int


class VarianceSelector:
    """Draws tasks by reward variance with exploration (see the module docstring).

    Args:
        explore: probability of drawing an unexplored task (or revisiting any) instead of a
            high-variance one.
        min_episodes: episodes a task needs before its variance is trusted (a single episode
            always has ``V = 0``).
        seed: seed of the RNG behind every draw and tie-break.
    """

    def __init__(
        self,
        *,
        explore: float = DEFAULT_EXPLORE,
        min_episodes: int = DEFAULT_MIN_EPISODES,
        seed: int | None = None,
    ) -> None:
        if not 0.0 <= explore <= 1.0:
            raise ConfigurationError(f"explore must be in [0, 1], got {explore}")
        if min_episodes < 1:
            raise ConfigurationError(f"min_episodes must be >= 1, got {min_episodes}")
        self.explore, self.min_episodes = explore, min_episodes
        self.rng = np.random.default_rng(seed)

    def choose(self, scores: Sequence[TaskScore], k: int = 1, *, distinct: bool = True) -> list[int]:
        """Indices of ``k`` candidates to reset into; ``distinct`` avoids repeats while it can."""
        variance = np.fromiter((s.variance for s in scores), dtype=np.float64, count=len(scores))
        episodes = np.fromiter((s.episodes for s in scores), dtype=np.int64, count=len(scores))
        return self.choose_arrays(variance, episodes, k, distinct=distinct)

    def choose_arrays(
        self, variance: np.ndarray, episodes: np.ndarray, k: int = 1, *, distinct: bool = True
    ) -> list[int]:
        """:meth:`choose` on arrays of the candidates' variances and episode counts."""
        if k < 0:
            raise ConfigurationError(f"k must be >= 0, got {k}")
        n = len(variance)
        if n == 0:
            if k:
                raise ConfigurationError("no candidate tasks to choose from")
            return []
        explored = np.asarray(episodes) >= self.min_episodes
        weights = np.where(explored, np.maximum(np.asarray(variance, dtype=np.float64), 0.0), 0.0)
        chosen: list[int] = []
        while len(chosen) < k:  # rounds of distinct picks (one round unless k > n)
            size = min(k - len(chosen), n) if distinct else k
            chosen += self._round(weights, explored, size, distinct)
        return chosen

    def _round(self, weights: np.ndarray, explored: np.ndarray, k: int, distinct: bool) -> list[int]:
        """``k`` picks: each exploits (by weight) with probability ``1 - explore``, else explores."""
        positive = np.flatnonzero(weights > 0)
        exploit = int(self.rng.binomial(k, 1.0 - self.explore)) if positive.size else 0
        picks: list[int] = []
        if exploit and distinct:
            exploit = min(exploit, positive.size)
            # weighted sampling without replacement (Efraimidis-Spirakis keys): one pass over n
            keys = np.log(self.rng.random(positive.size)) / weights[positive]
            top = (
                np.argpartition(-keys, exploit - 1)[:exploit]
                if exploit < positive.size
                else np.arange(positive.size)
            )
            picks = [int(i) for i in positive[top]]
        elif exploit:
            p = weights[positive] / weights[positive].sum()
            picks = [int(i) for i in positive[self.rng.choice(positive.size, size=exploit, p=p)]]
        rest = k - len(picks)
        if rest:
            taken = np.zeros(len(weights), dtype=bool)
            if distinct:
                taken[picks] = True
            fresh = np.flatnonzero(~explored & ~taken)
            if distinct and fresh.size < rest:  # then revisit any task not taken yet
                others = np.flatnonzero(explored & ~taken)
                fresh = np.concatenate([fresh, self.rng.permutation(others)[: rest - fresh.size]])
            if distinct:
                picks += (
                    [int(i) for i in self.rng.permutation(fresh)[:rest]]
                    if fresh.size > rest
                    else fresh.tolist()
                )
            else:
                pool = fresh if fresh.size else np.arange(len(weights))
                picks += [int(i) for i in pool[self.rng.integers(pool.size, size=rest)]]
        order = self.rng.permutation(len(picks))
        return [picks[int(i)] for i in order]

    def seeds(self, scores: Sequence[TaskScore], m: int) -> list[int]:
        """Indices of the (at most) ``m`` explored candidates of highest ``V > 0``, best first."""
        if m < 0:
            raise ConfigurationError(f"m must be >= 0, got {m}")
        order = self.rng.permutation(len(scores))  # the tie-break
        eligible = [
            int(i) for i in order if scores[i].episodes >= self.min_episodes and scores[i].variance > 0.0
        ]
        eligible.sort(key=lambda i: -scores[i].variance)  # stable: ties keep the random order
        return eligible[:m]


class GeneratedShare:
    """Caps the share of generated tasks at ``lam`` of all tasks handed out.

    Each batch of ``n`` tasks earns ``lam * n`` of quota; a whole unit of quota lets one
    generated task in. Over all batches the count of generated tasks never exceeds ``lam`` times
    the count of all tasks, and approaches it while generated tasks are available; quota that
    could not be used (no generated task yet) is dropped, so it never causes a burst later.
    """

    def __init__(self, lam: float = DEFAULT_LAMBDA) -> None:
        if not 0.0 <= lam <= 1.0:
            raise ConfigurationError(f"lam must be in [0, 1], got {lam}")
        self.lam = lam
        self.carry = 0.0
        self.handed_out = 0
        self.generated = 0

    def quota(self, n: int, available: int) -> int:
        """How many of a batch of ``n`` tasks may be generated ones (``available`` exist)."""
        credit = self.carry + self.lam * n
        allowed = min(math.floor(credit + 1e-9), n)
        used = min(allowed, max(0, available))
        self.carry = credit - used if used == allowed else credit - math.floor(credit + 1e-9)
        self.carry = min(max(self.carry, 0.0), 1.0)
        self.handed_out += n
        self.generated += used
        return used

    @property
    def share(self) -> float:
        """The share of generated tasks among all handed out so far."""
        return self.generated / self.handed_out if self.handed_out else 0.0
