from __future__ import annotations

import numpy as np

from dreamgym_env.envs.alfworld.reference_env import ALFWorldRefEnv
from dreamgym_env.envs.alfworld.state import ALFWorldState, admissible_actions, describe, render, see_list


def test_lists_follow_alfworld():
    assert see_list([]) == "nothing"
    assert see_list(["apple 1"]) == "a apple 1"
    assert see_list(["apple 1", "knife 1"]) == "a apple 1, and a knife 1"
    assert see_list(["a 1", "b 2", "c 3"]) == "a a 1, a b 2, and a c 3"


def test_receptacle_views():
    assert describe("countertop 1", None, ["apple 1"]) == "On the countertop 1, you see a apple 1."
    assert describe("cabinet 1", False, ["mug 2"]) == "The cabinet 1 is closed."
    assert describe("cabinet 1", True, []) == "The cabinet 1 is open. In it, you see nothing."


def test_render_is_deterministic_and_round_trips_through_json():
    state = ALFWorldState(
        instruction="put a mug in cabinet.",
        receptacles=["cabinet 1", "countertop 1"],
        location="cabinet 1",
        is_open=True,
        seen={"cabinet 1": ["mug 2", "plate 1"]},
        event="open",
    )
    text = render(state)
    assert text == "You open the cabinet 1. The cabinet 1 is open. In it, you see a mug 2, and a plate 1."
    again = ALFWorldState.model_validate_json(state.model_dump_json())
    assert again == state and render(again) == text
    assert admissible_actions(state) == [
        "close cabinet 1",
        "examine cabinet 1",
        "examine mug 2",
        "examine plate 1",
        "go to countertop 1",
        "inventory",
        "look",
        "take mug 2 from cabinet 1",
        "take plate 1 from cabinet 1",
    ]


def test_start_state_renders_the_room_and_the_task():
    state = ALFWorldState(instruction="look at book under the desklamp.", receptacles=["bed 1", "desk 1"])
    assert render(state) == (
        "You are in the middle of a room. Looking quickly around you, you see a bed 1, and a desk 1."
        "\n\nYour task is to: look at book under the desklamp."
    )


def test_the_env_text_is_always_the_render_of_its_abstract_state():
    env = ALFWorldRefEnv(split="test")
    rng = np.random.default_rng(0)
    for episode in range(20):
        obs, info = env.reset(seed=episode)
        for _ in range(40):
            state = env.abstract_state
            assert render(state) == obs
            assert admissible_actions(state) == info["admissible_actions"]
            assert ALFWorldState.model_validate_json(state.model_dump_json()) == state
            actions = info["admissible_actions"]
            obs, _, terminated, _, info = env.step(actions[int(rng.integers(len(actions)))])
            if terminated:
                break
