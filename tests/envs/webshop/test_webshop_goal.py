from __future__ import annotations

import pytest

from dreamgym_env.envs.webshop.catalog import OptionChoice, Product
from dreamgym_env.envs.webshop.goal import Goal, score_purchase
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
GOAL = Goal(
    "men's shirt",
    "fashion",
    ("long sleeve", "machine washable"),
    {"color": "navy blue", "size": "large"},
    40.0,
    "B0SHIRT001",
)
RIGHT = {"color": "navy blue", "size": "large"}


def test_full_match_scores_one():
    score = score_purchase(SHIRT, RIGHT, GOAL)
    assert score.value == 1.0 and score.won
    assert score.matched_attributes == ("long sleeve", "machine washable")
    assert score.price_ok and score.type_factor == 1.0


def test_missing_option():
    score = score_purchase(SHIRT, {"color": "navy blue"}, GOAL)
    assert score.value == pytest.approx(4 / 5) and not score.won
    assert score_purchase(SHIRT, {}, GOAL).value == pytest.approx(3 / 5)


def test_wrong_option_value():
    assert score_purchase(SHIRT, {"color": "black", "size": "large"}, GOAL).value == pytest.approx(4 / 5)


def test_over_price():
    goal = Goal(GOAL.product_type, GOAL.category, GOAL.attributes, GOAL.options, 30.0)
    score = score_purchase(SHIRT, RIGHT, goal)
    assert not score.price_ok and score.value == pytest.approx(4 / 5)


def test_missing_attribute():
    goal = Goal(GOAL.product_type, GOAL.category, ("long sleeve", "wrinkle free"), GOAL.options, 40.0)
    assert score_purchase(SHIRT, RIGHT, goal).value == pytest.approx(4 / 5)


def test_wrong_type_same_category_halves_other_category_zeroes():
    same = Goal("women's dress", "fashion", GOAL.attributes, GOAL.options, 40.0)
    assert score_purchase(SHIRT, RIGHT, same).value == pytest.approx(0.5)
    other = Goal("yoga mat", "sports", GOAL.attributes, GOAL.options, 40.0)
    assert score_purchase(SHIRT, RIGHT, other).value == 0.0


def test_wording_tolerance():
    goal = Goal("Men's Shirt", "fashion", ("long-sleeve", "machine washable"), {"color": "Navy Blue"}, 40.0)
    assert score_purchase(SHIRT, {"color": "navy blue", "size": "medium"}, goal).won


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
