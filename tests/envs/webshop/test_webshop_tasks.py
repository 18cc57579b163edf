from __future__ import annotations

import re

import pytest

from dreamgym_env.envs.webshop.catalog import Catalog, load_catalog
from dreamgym_env.envs.webshop.goal import Goal, score_purchase
from dreamgym_env.envs.webshop.pages import search_page
from dreamgym_env.envs.webshop.tasks import generate_tasks, load_tasks
from dreamgym_env.errors import ConfigurationError, UnknownNameError


def test_at_least_5000_distinct_tasks_fixed_split():
    tasks = load_tasks()
    everything = [*tasks.train, *tasks.test]
    assert len(everything) >= 5000
    assert len({t.instruction for t in everything}) == len(everything)
    assert len({t.id for t in everything}) == len(everything)
    assert len(tasks.test) == 1000 and len(tasks.train) == 5000
    assert all(t.id.startswith("webshop-test-") for t in tasks.test)
    assert tasks.split("train") is tasks.train
    with pytest.raises(UnknownNameError):
        tasks.split("validation")


def test_generation_is_deterministic():
    catalog = Catalog(5, 100)
    a, b = generate_tasks(catalog, 60), generate_tasks(catalog, 60)
    assert a == b
    assert a.test[0].id == "webshop-c5n100-test-00000"
    assert generate_tasks(Catalog(6, 100), 60).train != a.train


def test_every_task_is_solvable_by_its_target():
    catalog = load_catalog()
    for task in (*load_tasks().train, *load_tasks().test):
        goal = Goal.of_task(task)
        target = catalog.by_id[goal.target_id]
        assert score_purchase(target, dict(goal.options), goal).won, task.id
        assert task.initial_state == search_page(task.instruction)
        assert task.metadata["catalog_seed"] == 0 and task.metadata["num_products"] == 2000


def test_instruction_names_the_goal():
    for task in load_tasks().test[:200]:
        goal = Goal.of_task(task)
        text = task.instruction
        assert goal.product_type in text
        assert all(a in text for a in goal.attributes)
        assert all(v in text for v in goal.options.values())
        assert f"{goal.price_upper:.2f} dollars" in text
        assert re.fullmatch(r"[a-z0-9 ,.'&-]+", text), text


def test_goal_attributes_need_not_be_in_the_title():
    """Real WebShop goals take their attributes from the product's attribute list (engine/goal.py
    ``get_human_goals``: ``instruction_attributes``), which its title need not name; the reward then
    matches them against that list (``get_attribute_reward``)."""
    catalog = load_catalog()
    hidden = 0
    for task in load_tasks().train[:1000]:
        goal = Goal.of_task(task)
        title = catalog.by_id[goal.target_id].title.lower()
        hidden += any(a not in title for a in goal.attributes)
    assert 100 < hidden < 900


def test_too_few_tasks_refused():
    with pytest.raises(ConfigurationError):
        generate_tasks(Catalog(0, 100), 3)
