"""Cosine top-k indexes over unit vectors, partitioned by (domain, source) for exact filtering.

* :class:`ExactIndex`: brute-force inner products in numpy. Exact, no dependency; fast enough
  for a few tens of thousands of vectors (see ``benchmarks/replay.py``).
* :class:`IVFIndex`: a faiss inverted-file index (the optional ``faiss-cpu`` extra) with float16
  vectors, approximate: a query scans the ``nprobe`` inverted lists nearest to it. Chosen over HNSW because it trains in
  seconds, adds and removes vectors in place (removal matters: the buffer evicts), and rebuilds
  quickly when a buffer is reopened; HNSW needs minutes to build a million vectors on two cores
  and cannot delete.
* :class:`PartitionedIndex`: one index per ``(domain, source)`` partition, so that filters are
  exact (a partition is searched or not) and never cost recall. Each partition starts exact and
  switches to IVF on its own once it holds more than ``approximate_above`` vectors, when faiss is
  installed.

Vectors are float32 rows of unit norm (see :mod:`dreamgym_env.replay.embedders`); scores are
cosine similarities. Ids are int64 and unique across partitions (the buffer's row ids).
"""

from __future__ import annotations

import importlib.util
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from dreamgym_env.errors import ConfigurationError

logger = logging.getLogger(__name__)

APPROXIMATE_ABOVE = 10_000
"""A partition switches from exact to IVF search above this many vectors (when faiss is installed)."""
DEFAULT_NPROBE = 16
"""Inverted lists an IVF query scans."""
RETRAIN_GROWTH = 4.0
"""An IVF partition is retrained (new centroids, more lists) once it grows this much past its training size."""
COMPACT_DEAD_SHARE = 0.25
"""An exact index drops its removed rows once they are this share of its storage."""
MIN_POINTS_PER_LIST = 39
"""faiss wants at least this many training points per inverted list."""
SMALL_BATCH = 4
"""Up to this many queries run on one thread (see :func:`_inner_products`, :func:`_single_threaded`)."""
PARALLEL_ABOVE = 1024
"""faiss adds and removes fewer vectors than this on one thread (see :func:`_single_threaded`)."""

TRAIN_POINTS_PER_LIST = 64
"""Training sample per inverted list (faiss would subsample to 256; 64 is plenty for k-means)."""
STORAGE_DTYPES: dict[str, type[np.generic]] = {"fp16": np.float16, "float32": np.float32}
"""How an IVF index stores its vectors."""

PartitionKey = tuple[str, str]
"""``(domain, source)``."""


def faiss_available() -> bool:
    """Whether the optional approximate index (faiss-cpu) is installed."""
    return importlib.util.find_spec("faiss") is not None


def _as_matrix(vectors: np.ndarray, dim: int) -> np.ndarray:
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        raise ConfigurationError(f"expected vectors of dimension {dim}, got shape {vectors.shape}")
    return matrix


