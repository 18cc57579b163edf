from __future__ import annotations

import math
from collections import Counter

import numpy as np

from dreamgym_env.envs.webshop.catalog import MAX_RESULTS, load_catalog
from dreamgym_env.envs.webshop.matching import tokens
from dreamgym_env.envs.webshop.search import BM25Index

DOCS = [
    ("red", "cotton", "shirt"),
    ("blue", "cotton", "shirt", "long", "sleeve"),
    ("red", "hat"),
    ("green", "tea"),
    ("red", "red", "red", "scarf", "wool", "winter", "warm"),
]


def brute_force_bm25(docs, query, k1=1.5, b=0.75):
    n = len(docs)
    avg = sum(map(len, docs)) / n
    scores = []
    for doc in docs:
        tf = Counter(doc)
        score = 0.0
        for term in query:
            df = sum(term in d for d in docs)
            if not df:
                continue
            idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
            f = tf[term]
            score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(doc) / avg))
        scores.append(score)
    return np.array(scores)


def test_scores_equal_the_bm25_formula():
    index = BM25Index(DOCS)
    for query in (("red",), ("red", "shirt"), ("cotton", "sleeve", "tea"), ("unknown",), ("red", "red")):
        np.testing.assert_allclose(index.scores(query), brute_force_bm25(DOCS, query))


def test_ranking_best_first_ties_in_document_order_no_non_matches():
    index = BM25Index(DOCS)
    assert index.search(("shirt",)).tolist() == [0, 1]  # shorter doc first
    assert index.search(("red", "shirt")).tolist()[0] == 0
    assert index.search(("nothing",)).tolist() == []
    assert 3 not in index.search(("red",)).tolist()
    assert index.search(("red",), limit=1).tolist() == [4]  # highest term frequency


def test_catalog_search_finds_the_type_first():
    catalog = load_catalog()
    results = catalog.search("yoga mat non slip")
    assert len(results) == MAX_RESULTS
    top = [catalog.products[i] for i in results[:10]]
    assert all(p.product_type == "yoga mat" for p in top)
    assert all("non slip" in p.attributes for p in top[:5])
    assert catalog.search("Yoga  MAT non-slip") == results  # same tokens, same (cached) result
    assert catalog.search("zzzz qqqq") == ()


def test_search_matches_tokens():
    catalog = load_catalog()
    product = catalog.products[123]
    assert product.index in catalog.search(product.title)[:3]
    assert tokens(product.title)
