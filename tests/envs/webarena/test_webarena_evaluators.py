"""WebArena's evaluators as ``evaluation_harness/evaluators.py`` (commit f62e0b9) defines them."""

from __future__ import annotations

import pytest

from dreamgym_env.envs.webarena.evaluators import (
    clean,
    evaluate,
    exact_match,
    html_content,
    must_include,
    string_match,
    url_match,
)
from dreamgym_env.envs.webarena.world import World, load_data


@pytest.mark.parametrize(
    ("answer", "cleaned"),
    [
        ("  Hello World  ", "hello world"),
        ("'Quoted'", "quoted"),
        ('"Quoted"', "quoted"),
        ("'a'b'", "a'b"),
        ("\"'both'\"", "'both'"),
        ("two  spaces", "two  spaces"),
        ("ends with a period.", "ends with a period."),
        ("'", ""),
    ],
)
def test_clean_answer_strips_one_pair_of_quotes_and_lowers(answer, cleaned):
    """``StringEvaluator.clean_answer``: strip, one pair of outer quotes, lower; no space collapsing, no period dropping."""
    assert clean(answer) == cleaned


def test_exact_match_keeps_spaces_and_periods():
    """``StringEvaluator.exact_match`` compares the cleaned strings as they are."""
    assert exact_match("a.b@example.com", " 'A.B@example.com' ") == 1.0
    assert exact_match("a.b@example.com", "a.b@example.com.") == 0.0
    assert exact_match("New York", "new  york") == 0.0


@pytest.mark.parametrize(
    ("reference", "answer", "expected"),
    [
        ("12.99", "$12.99", 1.0),
        ("12.99", "112.99", 1.0),  # a substring, not a whole word
        ("byteblaze", "byteblaze2", 1.0),
        ("Lumina Green Tea", "it is lumina green tea.", 1.0),
        ("green  tea", "green tea", 0.0),
        ("80", "80%", 1.0),
    ],
)
def test_must_include_is_a_substring(reference, answer, expected):
    """``StringEvaluator.must_include`` without tokenizing: ``clean_ref in clean_pred``."""
    assert must_include(reference, answer) == expected


def test_a_lone_one_character_reference_is_looked_up_among_tokens():
    """``must_include(..., tokenize=len(value) == 1)``: a single-character reference must be a whole token."""
    assert string_match({"must_include": ["3"]}, "3") == 1.0
    assert string_match({"must_include": ["3"]}, "There are 3 orders.") == 1.0
    assert string_match({"must_include": ["3"]}, "13") == 0.0
    assert string_match({"must_include": ["3"]}, "3.5") == 0.0
    # with a second reference the real code does not tokenize: "3" is found inside "13"
    assert string_match({"must_include": ["3", "orders"]}, "13 orders") == 1.0


def test_or_is_not_split_by_the_string_evaluator():
    """``StringEvaluator.__call__`` passes ``"65 |OR| 3"`` whole to must_include: only that very text matches."""
    assert string_match({"must_include": ["0:17 |OR| 17 min"]}, "17 min") == 0.0
    assert string_match({"must_include": ["0:17 |OR| 17 min"]}, "0:17") == 0.0
    assert string_match({"must_include": ["0:17 |OR| 17 min"]}, "it is 0:17 |OR| 17 min") == 1.0


def test_the_score_is_a_product_of_zero_one_scores():
    """``StringEvaluator.__call__`` multiplies (``score *= ...``): no partial credit."""
    assert string_match({"must_include": ["alpha", "beta"]}, "alpha only") == 0.0
    assert string_match({"must_include": ["alpha", "beta"]}, "beta and alpha") == 1.0
    assert string_match({"exact_match": "x", "must_include": ["x"]}, "x") == 1.0


