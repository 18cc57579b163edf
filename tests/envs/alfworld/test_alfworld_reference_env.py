from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamgym_env.envs.alfworld.reference_env import MAX_EPISODE_STEPS, ALFWorldRefEnv
from dreamgym_env.errors import ConfigurationError, UnknownNameError

# Hand-written solutions of fixed test tasks (rooms kitchen 42, bedroom 43, kitchen 44).
SOLUTIONS = {
    "alfworld-test-00000": (  # put some bread on garbagecan.
        "go to cabinet 3",
        "open cabinet 3",
        "take bread 2 from cabinet 3",
        "go to garbagecan 1",
        "put bread 2 on garbagecan 1",
    ),
    "alfworld-test-00001": (  # find two bread and put them in countertop.
        "go to cabinet 5",
        "open cabinet 5",
        "take bread 1 from cabinet 5",
        "go to countertop 2",
        "put bread 1 in/on countertop 2",
        "go to cabinet 3",
        "open cabinet 3",
        "take bread 2 from cabinet 3",
        "go to countertop 2",
        "put bread 2 in countertop 2",
    ),
    "alfworld-test-00002": (  # put a hot bread in countertop.
        "go to cabinet 3",
        "open cabinet 3",
        "take bread 2 from cabinet 3",
        "go to microwave 1",
        "heat bread 2 with microwave 1",
        "go to countertop 3",
        "put bread 2 in countertop 3",
    ),
    "alfworld-test-00003": (  # clean some spatula and put it in drawer.
        "Go to countertop 2",
        "take spatula 1 from countertop 2",
        "go to sinkbasin 1",
        "clean spatula 1 with sinkbasin 1",
        "go to drawer 4",
        "open drawer 4",
        "put spatula 1 in drawer 4",
    ),
    "alfworld-test-00004": (  # look at teddybear under the desklamp.
        "go to bed 1",
        "take teddybear 1 from bed 1",
        "go to desk 1",
        "toggle desklamp 1",
    ),
    "alfworld-test-00008": (  # cool some winebottle and put it in countertop.
        "go to cabinet 6",
        "open cabinet 6",
        "take winebottle 1 from cabinet 6",
        "go to fridge 1",
        "cool winebottle 1 with fridge 1",
        "go to countertop 2",
        "put winebottle 1 on countertop 2.",
    ),
}
# Near misses: each leaves out or gets wrong one thing the goal needs.
WRONG = {
    "alfworld-test-00000": ("go to cabinet 3", "take bread 2 from cabinet 3", "go to garbagecan 1"),
    "alfworld-test-00001": SOLUTIONS["alfworld-test-00001"][:5],
    "alfworld-test-00002": (  # not heated
        "go to cabinet 3",
        "open cabinet 3",
        "take bread 2 from cabinet 3",
        "go to countertop 3",
        "put bread 2 in countertop 3",
    ),
    "alfworld-test-00003": (  # not cleaned
        "go to countertop 2",
        "take spatula 1 from countertop 2",
        "go to drawer 4",
        "open drawer 4",
        "put spatula 1 in drawer 4",
    ),
    "alfworld-test-00004": ("go to desk 1", "use desklamp 1", "go to bed 1", "take teddybear 1 from bed 1"),
    "alfworld-test-00008": (  # heated in the fridge instead of cooled
        *SOLUTIONS["alfworld-test-00008"][:4],
        "heat winebottle 1 with fridge 1",
        *SOLUTIONS["alfworld-test-00008"][5:],
    ),
}


@pytest.fixture
def env() -> ALFWorldRefEnv:
    return ALFWorldRefEnv(split="test")


def play(env: ALFWorldRefEnv, task_id: str, actions) -> list[tuple]:
    env.reset(options={"task": task_id})
    return [env.step(action) for action in actions]


