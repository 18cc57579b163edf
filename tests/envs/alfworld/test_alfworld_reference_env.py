from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamgym_env.envs.alfworld.reference_env import MAX_EPISODE_STEPS, ALFWorldRefEnv
from dreamgym_env.envs.alfworld.tasks import world_of
from dreamgym_env.errors import ConfigurationError, UnknownNameError

# Hand-written solutions of fixed test tasks (rooms kitchen 42, bedroom 43, kitchen 44), in
# ALFWorld's exact commands (TextWorld's PddlEnv.step matches the admissible list after strip()).
SOLUTIONS = {
    "alfworld-test-00000": (  # put some dishsponge on countertop.
        "go to cabinet 12",
        "open cabinet 12",
        "take dishsponge 1 from cabinet 12",
        "go to countertop 1",
        "put dishsponge 1 in/on countertop 1",
    ),
    "alfworld-test-00001": (  # find two bread and put them in fridge.
        "go to countertop 2",
        "take bread 2 from countertop 2",
        "go to fridge 1",
        "open fridge 1",
        "put bread 2 in/on fridge 1",
        "go to countertop 3",
        "take bread 1 from countertop 3",
        "go to fridge 1",
        "  put bread 1 in/on fridge 1 ",
    ),
    "alfworld-test-00002": (  # put a hot bread in fridge.
        "go to countertop 2",
        "take bread 2 from countertop 2",
        "go to microwave 1",
        "heat bread 2 with microwave 1",
        "go to fridge 1",
        "open fridge 1",
        "put bread 2 in/on fridge 1",
    ),
    "alfworld-test-00003": (  # clean some tomato and put it in countertop.
        "go to fridge 1",
        "open fridge 1",
        "take tomato 1 from fridge 1",
        "go to sinkbasin 1",
        "clean tomato 1 with sinkbasin 1",
        "go to countertop 1",
        "put tomato 1 in/on countertop 1",
    ),
    "alfworld-test-00004": (  # look at tissuebox under the desklamp.
        "go to sidetable 2",
        "take tissuebox 1 from sidetable 2",
        "go to desk 1",
        "use desklamp 1",
    ),
    "alfworld-test-00008": (  # cool some winebottle and put it in countertop.
        "go to cabinet 11",
        "open cabinet 11",
        "take winebottle 2 from cabinet 11",
        "go to fridge 1",
        "cool winebottle 2 with fridge 1",
        "go to countertop 1",
        "put winebottle 2 in/on countertop 1",
    ),
}
# Near misses: each leaves out or gets wrong one thing the goal needs.
WRONG = {
    "alfworld-test-00000": ("go to cabinet 12", "take dishsponge 1 from cabinet 12", "go to countertop 1"),
    "alfworld-test-00001": SOLUTIONS["alfworld-test-00001"][:5],
    "alfworld-test-00002": (  # not heated
        "go to countertop 2",
        "take bread 2 from countertop 2",
        "go to fridge 1",
        "open fridge 1",
        "put bread 2 in/on fridge 1",
    ),
    "alfworld-test-00003": (  # not cleaned
        *SOLUTIONS["alfworld-test-00003"][:3],
        "go to countertop 1",
        "put tomato 1 in/on countertop 1",
    ),
    "alfworld-test-00004": (
        "go to desk 1",
        "use desklamp 1",
        "go to sidetable 2",
        "take tissuebox 1 from sidetable 2",
    ),
    "alfworld-test-00008": (  # heated in the fridge instead of cooled
        *SOLUTIONS["alfworld-test-00008"][:4],
        "heat winebottle 2 with fridge 1",
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
    """alfred.twl2's ``intro``: the banner, ``look.feedback`` listing every receptacle, the task."""
    obs, info = env.reset(options={"task": "alfworld-test-00002"})
    assert obs == info["task"].initial_state
    assert obs.startswith(
        "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, "
        "you see a cabinet 12, a cabinet 11, "
    )
    assert obs.endswith(", and a toaster 1.\n\nYour task is to: put a hot bread in fridge.")
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
    """Feedback rules of alfworld 0.3.5's alfred.twl2 (GotoLocation "You arrive at loc N.", PickupObject,
    heatObject, inventory, examineObject, look, PutObject)."""
    (obs1, *_), (obs2, *_), (obs3, *_), (obs4, *_) = play(
        env, "alfworld-test-00002", SOLUTIONS["alfworld-test-00002"][:4]
    )
    assert obs1 == "You arrive at loc 55. On the countertop 2, you see a bread 2, and a potato 1."
    assert obs2 == "You pick up the bread 2 from the countertop 2."
    assert obs3 == "You arrive at loc 27. The microwave 1 is closed."
    assert obs4 == "You heat the bread 2 using the microwave 1."
    assert env.step("inventory")[0] == "You are carrying: a bread 2."
    assert env.step("examine bread 2")[0] == "This is a hot bread 2."
    assert env.step("look")[0] == "You are facing the microwave 1. Next to it, you see nothing."
    assert env.step("go to microwave 1")[0] == "You arrive at loc 27. The microwave 1 is closed."
    env.step("go to fridge 1")
    assert (
        env.step("open fridge 1")[0]
        == "You open the fridge 1. The fridge 1 is open. In it, you see a tomato 1."
    )
    obs, reward, terminated, *_ = env.step("put bread 2 in/on fridge 1")
    assert obs == "You put the bread 2 in/on the fridge 1." and terminated
    env.reset(options={"task": "alfworld-test-00002"})
    assert env.step("inventory")[0] == "You are not carrying anything."
    # the look action binds the agent's location, where no receptacle stands: list_appliances is empty
    assert (
        env.step("look")[0] == "You are in the middle of a room. Looking quickly around you, you see nothing."
    )


def test_clean_heat_and_cool_change_the_object_state(env):
    """alfred.pddl's CleanObject/HeatObject/CoolObject effects; examineObject.feedback's "hot and clean", "cold"."""
    play(
        env,
        "alfworld-test-00003",
        ("go to fridge 1", "open fridge 1", "take tomato 1 from fridge 1", "go to sinkbasin 1"),
    )
    assert env.step("clean tomato 1 with sinkbasin 1")[0] == "You clean the tomato 1 using the sinkbasin 1."
    assert env.abstract_state.object_states == {"tomato 1": ["clean"]}
    env.step("go to microwave 1")
    assert env.step("heat tomato 1 with microwave 1")[0] == "You heat the tomato 1 using the microwave 1."
    assert env.abstract_state.object_states == {"tomato 1": ["clean", "hot"]}
    assert env.step("examine tomato 1")[0] == "This is a hot and clean tomato 1."
    env.step("go to fridge 1")
    assert env.step("cool tomato 1 with fridge 1")[0] == "You cool the tomato 1 using the fridge 1."
    assert env.abstract_state.object_states == {"tomato 1": ["clean", "cool"]}  # cooling undoes heat
    assert env.step("examine tomato 1")[0] == "This is a cool and clean tomato 1."
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
    """alfred.pddl's preconditions: PickupObject needs the receptacle open and empty hands, PutObject
    an open receptacle; GotoLocation allows the current location; unknown text is "Nothing happens."."""
    env.reset(options={"task": "alfworld-test-00000"})
    nothing = [
        "take dishsponge 1 from cabinet 12",  # not there yet
        "open cabinet 12",  # not there yet
        "go to spaceship 1",
        "Go to cabinet 12",  # TextWorld matches the command exactly
        "go to cabinet 12.",
    ]
    for action in nothing:
        assert env.step(action)[0] == "Nothing happens."
    env.step("go to cabinet 12")
    assert env.step("take dishsponge 1 from cabinet 12")[0] == "Nothing happens."  # closed: hidden
    env.step("open cabinet 12")
    env.step("take dishsponge 1 from cabinet 12")
    env.step("go to countertop 1")
    assert env.step("take potato 1 from countertop 2")[0] == "Nothing happens."  # not here
    assert env.step("go to countertop 1")[0].startswith("You arrive at loc ")  # already there: admissible
    env.step("go to cabinet 12")
    assert env.step("close cabinet 12")[0] == "You close the cabinet 12."
    assert env.step("put dishsponge 1 in/on cabinet 12")[0] == "Nothing happens."  # closed
    assert env.abstract_state.inventory == ["dishsponge 1"]


def test_the_lamp_task_needs_the_object_in_hand_at_the_lamp(env):
    """alfred.pddl's ToggleObject sets isToggled for good, so toggleObject.feedback always reads "You turn on"."""
    steps = play(env, "alfworld-test-00004", ("go to desk 1", "use desklamp 1"))
    assert steps[-1][0] == "You turn on the desklamp 1." and steps[-1][4]["score"] == 0.5
    env.step("go to sidetable 2")
    obs, reward, terminated, _, info = env.step("take tissuebox 1 from sidetable 2")
    assert not terminated and info["score"] == 0.5  # holding it, but the lit lamp is elsewhere
    obs, reward, terminated, _, info = env.step("go to desk 1")
    assert terminated and reward == 1.0  # the lamp stayed on
    env.reset(options={"task": "alfworld-test-00004"})
    env.step("go to desk 1")
    assert env.step("examine desklamp 1")[0] == "There's nothing special about desklamp 1."
    env.step("use desklamp 1")
    assert env.step("use desklamp 1")[0] == "You turn on the desklamp 1."
    assert env.step("examine desklamp 1")[0] == "This desklamp 1 is on."
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


def test_slice_receptacle_objects_and_receptacle_rules(env):
    """alfred.pddl's SliceObject (a knife in hand, a sliceable object here) and PutObject's canContain
    (ALFRED's VAL_RECEPTACLE_OBJECTS); alfred.twl2's examineObject rules "This is a normal ..."
    (isReceptacleObject first) and "... sliced ..."; sliceObject.feedback."""
    play(env, "alfworld-test-00008", ("go to countertop 1", "take butterknife 1 from countertop 1"))
    admissible = env.admissible_actions()
    assert {"slice egg 1 with butterknife 1", "slice tomato 1 with butterknife 1"} <= set(admissible)
    assert "slice bowl 1 with butterknife 1" not in admissible  # a bowl is not sliceable
    assert (
        env.step("slice tomato 1 with butterknife 1")[0] == "You sliced the tomato 1 with the butterknife 1."
    )
    assert env.step("examine bowl 1")[0] == "This is a normal bowl 1. In it, you see nothing."
    env.step("go to fridge 1")
    env.step("open fridge 1")
    assert "put butterknife 1 in/on fridge 1" not in env.admissible_actions()  # no knife in a fridge
    assert env.step("put butterknife 1 in/on fridge 1")[0] == "Nothing happens."
    env.step("go to countertop 1")
    env.step("put butterknife 1 in/on countertop 1")
    env.step("take tomato 1 from countertop 1")
    assert env.step("examine tomato 1")[0] == "This is a sliced tomato 1."
    env.step("go to sinkbasin 1")
    env.step("clean tomato 1 with sinkbasin 1")
    assert env.step("examine tomato 1")[0] == "This is a clean sliced tomato 1."


def test_process_commands_are_offered_only_for_objects_that_take_the_state(env):
    """alfred.pddl's HeatObject needs ``heatable`` (ALFRED's VAL_ACTION_OBJECTS['Heatable']): no bowl in it."""
    play(
        env,
        "alfworld-test-00008",
        ("go to countertop 1", "take bowl 1 from countertop 1", "go to microwave 1"),
    )
    assert not any(a.startswith("heat ") for a in env.admissible_actions())
    assert env.step("heat bowl 1 with microwave 1")[0] == "Nothing happens."
    env.step("go to fridge 1")
    assert "cool bowl 1 with fridge 1" in env.admissible_actions()  # Coolable has the bowl


@pytest.mark.parametrize("task_id", ["alfworld-test-00000", "alfworld-test-00002"])
def test_the_tasks_hidden_world_is_what_the_room_shows(env, task_id):
    """``Task.world`` (read by the experience model, never shown) lists what each receptacle holds at the start."""
    _, info = env.reset(options={"task": task_id})
    world = info["task"].world
    assert world not in env.state
    lines = [json.loads("{" + line + "}") for line in world.splitlines()]
    placed = {r: ", ".join(objs) for line in lines for r, objs in line.items() if objs}
    assert len(world.splitlines()) == len(world_of(info["task"]).receptacles)  # one line a receptacle
    if task_id == "alfworld-test-00000":
        assert "dishsponge 1" in placed["cabinet 12"]  # where SOLUTIONS takes it from
    for receptacle in world_of(info["task"]).receptacles:  # each one seen first, from the start
        env.reset(options={"task": task_id})
        seen = env.step(f"go to {receptacle}")[0]
        if "is closed" in seen:
            seen = env.step(f"open {receptacle}")[0]
        expected = placed[receptacle].split(", ") if receptacle in placed else []
        assert all(f"a {obj}" in seen for obj in expected), (receptacle, seen)
        assert (receptacle in placed) == ("you see nothing" not in seen), (receptacle, seen)
