"""A small vectorised BM25 index: postings precomputed, a query is one ``numpy.bincount``."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

BM25_K1 = 1.5
BM25_B = 0.75


class BM25Index:
    """Okapi BM25 over tokenised documents (non-negative idf, as in Lucene).

    Each term's postings hold its documents and their precomputed BM25 term weights, so that
    scoring a query sums a few arrays; ties keep document order, so rankings are deterministic.

    Example:
        >>> index = BM25Index([("red", "shirt"), ("blue", "shirt"), ("red", "hat")])
        >>> index.search(("red", "shirt")).tolist()
        [0, 1, 2]
    """

    def __init__(self, documents: Sequence[Sequence[str]], *, k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.num_documents = len(documents)
        lengths = np.array([len(doc) for doc in documents], dtype=np.float64)
        average = float(lengths.mean()) if len(documents) else 1.0
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for doc_id, doc in enumerate(documents):
            norm = k1 * (1.0 - b + b * lengths[doc_id] / max(average, 1e-9))
            for term, tf in Counter(doc).items():
                ids, weights = postings.setdefault(term, ([], []))
                ids.append(doc_id)
                weights.append(tf * (k1 + 1.0) / (tf + norm))
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, (ids, weights) in postings.items():
            idf = math.log((self.num_documents - len(ids) + 0.5) / (len(ids) + 0.5) + 1.0)
            self._postings[term] = (np.array(ids, dtype=np.intp), np.array(weights, dtype=np.float64) * idf)

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for ``query`` (each query token counts once per occurrence)."""
        hits = [self._postings[term] for term in query if term in self._postings]
        if not hits:
            return np.zeros(self.num_documents)
        ids = np.concatenate([h[0] for h in hits])
        weights = np.concatenate([h[1] for h in hits])
        return np.bincount(ids, weights=weights, minlength=self.num_documents)

    def search(self, query: Sequence[str], limit: int | None = None) -> np.ndarray:
        """Indices of the documents that match ``query``, best first, at most ``limit``."""
        scores = self.scores(query)
        matched = np.flatnonzero(scores > 0)
        order = matched[np.argsort(-scores[matched], kind="stable")]
        return order if limit is None else order[:limit]
