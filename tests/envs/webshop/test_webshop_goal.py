"""WebShop's reward as ``get_reward`` of ``web_agent_site/engine/goal.py`` (princeton-nlp/WebShop 64fa2a5) computes it."""

from __future__ import annotations

import pytest

from dreamgym_env.envs.webshop.catalog import OptionChoice, Product
from dreamgym_env.envs.webshop.goal import (
    Goal,
    fuzzy_score,
    matched_options,
    normalize_color,
    score_purchase,
    title_nouns,
)
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

SHIRT = Product(
    index=0,
    id="B0SHIRT001",
    title="Northfield Men's Shirt - Long Sleeve, Machine Washable, Slim Fit",
    brand="Northfield",
    category="fashion",
    product_type="men's shirt",
    price=35.99,
    rating=4.5,
    attributes=("long sleeve", "machine washable", "slim fit"),
    options=(
        OptionChoice("color", "color", ("black", "navy blue")),
        OptionChoice("clothing_size", "size", ("medium", "large")),
    ),
)
GOAL = Goal.of_product(
    SHIRT, ("long sleeve", "machine washable"), {"color": "navy blue", "size": "large"}, 40.0
)
RIGHT = {"color": "navy blue", "size": "large"}


def _dress(title: str) -> Product:
    return Product(
        1, "B0DRESS001", title, "Veloura", "fashion", "women's dress", 30.0, 4.0, ("sleeveless",), ()
    )


def test_full_match_scores_one():
    """``get_reward``: (attributes + options + price) / (n attributes + n options + 1), times r_type."""
    score = score_purchase(SHIRT, RIGHT, GOAL)
    assert score.value == 1.0 and score.won
    assert score.matched_attributes == ("long sleeve", "machine washable")
    assert score.price_ok and score.type_factor == 1.0 and score.title_score == 1.0


def test_missing_option_and_price():
    """``get_reward``: each missed option and a price above ``price_upper`` cost one share."""
    assert score_purchase(SHIRT, {"color": "navy blue"}, GOAL).value == pytest.approx(4 / 5)
    assert score_purchase(SHIRT, {}, GOAL).value == pytest.approx(3 / 5)
    cheap = Goal.of_product(SHIRT, GOAL.attributes, GOAL.options, 30.0)
    score = score_purchase(SHIRT, RIGHT, cheap)
    assert not score.price_ok and score.value == pytest.approx(4 / 5)


def test_options_are_fuzzy_after_colour_normalisation():
    """``get_option_reward`` with ``normalize_color`` (engine/normalize.py): first colour found, then token_set_ratio > 85."""
    assert normalize_color("navy blue") == normalize_color("sky blue") == "blue"
    assert normalize_color("light grey") == "grey" and normalize_color("pack of 2") == "pack of 2"
    assert matched_options(["sky blue"], ["navy blue"]) == ("navy blue",)
    assert matched_options(["x-large"], ["large"]) == ("large",)
    assert matched_options(["pack of 12"], ["pack of 2"]) == ("pack of 2",)
    assert matched_options(["black"], ["navy blue"]) == ()
    assert score_purchase(SHIRT, {"color": "black", "size": "large"}, GOAL).value == pytest.approx(4 / 5)


def test_fuzzy_score_is_thefuzz_token_set_ratio():
    """thefuzz ``token_set_ratio``: processed (lower case, punctuation as space), subset tokens score 100, rounded."""
    assert fuzzy_score("Long-Sleeve", "long sleeve") == 100
    assert fuzzy_score("machine washable cotton", "machine washable") == 100
    assert fuzzy_score("pack of 2", "pack of 12") == 95  # "of pack 2" vs "of pack 12": 2 * 9 / 19
    assert fuzzy_score("wrinkle free", "long sleeve") < 50


def test_attributes_fuzzy_or_substring_of_title_features_description():
    """``get_attribute_reward``: token_set_ratio > 85 against an attribute, else a substring of title, bullets, description."""
    in_title = Goal.of_product(SHIRT, ("slim fit", "men's shirt", "wrinkle free"), {}, 40.0)
    assert score_purchase(SHIRT, {}, in_title).matched_attributes == ("slim fit", "men's shirt")
    in_bullets = Goal.of_product(SHIRT, ("brand: northfield",), {}, 40.0)
    assert score_purchase(SHIRT, {}, in_bullets).matched_attributes == ("brand: northfield",)
    word = SHIRT.description.lower().split()[1]
    assert score_purchase(SHIRT, {}, Goal.of_product(SHIRT, (word,), {}, 40.0)).matched_attributes == (word,)


def test_type_reward_from_title_nouns_query_and_category():
    """``get_type_reward``: r_type 1 / 0.5 / 0.1 / 0 from query match, category match and the title's noun overlap."""
    assert title_nouns("Northfield Men's Shirt - Long Sleeve") == [
        "northfield",
        "men",
        "shirt",
        "long",
        "sleeve",
    ]
    # no query or category match, 2 of 8 target nouns (0.25 > 0.2): still 1
    assert score_purchase(_dress("Veloura Long Sleeve Dress"), {}, GOAL).type_factor == 1.0
    # 1 of 8 (0.125): no match at all, so 0.5
    assert score_purchase(_dress("Veloura Sleeve Dress"), {}, GOAL).type_factor == 0.5
    long_name = Goal.of_product(_dress("A B C D E F G H I J K Dress"), (), {}, 40.0)
    # same query, yet 1 of 12 nouns (< 0.1): 0.1
    assert score_purchase(_dress("Veloura Dress"), {}, long_name).type_factor == 0.1
    # no common noun: 0, whatever else matches
    score = score_purchase(_dress("Veloura Gown"), {}, long_name)
    assert score.query_match and score.type_factor == 0.0 and score.value == 0.0


def test_goal_without_a_target_name_scores_title_as_point_two():
    """``get_type_reward``: a goal name without nouns gives title_score 0.2 (query and breadcrumb: the type's)."""
    data = {
        "product_type": "men's shirt",
        "category": "fashion",
        "attributes": ["long sleeve"],
        "price_upper": 40,
    }
    goal = Goal.from_dict({**data, "options": RIGHT})
    score = score_purchase(SHIRT, RIGHT, goal)
    assert score.title_score == 0.2 and score.query_match and score.won


def test_goal_round_trip_and_missing_goal():
    task = Task(
        id="t", domain="webshop", instruction="x", initial_state="s", metadata={"goal": GOAL.to_dict()}
    )
    assert Goal.of_task(task) == GOAL
    with pytest.raises(ConfigurationError, match="no WebShop goal"):
        Goal.of_task(Task(id="t", domain="webshop", instruction="x", initial_state="s"))
    with pytest.raises(ConfigurationError, match="malformed"):
        Goal.of_task(
            Task(id="t", domain="webshop", instruction="x", initial_state="s", metadata={"goal": {}})
        )