def test_not_applicable_needs_the_answer_n_a():
    """``fuzzy_match: "N/A"``: an exact match with "N/A" (the LLM fallback on the reason is not run)."""
    assert string_match({"fuzzy_match": "N/A"}, "N/A") == 1.0
    assert string_match({"fuzzy_match": "N/A"}, " 'n/a' ") == 1.0
    assert string_match({"fuzzy_match": "N/A"}, "N/A, there is no such product") == 0.0
    assert string_match({"fuzzy_match": "N/A"}, "12.99") == 0.0


def test_fuzzy_match_of_a_list_accepts_an_answer_holding_the_reference():
    """WebArena asks an LLM (``llm_fuzzy_match``); without one only answers holding the reference pass."""
    address = "120 Forbes Avenue, Pittsburgh"
    assert string_match({"fuzzy_match": [address]}, "It is at 120 Forbes Avenue, Pittsburgh") == 1.0
    assert string_match({"fuzzy_match": [address]}, "I don't know") == 0.0


def test_url_match_reference_host_and_path_is_a_substring_of_the_page():
    """``URLEvaluator`` (GOLD in PRED): ``ref_base_path in pred_base_path`` after ``rstrip("/")``."""
    assert url_match("http://reddit.local/f/books", "http://reddit.local/f/books/12") == 1.0
    assert url_match("http://reddit.local/f/books/", "http://reddit.local/f/books") == 1.0
    assert (
        url_match("http://shopping.local/category/electronics", "http://shopping.local/category/toys-games")
        == 0.0
    )
    # the host is compared as written: the browser is the one that lower-cases it
    assert url_match("http://reddit.local/f/books", "http://REDDIT.local/f/books") == 0.0


def test_url_match_needs_every_reference_query_key_and_splits_or():
    """``URLEvaluator``: each reference query key needs one of its values in the page's query; ``|OR|`` splits references."""
    ref = "http://map.local/directions?from=A&mode=car"
    assert url_match(ref, "http://map.local/directions?from=A&to=B&mode=car") == 1.0
    assert url_match(ref, "http://map.local/directions?from=A&to=B&mode=foot") == 0.0
    assert url_match(ref, "http://map.local/directions?from=A") == 0.0
    either = "http://map.local/directions?mode=car |OR| http://map.local/directions?mode=foot"
    assert url_match(either, "http://map.local/directions?mode=foot") == 1.0


def test_html_content_splits_or_and_multiplies_targets():
    """``HTMLContentEvaluator``: must_include alternatives split on ``|OR|``; exact_match of the whole content."""
    pages = {"last": "Weekly thread\nPosted by me", "http://x.local/": "Other"}
    read = pages.__getitem__
    target = {"url": "last", "locator": "", "required_contents": {"must_include": ["nothing |OR| weekly"]}}
    assert html_content([target], read) == 1.0
    other = {"url": "http://x.local/", "locator": "", "required_contents": {"exact_match": "other"}}
    assert html_content([target, other], read) == 1.0
    missing = {"url": "last", "locator": "", "required_contents": {"must_include": ["absent"]}}
    assert html_content([target, missing], read) == 0.0


def test_a_spec_without_evaluators_never_wins():
    world = World(load_data())
    verdict = evaluate({"eval_types": []}, "anything", "http://shopping.local/", world, lambda url: "")
    assert not verdict.won and verdict.score == 0.0


def test_evaluate_multiplies_evaluators_as_evaluator_comb():
    """``EvaluatorComb.__call__``: the product of the evaluators' scores."""
    world = World(load_data())
    spec = {
        "eval_types": ["string_match", "url_match"],
        "reference_answers": {"must_include": ["4"]},
        "reference_url": "http://gitlab.local/a/b/-/issues",
    }
    right = evaluate(spec, "4", "http://gitlab.local/a/b/-/issues", world, lambda url: "")
    wrong_page = evaluate(spec, "4", "http://gitlab.local/a/b", world, lambda url: "")
    assert (right.won, right.score, wrong_page.won, wrong_page.score) == (True, 1.0, False, 0.0)
