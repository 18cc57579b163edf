from __future__ import annotations

import numpy as np
import pytest

from dreamgym_env.errors import ConfigurationError
from dreamgym_env.replay.index import ExactIndex, IVFIndex, PartitionedIndex, faiss_available

needs_faiss = pytest.mark.skipif(not faiss_available(), reason="faiss-cpu not installed")


def unit_rows(n: int, dim: int = 32, seed: int = 0, clusters: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    if clusters:
        centres = rng.standard_normal((clusters, dim)).astype(np.float32) * 3
        rows += centres[rng.integers(0, clusters, n)]
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def brute_force(vectors: np.ndarray, ids: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    scores = queries @ vectors.T
    return ids[np.argsort(-scores, axis=1, kind="stable")[:, :k]]


def test_exact_matches_brute_force():
    vectors, ids = unit_rows(500), np.arange(1000, 1500)
    index = ExactIndex(32)
    index.add(ids[:200], vectors[:200])
    index.add(ids[200:], vectors[200:])  # incremental, grows the storage
    queries = unit_rows(20, seed=1)
    scores, found = index.search(queries, 5)
    np.testing.assert_array_equal(found, brute_force(vectors, ids, queries, 5))
    assert np.all(np.diff(scores, axis=1) <= 0)


def test_exact_pads_when_fewer_than_k():
    index = ExactIndex(32)
    index.add(np.array([7, 8]), unit_rows(2))
    scores, ids = index.search(unit_rows(1, seed=3), 4)
    assert list(ids[0, 2:]) == [-1, -1] and np.isneginf(scores[0, 2:]).all()
    assert set(ids[0, :2]) == {7, 8}
    assert ExactIndex(32).search(unit_rows(2), 3)[1].tolist() == [[-1, -1, -1]] * 2


def test_exact_remove_and_compact():
    vectors, ids = unit_rows(100), np.arange(100)
    index = ExactIndex(32)
    index.add(ids, vectors)
    assert index.remove(np.array([3, 4, 999])) == 2 and len(index) == 98
    _, found = index.search(vectors[3:5], 1)
    assert 3 not in found and 4 not in found
    index.remove(np.arange(10, 60))  # past the dead share: storage is compacted
    kept_ids, kept_vectors = index.items()
    assert len(kept_ids) == len(index) == 48 and set(kept_ids) == set(range(100)) - {3, 4} - set(
        range(10, 60)
    )
    _, found = index.search(kept_vectors, 1)
    np.testing.assert_array_equal(found[:, 0], kept_ids)


def test_dimension_and_storage_are_checked():
    with pytest.raises(ConfigurationError, match="dimension 32"):
        ExactIndex(32).add(np.array([1]), np.zeros((1, 8), dtype=np.float32))
    if faiss_available():
        with pytest.raises(ConfigurationError, match="storage"):
            IVFIndex(32, np.arange(100), unit_rows(100), storage="int4")


def test_partition_filters_are_exact():
    index = PartitionedIndex(32)
    vectors = unit_rows(30)
    index.add(("webshop", "offline"), np.arange(0, 10), vectors[:10])
    index.add(("webshop", "synthetic"), np.arange(10, 20), vectors[10:20])
    index.add(("alfworld", "offline"), np.arange(20, 30), vectors[20:30])
    queries = vectors[[5, 15, 25]]
    _, ids = index.search(queries, 30, domains=["webshop"], sources=["offline"])
    assert set(ids[ids >= 0].tolist()) == set(range(10))
    _, ids = index.search(queries, 30, sources=["offline"])
    assert set(ids[ids >= 0].tolist()) == set(range(10)) | set(range(20, 30))
    _, ids = index.search(queries, 1)  # no filter: each query finds itself
    assert ids[:, 0].tolist() == [5, 15, 25]
    _, ids = index.search(queries, 3, domains=["webarena"])
    assert (ids == -1).all()
    assert index.remove(("alfworld", "offline"), np.arange(20, 30)) == 10
    assert ("alfworld", "offline") not in index.partitions


@needs_faiss
@pytest.mark.parametrize("storage", ["fp16", "float32"])
def test_ivf_recall_add_and_remove(storage):
    vectors, ids = unit_rows(6000, dim=32, clusters=60), np.arange(6000) * 3
    index = IVFIndex(32, ids[:3000], vectors[:3000], nprobe=8, storage=storage)
    index.add(ids[3000:], vectors[3000:])  # assigned to the trained lists, no rebuild
    assert len(index) == 6000 and index.nlist == IVFIndex.lists_for(3000)
    queries = vectors[::60] + 0.05 * unit_rows(100, dim=32, seed=9)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    _, found = index.search(queries, 10)
    exact = brute_force(vectors, ids, queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, exact, strict=True)])
    assert recall >= 0.9
    gone = ids[::60]
    assert index.remove(gone) == len(gone) and len(index) == 6000 - len(gone)
    _, found = index.search(vectors[::60], 10)
    assert not set(found.ravel()) & set(gone.tolist())
    kept_ids, kept_vectors = index.items()
    assert set(kept_ids.tolist()) == set(ids.tolist()) - set(gone.tolist())
    order = np.argsort(kept_ids)
    tolerance = 1e-3 if storage == "fp16" else 0.0  # float16 keeps about 3 decimal digits
    np.testing.assert_allclose(kept_vectors[order], vectors[np.isin(ids, kept_ids)], rtol=0, atol=tolerance)


@needs_faiss
def test_ivf_retrains_after_growth():
    vectors = unit_rows(5000, clusters=20)
    index = IVFIndex(32, np.arange(400), vectors[:400])
    small = index.nlist
    index.add(np.arange(400, 5000), vectors[400:])
    assert index.nlist > small and len(index) == 5000
    ids, moved = index.items()  # every vector moved to the new lists intact
    assert sorted(ids.tolist()) == list(range(5000))
    np.testing.assert_allclose(moved[np.argsort(ids)], vectors, rtol=0, atol=1e-3)
    _, found = index.search(vectors[:50], 1)
    assert np.mean(found[:, 0] == np.arange(50)) >= 0.95


@needs_faiss
def test_partition_switches_to_ivf_above_threshold():
    index = PartitionedIndex(32, approximate_above=500)
    vectors = unit_rows(900, clusters=10)
    index.add(("webshop", "offline"), np.arange(400), vectors[:400])
    assert index.kinds() == {("webshop", "offline"): "exact"}
    index.add(("webshop", "offline"), np.arange(400, 900), vectors[400:])
    assert index.kinds() == {("webshop", "offline"): "ivf"} and len(index) == 900
    _, found = index.search(vectors[:20], 1, domains=["webshop"])
    assert np.mean(found[:, 0] == np.arange(20)) >= 0.9
    never = PartitionedIndex(32, approximate_above=None)
    never.add(("webshop", "offline"), np.arange(900), vectors)
    assert never.kinds() == {("webshop", "offline"): "exact"}


def test_without_faiss_partitions_stay_exact(monkeypatch, caplog):
    monkeypatch.setattr("dreamgym_env.replay.index.faiss_available", lambda: False)
    index = PartitionedIndex(32, approximate_above=100)
    with caplog.at_level("INFO", logger="dreamgym_env.replay.index"):
        index.add(("webshop", "offline"), np.arange(300), unit_rows(300))
    assert index.kinds() == {("webshop", "offline"): "exact"}
    assert "faiss-cpu" in caplog.text