def _inner_products(queries: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """``queries @ vectors.T``; a few queries use numpy's own loop, not a multithreaded BLAS call.

    OpenBLAS spreads even one matrix-vector product over all cores, which is ten times slower
    than one core when the machine is busy (an RL trainer, an inference server); batches of
    queries are worth the threads.
    """
    if len(queries) > SMALL_BATCH:
        return queries @ vectors.T
    return np.stack([np.einsum("ij,j->i", vectors, query) for query in queries])


@contextmanager
def _single_threaded(faiss: Any, small: bool) -> Iterator[None]:
    """Run a small faiss call on one OpenMP thread, then restore the caller's setting.

    faiss opens an OpenMP region even for a handful of vectors; on a busy machine its threads
    wait on each other and adding 8 vectors can take 30 ms instead of 0.05 ms.
    """
    if not small:
        yield
        return
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


def _empty_result(n_queries: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((n_queries, k), -np.inf, dtype=np.float32), np.full((n_queries, k), -1, dtype=np.int64)


class VectorIndex(ABC):
    """Top-k inner-product search over vectors with int64 ids; add and remove in place."""

    dim: int

    @abstractmethod
    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors under ``ids`` (ids must not be present already)."""

    @abstractmethod
    def remove(self, ids: np.ndarray) -> int:
        """Remove the vectors of ``ids`` (unknown ids are ignored); return how many went."""

    @abstractmethod
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(scores, ids)``, each ``(len(queries), k)``, best first; missing hits: ``-inf``, ``-1``."""

    @abstractmethod
    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """All ``(ids, vectors)`` held, e.g. to move them into another index."""

    @abstractmethod
    def __len__(self) -> int: ...


class ExactIndex(VectorIndex):
    """Brute-force cosine search in numpy: exact, no dependency, linear in the size.

    Storage grows by doubling; removed rows are masked at once and dropped when they make up
    :data:`COMPACT_DEAD_SHARE` of the storage.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._ids = np.zeros(0, dtype=np.int64)
        self._alive = np.zeros(0, dtype=bool)
        self._size = 0  # rows used in storage, dead ones included
        self._dead = 0

    def __len__(self) -> int:
        return self._size - self._dead

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        matrix = _as_matrix(vectors, self.dim)
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(ids) != len(matrix):
            raise ConfigurationError(f"got {len(ids)} ids for {len(matrix)} vectors")
        needed = self._size + len(ids)
        if needed > len(self._ids):
            capacity = max(needed, 2 * len(self._ids), 64)
            self._vectors = np.resize(self._vectors, (capacity, self.dim))
            self._ids = np.resize(self._ids, capacity)
            self._alive = np.resize(self._alive, capacity)
        self._vectors[self._size : needed] = matrix
        self._ids[self._size : needed] = ids
        self._alive[self._size : needed] = True
        self._size = needed

    def remove(self, ids: np.ndarray) -> int:
        hit = np.isin(self._ids[: self._size], np.asarray(ids, dtype=np.int64)) & self._alive[: self._size]
        removed = int(hit.sum())
        if removed:
            self._alive[: self._size][hit] = False
            self._dead += removed
            if self._dead >= COMPACT_DEAD_SHARE * self._size:
                self._compact()
        return removed

    def _compact(self) -> None:
        keep = self._alive[: self._size]
        self._vectors = self._vectors[: self._size][keep].copy()
        self._ids = self._ids[: self._size][keep].copy()
        self._alive = np.ones(len(self._ids), dtype=bool)
        self._size, self._dead = len(self._ids), 0

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        matrix = _as_matrix(queries, self.dim)
        scores_out, ids_out = _empty_result(len(matrix), k)
        n = self._size
        if n == 0 or k <= 0:
            return scores_out, ids_out
        scores = _inner_products(matrix, self._vectors[:n])  # (queries, n)
        if self._dead:
            scores[:, ~self._alive[:n]] = -np.inf
        take = min(k, n)
        top = (
            np.argpartition(-scores, take - 1, axis=1)[:, :take]
            if take < n
            else np.tile(np.arange(n), (len(matrix), 1))
        )
        top_scores = np.take_along_axis(scores, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        top = np.take_along_axis(top, order, axis=1)
        top_scores = np.take_along_axis(top_scores, order, axis=1)
        valid = np.isfinite(top_scores)
        scores_out[:, :take] = top_scores
        ids_out[:, :take] = np.where(valid, self._ids[top], -1)
        return scores_out, ids_out

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        keep = self._alive[: self._size]
        return self._ids[: self._size][keep].copy(), self._vectors[: self._size][keep].copy()


class IVFIndex(VectorIndex):
    """Approximate cosine search with a faiss inverted-file index (inner product on unit vectors).

    Vectors are stored as float16 by default (``IndexIVFScalarQuantizer`` ``QT_fp16``: half the
    memory of float32, scores within about 1e-3) or as float32 (``IndexIVFFlat``). Trained on
    the vectors it starts with (at least ``39 * nlist``); later vectors are assigned to the
    trained lists, and once the index has grown :data:`RETRAIN_GROWTH` times it retrains with
    more lists, moving the vectors over one list at a time (no full copy). Removal is in place
    (a hash-table direct map).

    Args:
        dim: vector dimension.
        ids, vectors: the initial content, used to train the lists.
        nprobe: inverted lists scanned per query (more: slower, better recall).
        storage: ``"fp16"`` or ``"float32"``.
    """

    def __init__(
        self,
        dim: int,
        ids: np.ndarray,
        vectors: np.ndarray,
        *,
        nprobe: int = DEFAULT_NPROBE,
        storage: str = "fp16",
    ) -> None:
        import faiss

        if storage not in STORAGE_DTYPES:
            raise ConfigurationError(f"storage must be one of {sorted(STORAGE_DTYPES)}, got {storage!r}")
        self._faiss: Any = faiss
        self.dim = dim
        self.nprobe = nprobe
        self.storage = storage
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        vectors = _as_matrix(vectors, dim)
        self._quantizer, self._index = self._trained(vectors, self.lists_for(len(vectors)))
        self._trained_size = max(len(vectors), 1)
        if len(vectors):
            self._index.add_with_ids(vectors, ids)

    @staticmethod
    def lists_for(n: int) -> int:
        """The number of inverted lists for ``n`` vectors: about ``2 sqrt(n)``, a power of two."""
        target = max(1, min(2 * math.sqrt(n), n / MIN_POINTS_PER_LIST))
        return max(1, 2 ** int(math.log2(target)))

    def _trained(self, sample: np.ndarray, nlist: int) -> tuple[Any, Any]:
        """A new empty index with ``nlist`` lists trained on (a subsample of) ``sample``."""
        faiss = self._faiss
        quantizer = faiss.IndexFlatIP(self.dim)
        if self.storage == "fp16":
            index = faiss.IndexIVFScalarQuantizer(
                quantizer, self.dim, nlist, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
            )
            index.by_residual = False  # store the vectors themselves, so that they can be read back
        else:
            index = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        if len(sample) > TRAIN_POINTS_PER_LIST * nlist:
            chosen = np.random.default_rng(0).choice(
                len(sample), TRAIN_POINTS_PER_LIST * nlist, replace=False
            )
            sample = sample[np.sort(chosen)]
        index.train(sample)
        index.set_direct_map_type(faiss.DirectMap.Hashtable)
        index.nprobe = min(self.nprobe, nlist)
        return quantizer, index  # the index does not own its quantizer: keep both alive

    def _retrain(self) -> None:
        """Retrain with lists for the current size, moving the vectors one list at a time."""
        old = self._index
        nlist = self.lists_for(len(self))
        share = min(1.0, TRAIN_POINTS_PER_LIST * nlist / max(len(self), 1))
        rng = np.random.default_rng(0)
        sample = [v[rng.random(len(v)) < share] for _, v in self._lists(old)]
        self._quantizer, self._index = self._trained(np.concatenate(sample), nlist)
        del sample
        with _single_threaded(self._faiss, False):
            for ids, vectors in self._lists(old):
                self._index.add_with_ids(vectors, ids)
        self._trained_size = len(self)

    def _lists(self, index: Any) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(ids, float32 vectors)`` of each non-empty inverted list of ``index``."""
        faiss, lists, dtype = self._faiss, index.invlists, STORAGE_DTYPES[self.storage]
        for number in range(lists.nlist):
            size = lists.list_size(number)
            if size:
                ids = faiss.rev_swig_ptr(lists.get_ids(number), size).copy()
                codes = faiss.rev_swig_ptr(lists.get_codes(number), size * lists.code_size)
                yield ids, codes.view(dtype).reshape(size, self.dim).astype(np.float32)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def nlist(self) -> int:
        return int(self._index.nlist)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        matrix = _as_matrix(vectors, self.dim)
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(ids) != len(matrix):
            raise ConfigurationError(f"got {len(ids)} ids for {len(matrix)} vectors")
        with _single_threaded(self._faiss, len(ids) < PARALLEL_ABOVE):
            self._index.add_with_ids(matrix, ids)
        if len(self) > RETRAIN_GROWTH * self._trained_size:
            self._retrain()

    def remove(self, ids: np.ndarray) -> int:
        ids = np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))
        if not len(ids):
            return 0
        with _single_threaded(self._faiss, len(ids) < PARALLEL_ABOVE):
            return int(self._index.remove_ids(self._faiss.IDSelectorArray(ids)))

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        matrix = _as_matrix(queries, self.dim)
        if k <= 0 or len(self) == 0:
            return _empty_result(len(matrix), k)
        with _single_threaded(self._faiss, len(matrix) <= SMALL_BATCH):
            scores, ids = self._index.search(matrix, k)
        scores[ids < 0] = -np.inf
        return scores.astype(np.float32, copy=False), ids.astype(np.int64, copy=False)

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        parts = list(self._lists(self._index))
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate([i for i, _ in parts]), np.concatenate([v for _, v in parts])


