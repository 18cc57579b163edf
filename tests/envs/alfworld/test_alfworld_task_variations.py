from __future__ import annotations

import pytest

from dreamgym_env.envs.alfworld.domain import ALFWorldDomain
from dreamgym_env.envs.alfworld.reference_env import ALFWorldRefEnv
from dreamgym_env.task_variations import Rejection
from dreamgym_env.types import Task

DOMAIN = ALFWorldDomain()


@pytest.fixture
def variations():
    return DOMAIN.task_variations()


@pytest.fixture
def kitchen_seed() -> Task:
    return next(t for t in DOMAIN.tasks("test") if t.id == "alfworld-test-00002")  # kitchen 42


def candidate(**goal):
    return {"parent_id": "alfworld-test-00002", "receptacle_type": None, "lamp_type": None, **goal}


def test_a_feasible_candidate_becomes_a_solvable_task(variations, kitchen_seed):
    task = variations.build(
        candidate(family="pick_cool_then_place", object_type="Apple", receptacle_type="countertop"),
        kitchen_seed,
    )
    assert isinstance(task, Task)
    assert task.instruction == "put a cool apple in countertop."
    assert task.parent_id == kitchen_seed.id and task.metadata["generated"]
    assert task.metadata["world_seed"] == kitchen_seed.metadata["world_seed"]
    assert task.initial_state.endswith("Your task is to: put a cool apple in countertop.")
    env = ALFWorldRefEnv(tasks=[task])
    expert = DOMAIN.expert_policy()
    obs, info = env.reset(options={"task": task})
    for _ in range(20):
        obs, reward, terminated, _, info = env.step(expert(obs, info))
        if terminated:
            break
    assert info["won"]


@pytest.mark.parametrize(
    "bad",
    [
        {"family": "pick_and_fly", "object_type": "apple", "receptacle_type": "fridge"},
        {"family": "pick_and_place", "object_type": 3, "receptacle_type": "fridge"},
        {"family": "pick_and_place", "object_type": "apple"},
        {"family": "look_at_obj_in_light", "object_type": "apple", "lamp_type": "candle"},
        {
            "family": "look_at_obj_in_light",
            "object_type": "apple",
            "lamp_type": "desklamp",
            "receptacle_type": "desk",
        },
        {
            "family": "pick_and_place",
            "object_type": "apple",
            "receptacle_type": "fridge",
            "lamp_type": "desklamp",
        },
    ],
)
def test_malformed_candidates_are_rejected(variations, kitchen_seed, bad):
    result = variations.build(candidate(**bad), kitchen_seed)
    assert isinstance(result, Rejection) and result.kind == "malformed"


@pytest.mark.parametrize(
    ("goal", "reason"),
    [
        ({"family": "pick_and_place", "object_type": "book", "receptacle_type": "fridge"}, "no book"),
        ({"family": "pick_and_place", "object_type": "apple", "receptacle_type": "bed"}, "no bed"),
        (
            {"family": "pick_two_obj_and_place", "object_type": "apple", "receptacle_type": "fridge"},
            "1 apple",
        ),
        ({"family": "look_at_obj_in_light", "object_type": "apple", "lamp_type": "desklamp"}, "no desklamp"),
        ({"family": "pick_heat_then_place", "object_type": "saltshaker", "receptacle_type": "fridge"}, "hot"),
        ({"family": "pick_and_place", "object_type": "egg", "receptacle_type": "garbagecan"}, "already"),
        # alfred.pddl's PutObject needs canContain (ALFRED's VAL_RECEPTACLE_OBJECTS has no apple on a shelf)
        (
            {"family": "pick_and_place", "object_type": "apple", "receptacle_type": "shelf"},
            "receptacle rules",
        ),
    ],
)
def test_infeasible_candidates_are_rejected(variations, kitchen_seed, goal, reason):
    result = variations.build(candidate(**goal), kitchen_seed)
    assert isinstance(result, Rejection) and result.kind == "infeasible"
    assert reason in result.reason


def test_a_bathroom_has_no_microwave(variations):
    bathroom = next(t for t in DOMAIN.tasks("test") if t.metadata["scene"] == "bathroom")
    result = variations.build(
        candidate(family="pick_heat_then_place", object_type="soapbar", receptacle_type="cabinet"), bathroom
    )
    assert isinstance(result, Rejection) and result.kind == "infeasible"


def test_fingerprint_is_the_goal_in_its_room(variations, kitchen_seed):
    same = variations.build(
        candidate(family="pick_heat_then_place", object_type="bread", receptacle_type="fridge"),
        kitchen_seed,
    )
    assert isinstance(same, Task)
    assert variations.fingerprint(same) == variations.fingerprint(kitchen_seed)
    other = variations.build(
        candidate(family="pick_heat_then_place", object_type="bread", receptacle_type="countertop"),
        kitchen_seed,
    )
    assert isinstance(other, Task) and variations.fingerprint(other) != variations.fingerprint(kitchen_seed)
    apple = candidate(family="pick_heat_then_place", object_type="apple", receptacle_type="fridge")
    here = variations.build(apple, kitchen_seed)
    elsewhere = variations.build(
        apple, next(t for t in DOMAIN.tasks("test") if t.metadata["world_seed"] == 44)
    )
    assert isinstance(here, Task) and isinstance(elsewhere, Task)
    assert here.instruction == elsewhere.instruction and here.id != elsewhere.id


def test_schema_and_context(variations, kitchen_seed):
    schema = variations.candidate_schema()
    assert set(schema["required"]) == {"parent_id", "family", "object_type", "receptacle_type", "lamp_type"}
    context = variations.seed_context(kitchen_seed)
    assert "kitchen" in context and "bread x2" in context and "microwave" in context
    assert "put a clean {obj} in {recep}." in variations.describe()
