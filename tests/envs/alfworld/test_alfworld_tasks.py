from __future__ import annotations

from collections import Counter

import pytest

from dreamgym_env.envs.alfworld.goal import FAMILIES, Goal, GoalCheck, parse_instruction
from dreamgym_env.envs.alfworld.household import Household
from dreamgym_env.envs.alfworld.tasks import is_test_world, load_tasks, world_of
from dreamgym_env.envs.alfworld.world import can_contain
from dreamgym_env.errors import UnknownNameError


@pytest.fixture(scope="module")
def tasks():
    return load_tasks()


def test_there_are_enough_distinct_tasks(tasks):
    everything = (*tasks.train, *tasks.test)
    assert len(tasks.train) == 3528 and len(tasks.test) == 504
    assert len({t.id for t in everything}) == len(everything)
    goals = {(t.metadata["scene"], t.metadata["world_seed"], t.instruction) for t in everything}
    assert len(goals) == len(everything) >= 3000


def test_the_split_is_by_room_and_fixed(tasks):
    train_rooms = {t.metadata["world_seed"] for t in tasks.train}
    test_rooms = {t.metadata["world_seed"] for t in tasks.test}
    assert not train_rooms & test_rooms
    assert all(is_test_world(seed) for seed in test_rooms)
    assert (tasks.train[0].id, tasks.train[0].instruction) == (
        "alfworld-train-00000",
        "put two knife in diningtable.",
    )
    assert (tasks.test[0].id, tasks.test[0].instruction) == (
        "alfworld-test-00000",
        "put some dishsponge on countertop.",
    )
    assert tasks.test[4].instruction == "look at tissuebox under the desklamp."
    assert load_tasks() is tasks  # built once per process


def test_every_family_is_in_both_splits(tasks):
    for split in (tasks.train, tasks.test):
        counts = Counter(t.metadata["goal"]["family"] for t in split)
        assert set(counts) == set(FAMILIES)
        assert min(counts.values()) >= len(split) // 20


def test_tasks_are_solvable_and_not_already_solved(tasks):
    for task in tasks.test:
        goal, world = Goal.of_task(task), world_of(task)
        assert goal.infeasibility(world) is None
        assert GoalCheck(goal, world).score(Household(world)) == 0.0
        assert parse_instruction(task.instruction) == goal
        assert task.domain == "alfworld"
        assert task.initial_state.endswith(f"\n\nYour task is to: {task.instruction}")


def test_unknown_split(tasks):
    with pytest.raises(UnknownNameError):
        tasks.split("validation")


def test_every_goal_is_one_alfred_allows(tasks):
    """alfred.pddl's PutObject needs canContain (ALFRED's VAL_RECEPTACLE_OBJECTS): no goal asks for a
    placement that the real game could never make."""
    for task in (*tasks.train, *tasks.test):
        goal = task.metadata["goal"]
        if goal["receptacle_type"] is not None:
            assert can_contain(goal["receptacle_type"], goal["object_type"]), task.id