class PartitionedIndex:
    """One index per ``(domain, source)``: exact filters, and per-partition exact/IVF choice.

    Args:
        dim: vector dimension.
        approximate_above: a partition larger than this switches to :class:`IVFIndex` when faiss
            is installed; ``None`` keeps every partition exact.
        nprobe: IVF lists scanned per query.
    """

    def __init__(
        self, dim: int, *, approximate_above: int | None = APPROXIMATE_ABOVE, nprobe: int = DEFAULT_NPROBE
    ) -> None:
        if approximate_above is not None and approximate_above < MIN_POINTS_PER_LIST:
            raise ConfigurationError(
                f"approximate_above must be >= {MIN_POINTS_PER_LIST} or None, got {approximate_above}"
            )
        self.dim = dim
        self.approximate_above = approximate_above
        self.nprobe = nprobe
        self.partitions: dict[PartitionKey, VectorIndex] = {}
        self._warned_no_faiss = False

    def __len__(self) -> int:
        return sum(len(index) for index in self.partitions.values())

    def kinds(self) -> dict[PartitionKey, str]:
        """Which kind of index each partition uses now (``"exact"`` or ``"ivf"``)."""
        return {
            key: "ivf" if isinstance(index, IVFIndex) else "exact" for key, index in self.partitions.items()
        }

    def add(self, key: PartitionKey, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors to the partition ``key = (domain, source)``."""
        index = self.partitions.get(key)
        if index is None:
            index = self.partitions[key] = ExactIndex(self.dim)
        index.add(ids, vectors)
        if (
            isinstance(index, ExactIndex)
            and self.approximate_above is not None
            and len(index) > self.approximate_above
        ):
            if faiss_available():
                self.partitions[key] = IVFIndex(self.dim, *index.items(), nprobe=self.nprobe)
            elif not self._warned_no_faiss:
                self._warned_no_faiss = True
                logger.info(
                    "replay partition %s holds %d vectors; exact search slows down linearly. "
                    "pip install faiss-cpu for the approximate index",
                    key,
                    len(index),
                )

    def remove(self, key: PartitionKey, ids: np.ndarray) -> int:
        """Remove ids from the partition ``key``."""
        index = self.partitions.get(key)
        removed = index.remove(ids) if index is not None else 0
        if index is not None and len(index) == 0:
            del self.partitions[key]
        return removed

    def select(
        self, domains: Iterable[str] | None = None, sources: Iterable[str] | None = None
    ) -> list[PartitionKey]:
        """The partitions that pass the filters (``None``: no filter)."""
        domain_set = None if domains is None else set(domains)
        source_set = None if sources is None else set(sources)
        return [
            key
            for key in self.partitions
            if (domain_set is None or key[0] in domain_set) and (source_set is None or key[1] in source_set)
        ]

    def search(
        self,
        queries: np.ndarray,
        k: int,
        *,
        domains: Sequence[str] | None = None,
        sources: Sequence[str] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k over the selected partitions: ``(scores, ids)``, each ``(len(queries), k)``."""
        matrix = _as_matrix(queries, self.dim)
        keys = self.select(domains, sources)
        if not keys or k <= 0:
            return _empty_result(len(matrix), k)
        results = [self.partitions[key].search(matrix, k) for key in keys]
        if len(results) == 1:
            return results[0]
        scores = np.concatenate([s for s, _ in results], axis=1)
        ids = np.concatenate([i for _, i in results], axis=1)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(scores, order, axis=1), np.take_along_axis(ids, order, axis=1)