def test_check_env_passes():
    gym.register("Test/ALFWorldRef-v0", entry_point=ALFWorldRefEnv, max_episode_steps=MAX_EPISODE_STEPS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(gym.make("Test/ALFWorldRef-v0").unwrapped, skip_render_check=True)
    finally:
        del gym.registry["Test/ALFWorldRef-v0"]


def test_reset_shows_the_room_and_the_task(env):
    obs, info = env.reset(options={"task": "alfworld-test-00002"})
    assert obs == info["task"].initial_state
    assert obs.startswith(
        "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, "
    )
    assert obs.endswith(", and a toaster 1.\n\nYour task is to: put a hot bread in countertop.")
    assert info["source"] == "real" and info["task_id"] == "alfworld-test-00002"
    assert "go to fridge 1" in info["admissible_actions"] and "look" in info["admissible_actions"]
    assert env.state == obs


@pytest.mark.parametrize("task_id", sorted(SOLUTIONS))
def test_hand_written_solutions_win(env, task_id):
    steps = play(env, task_id, SOLUTIONS[task_id])
    assert all(info["action_valid"] for *_, info in steps)
    assert [reward for _, reward, *_ in steps] == [0.0] * (len(steps) - 1) + [1.0]
    *_, (obs, reward, terminated, truncated, info) = steps
    assert terminated and not truncated and info["won"] and info["score"] == 1.0


@pytest.mark.parametrize("task_id", sorted(WRONG))
def test_near_misses_do_not_win(env, task_id):
    steps = play(env, task_id, WRONG[task_id])
    assert not any(terminated or info["won"] or reward for _, reward, terminated, _, info in steps)
    assert steps[-1][4]["score"] < 1.0


def test_alfworld_observations(env):
    (obs1, *_), (obs2, *_), (obs3, *_), (obs4, *_), (obs5, *_) = play(
        env, "alfworld-test-00002", SOLUTIONS["alfworld-test-00002"][:5]
    )
    assert obs1 == "You arrive at cabinet 3. The cabinet 3 is closed."
    assert obs2 == "You open the cabinet 3. The cabinet 3 is open. In it, you see a bread 2."
    assert obs3 == "You pick up the bread 2 from the cabinet 3."
    assert obs4 == "You arrive at microwave 1. The microwave 1 is closed."
    assert obs5 == "You heat the bread 2 using the microwave 1."
    assert env.step("inventory")[0] == "You are carrying: a bread 2."
    assert env.step("examine bread 2")[0] == "This is a hot bread 2."
    assert env.step("look")[0] == "You are facing the microwave 1. Next to it, you see nothing."
    obs, *_ = env.step("go to countertop 1")
    assert (
        obs
        == "You arrive at countertop 1. On the countertop 1, you see a winebottle 1, a apple 1, and a lettuce 1."
    )
    obs, reward, terminated, *_ = env.step("put bread 2 in/on countertop 1")
    assert obs == "You put the bread 2 in/on the countertop 1." and terminated
    env.reset(options={"task": "alfworld-test-00002"})
    assert env.step("inventory")[0] == "You are not carrying anything."
    assert env.step("look")[0].startswith(
        "You are in the middle of a room. Looking quickly around you, you see"
    )


def test_clean_heat_and_cool_change_the_object_state(env):
    play(
        env,
        "alfworld-test-00008",
        ("go to countertop 1", "take tomato 1 from countertop 1", "go to sinkbasin 1"),
    )
    assert env.step("clean tomato 1 with sinkbasin 1")[0] == "You clean the tomato 1 using the sinkbasin 1."
    assert env.abstract_state.object_states == {"tomato 1": ["clean"]}
    env.step("go to microwave 1")
    assert env.step("heat tomato 1 with microwave 1")[0] == "You heat the tomato 1 using the microwave 1."
    assert env.abstract_state.object_states == {"tomato 1": ["clean", "hot"]}
    env.step("go to fridge 1")
    assert env.step("cool tomato 1 with fridge 1")[0] == "You cool the tomato 1 using the fridge 1."
    assert env.abstract_state.object_states == {"tomato 1": ["clean", "cool"]}  # cooling undoes heat
    # the tool must be the right one, at the agent's location, for an object that can take the state
    for action in (
        "clean tomato 1 with fridge 1",
        "heat tomato 1 with microwave 1",
        "cool tomato 9 with fridge 1",
    ):
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs == "Nothing happens." and not info["action_valid"]
    assert env.abstract_state.object_states == {"tomato 1": ["clean", "cool"]}


def test_alfworld_rules(env):
    env.reset(options={"task": "alfworld-test-00000"})
    nothing = [
        "take bread 2 from cabinet 3",  # not there yet
        "open cabinet 3",  # not there yet
        "go to spaceship 1",
    ]
    for action in nothing:
        assert env.step(action)[0] == "Nothing happens."
    env.step("go to cabinet 3")
    assert env.step("take bread 2 from cabinet 3")[0] == "Nothing happens."  # closed: hidden
    env.step("open cabinet 3")
    env.step("take bread 2 from cabinet 3")
    env.step("go to countertop 1")
    assert env.step("take apple 1 from countertop 1")[0] == "Nothing happens."  # hands full
    assert env.step("go to countertop 1")[0] == "Nothing happens."  # already there
    env.step("go to cabinet 3")
    assert env.step("close cabinet 3")[0] == "You close the cabinet 3."
    assert env.step("put bread 2 in cabinet 3")[0] == "Nothing happens."  # closed
    assert env.abstract_state.inventory == ["bread 2"]


def test_the_lamp_task_needs_the_object_in_hand_at_the_lamp(env):
    steps = play(env, "alfworld-test-00004", ("go to desk 1", "use desklamp 1"))
    assert steps[-1][0] == "You turn on the desklamp 1." and steps[-1][4]["score"] == 0.5
    env.step("go to bed 1")
    obs, reward, terminated, _, info = env.step("take teddybear 1 from bed 1")
    assert not terminated and info["score"] == 0.5  # holding it, but the lit lamp is elsewhere
    obs, reward, terminated, _, info = env.step("go to desk 1")
    assert terminated and reward == 1.0  # the lamp stayed on
    env.reset(options={"task": "alfworld-test-00004"})
    env.step("go to desk 1")
    env.step("use desklamp 1")
    assert env.step("use desklamp 1")[0] == "You turn off the desklamp 1."
    assert env.step("take desklamp 1 from desk 1")[0] == "Nothing happens."


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(), st.text(alphabet="gotakeputinonfridgecabinet 123/", max_size=40)))
def test_any_text_is_safe(text):
    env = ALFWorldRefEnv(split="test")
    env.reset(options={"task": "alfworld-test-00000"})
    obs, reward, terminated, truncated, info = env.step(text)
    assert isinstance(obs, str) and reward == 0.0 and not terminated
    if not info["action_valid"]:
        assert obs == "Nothing happens." and info["error"] and info["score"] == 0.0


