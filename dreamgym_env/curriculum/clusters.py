"""Task groups for reward variance: one group per task, or clusters of similar tasks.

GRPO-style training runs groups of rollouts of one task, so a task's own recent rewards are its
group. PPO-style training runs each task about once; the paper then clusters tasks by embedding
and treats a cluster as the group. :class:`TaskClusters` does that with spherical k-means over
instruction embeddings (the replay embedders; the default hashed one needs no model).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from dreamgym_env.errors import ConfigurationError
from dreamgym_env.replay.embedders import Embedder, HashedEmbedder, make_embedder
from dreamgym_env.types import Task

KMEANS_ITERATIONS = 25


class Grouping(Protocol):
    """Maps a task to the key of the group whose rewards make its variance."""

    def key(self, task: Task) -> str:
        """The group key of ``task``."""
        ...


class ByTask:
    """Each task is its own group (for algorithms with rollout groups, e.g. GRPO)."""

    def key(self, task: Task) -> str:
        return task.id

    def __repr__(self) -> str:
        return "ByTask()"


class TaskClusters:
    """Clusters of similar tasks by instruction embedding (for algorithms without groups, e.g. PPO).

    Fitted once on ``tasks`` with seeded spherical k-means; tasks seen later (generated ones)
    join the nearest cluster. Keys are ``"cluster-<j>"``.

    Args:
        tasks: the tasks to fit on.
        num_clusters: how many clusters (default: about the square root of the task count).
        embedder: an embedder or a spec (default: the hashed embedder).
        seed: seed of the k-means initialisation.
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        num_clusters: int | None = None,
        *,
        embedder: Embedder | str | None = None,
        seed: int = 0,
    ) -> None:
        if not tasks:
            raise ConfigurationError("TaskClusters needs at least one task to fit on")
        k = num_clusters if num_clusters is not None else max(1, round(len(tasks) ** 0.5))
        if not 1 <= k <= len(tasks):
            raise ConfigurationError(f"num_clusters must be in [1, {len(tasks)}], got {k}")
        self.embedder = HashedEmbedder() if embedder is None else make_embedder(embedder)
        vectors = self._embed(tasks)
        self.centroids = _spherical_kmeans(vectors, k, np.random.default_rng(seed))
        labels = np.argmax(vectors @ self.centroids.T, axis=1)
        self._keys: dict[str, str] = {t.id: f"cluster-{int(j)}" for t, j in zip(tasks, labels, strict=True)}

    @property
    def num_clusters(self) -> int:
        return len(self.centroids)

    def _embed(self, tasks: Sequence[Task]) -> np.ndarray:
        return self.embedder.embed([(task.instruction, "") for task in tasks])

    def key(self, task: Task) -> str:
        key = self._keys.get(task.id)
        if key is None:
            key = self._keys[task.id] = f"cluster-{int(np.argmax(self.centroids @ self._embed([task])[0]))}"
        return key

    def __repr__(self) -> str:
        return f"TaskClusters(num_clusters={self.num_clusters}, embedder={self.embedder!r})"


def _spherical_kmeans(vectors: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Unit centroids of ``k`` clusters of unit ``vectors`` (k-means++ start, cosine assignment)."""
    n = len(vectors)
    centroids = [vectors[int(rng.integers(n))]]
    for _ in range(1, k):
        nearest = np.max(vectors @ np.stack(centroids).T, axis=1)
        distance = np.clip(1.0 - nearest, 0.0, None)
        total = float(distance.sum())
        index = int(rng.choice(n, p=distance / total)) if total > 0 else int(rng.integers(n))
        centroids.append(vectors[index])
    matrix = np.stack(centroids).astype(np.float64)
    for _ in range(KMEANS_ITERATIONS):
        labels = np.argmax(vectors @ matrix.T, axis=1)
        updated = np.zeros_like(matrix)
        np.add.at(updated, labels, vectors)
        norms = np.linalg.norm(updated, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        updated[~empty] /= norms[~empty]
        updated[empty] = matrix[empty]  # an empty cluster keeps its centroid
        if np.allclose(updated, matrix):
            break
        matrix = updated
    return matrix
