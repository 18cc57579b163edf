from __future__ import annotations

import numpy as np

from dreamgym_env.domain import ActionError
from dreamgym_env.envs.alfworld.goal import FAMILIES
from dreamgym_env.envs.alfworld.reference_env import ALFWorldRefEnv
from dreamgym_env.envs.alfworld.state import ALFWorldState, admissible_actions, describe, render, see_list
from dreamgym_env.envs.registry import get_domain

DOMAIN = get_domain("alfworld")


def test_lists_follow_alfworld():
    """alfred.twl2's list_empty / list_separator / list_last_separator, every article "a"."""
    assert see_list([]) == "nothing"
    assert see_list(["apple 1"]) == "a apple 1"
    assert see_list(["apple 1", "knife 1"]) == "a apple 1, and a knife 1"
    assert see_list(["a 1", "b 2", "c 3"]) == "a a 1, a b 2, and a c 3"


def test_lists_are_in_textworld_order():
    """TextWorld's State._all_applicable_assignments walks ``sorted(facts)`` (entity ids), and alfworld's
    Demangler (agents/utils/misc.py) gives the first sorted id of a type the highest number: so a
    listing is type ascending, number descending."""
    names = ["cabinet 1", "cabinet 10", "cabinet 2", "apple 3", "pen 1", "pencil 2", "apple 12"]
    assert see_list(names) == (
        "a apple 12, a apple 3, a cabinet 10, a cabinet 2, a cabinet 1, a pen 1, and a pencil 2"
    )


def test_receptacle_views():
    """alfred.twl2's examineReceptacle.feedback: open / closed for openable receptacles, "On the" otherwise."""
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
    assert admissible_actions(state) == [  # GotoLocation does not ask for another location
        "close cabinet 1",
        "examine cabinet 1",
        "examine mug 2",
        "examine plate 1",
        "go to cabinet 1",
        "go to countertop 1",
        "inventory",
        "look",
        "take mug 2 from cabinet 1",
        "take plate 1 from cabinet 1",
    ]


def test_start_state_renders_the_room_and_the_task():
    """alfred.twl2's intro: "-= Welcome to TextWorld, ALFRED! =-\\n\\n#look.feedback#\\n\\n#task#"."""
    state = ALFWorldState(instruction="look at book under the desklamp.", receptacles=["bed 1", "desk 1"])
    assert render(state) == (
        "-= Welcome to TextWorld, ALFRED! =-\n\n"
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
            # the one difference: SliceObject reaches objects the state has not seen in a closed receptacle
            hidden = [
                a
                for a in info["admissible_actions"]
                if a.startswith("slice ") and a.split()[1:3] not in seen(state)
            ]
            assert admissible_actions(state) == [a for a in info["admissible_actions"] if a not in hidden]
            assert ALFWorldState.model_validate_json(state.model_dump_json()) == state
            actions = info["admissible_actions"]
            obs, _, terminated, _, info = env.step(actions[int(rng.integers(len(actions)))])
            if terminated:
                break


def seen(state: ALFWorldState) -> list[list[str]]:
    here = state.seen.get(state.location, []) if state.location else []
    return [name.split() for name in here]


def _rubric_and_truth(
    env: ALFWorldRefEnv, policy, episodes: int
) -> tuple[list[tuple[float, float]], set[str]]:
    """(rubric of the env's own next state, the env's reward) at every step of ``episodes`` episodes, and the families won."""
    pairs, won = [], set()
    for episode in range(episodes):
        obs, info = env.reset(seed=episode)
        task, done = info["task"], False
        while not done:
            action = policy(obs, info)
            obs, reward, terminated, truncated, info = env.step(action)
            parsed = DOMAIN.parse_action(action)
            assert not isinstance(parsed, ActionError)
            rubric = DOMAIN.rubric_reward(task, env.abstract_state, parsed)
            assert rubric is not None
            pairs.append((rubric, float(reward)))
            if terminated and reward == 1.0:
                won.add(task.metadata["goal"]["family"])
            done = terminated or truncated
    return pairs, won


def test_the_rubric_agrees_with_the_reference_env_at_every_step():
    env = ALFWorldRefEnv(split="test", max_steps=50)
    expert_pairs, won = _rubric_and_truth(env, DOMAIN.expert_policy(), 60)
    rng = np.random.default_rng(0)

    def random_policy(obs, info):
        actions = info["admissible_actions"]
        return actions[int(rng.integers(len(actions)))]

    random_pairs, _ = _rubric_and_truth(env, random_policy, 20)
    assert won == set(FAMILIES)  # the rubric meets wins of every family
    assert all(rubric == truth for rubric, truth in expert_pairs + random_pairs)


def test_the_rubric_scores_what_a_state_shows():
    task = next(t for t in DOMAIN.tasks("test") if t.metadata["goal"]["family"] == "pick_clean_then_place")
    goal = task.metadata["goal"]
    obj, recep = f"{goal['object_type']} 1", f"{goal['receptacle_type']} 1"
    shows = ALFWorldState(instruction=task.instruction, location=recep, seen={recep: [obj]}, event="message")
    put = DOMAIN.parse_action(f"put {obj} in/on {recep}")
    assert not isinstance(put, ActionError)
    assert DOMAIN.rubric_reward(task, shows, put) == 0.0  # placed, but not clean
    clean = shows.model_copy(update={"object_states": {obj: ["clean"]}})
    assert DOMAIN.rubric_reward(task, clean, put) == 1.0
    elsewhere = clean.model_copy(update={"seen": {"garbagecan 1": [obj]}})
    assert DOMAIN.rubric_reward(task, elsewhere, put) == 0.0
    free = DOMAIN.make_task("tidy up the room")
    assert DOMAIN.rubric_reward(free, clean, put) is None  # no goal: the model's reward stands