def test_huge_and_odd_actions_never_raise(env):
    env.reset(options={"task": "alfworld-test-00000"})
    for action in ("x" * 100_000, "\ud800\udfff", "go to cabinet 1\x00", None, 42):
        obs, reward, terminated, truncated, info = env.step(action)  # type: ignore[arg-type]
        assert obs == "Nothing happens." and not info["action_valid"] and reward == 0.0


def test_score_reward_is_the_change_of_the_score(env):
    env = ALFWorldRefEnv(split="test", reward="score")
    steps = play(env, "alfworld-test-00001", SOLUTIONS["alfworld-test-00001"])
    rewards = [reward for _, reward, *_ in steps]
    assert rewards[4] == 0.5 and rewards[-1] == 0.5 and sum(rewards) == 1.0
    assert [info["score"] for *_, info in steps][4:6] == [0.5, 0.5]


def test_seeds_reproduce_episodes():
    def episode(seed: int) -> list[str]:
        env = ALFWorldRefEnv()
        obs, info = env.reset(seed=seed)
        texts = [obs]
        for i in range(15):
            actions = info["admissible_actions"]
            obs, *_, info = env.step(actions[(7 * i + seed) % len(actions)])
            texts.append(obs)
        return texts

    assert episode(3) == episode(3)
    assert episode(3) != episode(4)


def test_replay_reaches_the_same_state(env):
    actions = list(SOLUTIONS["alfworld-test-00002"][:5])
    play(env, "alfworld-test-00002", actions)
    state, text = env.abstract_state, env.state
    other = ALFWorldRefEnv(split="test")
    obs, info = other.replay("alfworld-test-00002", actions)
    assert obs == text and other.abstract_state == state and info["action_valid"]
    with pytest.raises(ConfigurationError, match="ended"):
        other.replay("alfworld-test-00004", [*SOLUTIONS["alfworld-test-00004"], "look"])
    with pytest.raises(ConfigurationError, match="replay"):
        other.restore(other.tasks[0], text)
    assert not ALFWorldRefEnv.restorable


def test_max_steps_truncates():
    env = ALFWorldRefEnv(max_steps=2)
    env.reset(seed=0)
    assert env.step("look")[3] is False
    assert env.step("look")[3] is True
    with pytest.raises(ConfigurationError):
        env.step("look")


def test_bad_arguments_and_tasks(env):
    with pytest.raises(ConfigurationError):
        ALFWorldRefEnv(reward="dense")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        ALFWorldRefEnv(max_steps=0)
    with pytest.raises(UnknownNameError):
        env.reset(options={"task": "alfworld-test-99999"})
    with pytest.raises(ConfigurationError, match="free instructions"):
        env.reset(options={"task": "put a mug in cabinet."})
    with pytest.raises(ConfigurationError):
        env.step("look")  # before reset


def test_explicit_task_list_and_render():
    env = ALFWorldRefEnv(split="test", render_mode="ansi")
    tasks = env.tasks[:2]
    env = ALFWorldRefEnv(tasks=tasks, render_mode="ansi")
    obs, info = env.reset(seed=1)
    assert info["task"] in tasks and env.render() == obs
