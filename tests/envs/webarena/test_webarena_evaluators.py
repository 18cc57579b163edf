from __future__ import annotations

import pytest

from dreamgym_env.envs.webarena.evaluators import evaluate, includes, string_match, url_match
from dreamgym_env.envs.webarena.world import World, load_data


@pytest.mark.parametrize(
    ("reference", "answer", "expected"),
    [
        ("3", "3", True),
        ("3", "There are 3 orders.", True),
        ("3", "13", False),
        ("3", "3.5", False),
        ("12.99", "$12.99", True),
        ("12.99", "112.99", False),
        ("80", "80%", True),
        ("Lumina Green Tea", "it is lumina green tea.", True),
        ("byteblaze", "byteblaze2", False),
    ],
)
def test_must_include_matches_whole_words(reference, answer, expected):
    assert includes(reference, answer) is expected


def test_or_alternatives_exact_and_fuzzy_match():
    assert string_match({"must_include": ["0:17 |OR| 17 min"]}, "17 min").won
    assert string_match({"must_include": ["0:17 |OR| 17 min"]}, "about 0:17").won
    assert not string_match({"must_include": ["0:17 |OR| 17 min"]}, "0:18").won
    assert string_match({"exact_match": "a.b@example.com"}, " 'A.B@example.com'. ").won
    assert not string_match({"exact_match": "a.b@example.com"}, "email: a.b@example.com").won
    address = "120 Forbes Avenue, Pittsburgh, PA 15213"
    assert string_match({"fuzzy_match": [address]}, "120 Forbes Ave, Pittsburgh PA 15213").won
    assert not string_match({"fuzzy_match": [address]}, "I don't know").won


def test_partial_credit_is_the_share_of_references_found():
    verdict = string_match({"must_include": ["alpha", "beta"]}, "alpha only")
    assert not verdict.won and verdict.score == 0.5


def test_url_match_compares_path_and_reference_query():
    assert url_match("http://shopping.local/category/electronics", "http://shopping.local/category/electronics?p=2")
    assert not url_match("http://shopping.local/category/electronics", "http://shopping.local/category/toys-games")
    assert not url_match("http://map.local/directions?mode=foot", "http://map.local/directions?mode=car")


def test_a_spec_without_evaluators_never_wins():
    world = World(load_data())
    assert not evaluate({"eval_types": []}, "anything", "http://shopping.local/", world).won
