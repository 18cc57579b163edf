"""The toy pack itself and the generic envs on it: registry ids, DreamEnv, the vector env.

check_env on both toy ids is in ``tests/envs/test_packs.py``, with every other pack."""

from __future__ import annotations

import gymnasium as gym
import pytest

from dreamgym_env.domain import ACTION_SLOT, ActionError, ParsedAction, ReferenceEnv
from dreamgym_env.envs.registry import (
    get_domain,
    reference_id,
    register_domain,
    registered_domains,
    synthetic_id,
    unregister_domain,
)
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.errors import ConfigurationError, UnknownNameError

from .pack import ToyDomain, ToyRefEnv, goal_of


def test_registering_the_pack_gives_both_ids(toy):
    assert get_domain("toy") is toy and registered_domains()["toy"] is toy
    assert (synthetic_id(toy), reference_id(toy)) == ("DreamGym/Toy-v0", "DreamGym/Toy-Ref-v0")
    for env_id in ("DreamGym/Toy-v0", "DreamGym/Toy-Ref-v0"):
        assert gym.spec(env_id).max_episode_steps == 8
    assert gym.spec("DreamGym/Toy-v0").nondeterministic


def test_unregistering_removes_the_ids(toy):
    class Other(ToyDomain):
        name = "othertoy"
        display_name = "OtherToy"

    register_domain(Other())
    assert "DreamGym/OtherToy-Ref-v0" in gym.registry
    with pytest.raises(ConfigurationError, match="registered already"):
        register_domain(Other())  # another instance of the same name
    unregister_domain("othertoy")
    assert "DreamGym/OtherToy-v0" not in gym.registry and "DreamGym/OtherToy-Ref-v0" not in gym.registry
    with pytest.raises(UnknownNameError):
        get_domain("othertoy")


def test_grammar_is_not_webshops(toy):
    assert toy.parse_action("move North") == ParsedAction("MOVE", "north", "MOVE north")
    assert toy.parse_action('SAY "Sesame"') == ParsedAction("SAY", "sesame", "SAY sesame")
    for bad in ("click[Buy Now]", "search[key]", "DANCE now", "SAY two words", "MOVE", "", "\x00[]<>"):
        assert isinstance(toy.parse_action(bad), ActionError), bad
    task = toy.tasks("train")[0]
    assert toy.admissible_actions(task.initial_state) == (
        ["MOVE north", "MOVE south", "GRAB key"]
        if goal_of(task).key_room == "hall"
        else ["MOVE north", "MOVE south"]
    )
    assert toy.is_terminal_action(ParsedAction("CLAIM", "gem", "CLAIM gem"))
    assert not toy.is_terminal_action(ParsedAction("GRAB", "key", "GRAB key"))


def test_tasks_are_seeded_and_distinct(toy):
    train, test = toy.tasks("train"), toy.tasks("test")
    assert (len(train), len(test)) == (20, 8)
    goals = [goal_of(t) for t in (*train, *test)]
    assert len({g.password for g in goals}) == 28 and len({g.key_room for g in goals}) == 3
    assert [t.id for t in ToyDomain().tasks("train")] == [t.id for t in train]  # the same seed
    assert all(f'"{g.password}"' in t.instruction for g, t in zip(goals, (*train, *test), strict=True))


def test_the_expert_wins_every_task_and_every_state_restores(toy):
    env = toy.make_reference_env(max_steps=toy.max_episode_steps)
    assert isinstance(env, ReferenceEnv) and env.domain is toy and ToyRefEnv.restorable
    for task in (*toy.tasks("train"), *toy.tasks("test")):
        expert, (observation, info) = toy.expert_policy(), env.reset(options={"task": task})
        assert set(info) == {"task", "task_id", "source", "admissible_actions"} and info["source"] == "real"
        done = False
        while not done:
            state = observation
            observation, reward, terminated, truncated, info = env.step(expert(observation, info))
            assert info["action_valid"] and {"won", "score", "task_id"} <= set(info)
            done = terminated or truncated
            if not done:
                other = toy.make_reference_env()
                other.restore(task, observation)  # Markov: the text is the whole state
                assert other.state == observation
                env.restore(task, state)  # and back: the same step again
                assert env.step(expert(state, info))[0] == observation
        assert terminated and reward == 1.0 and info["won"] and info["score"] == 1.0


def test_invalid_actions_wrong_password_and_the_decoy(toy, toy_task):
    goal = goal_of(toy_task)
    env = toy.make_reference_env(reward="score", tasks=[toy_task])
    env.reset(options={"task": toy_task.id})
    observation, reward, _, _, info = env.step("UNLOCK door")  # no key yet
    assert not info["action_valid"] and "not possible" in info["error"] and reward == 0.0
    assert observation.startswith(toy_task.initial_state) and observation.endswith(
        f"Invalid action: {info['error']}"
    )
    for action in ("MOVE north", "GRAB key", "MOVE south", "UNLOCK door", "SAY nonsense"):
        observation, _, _, _, info = env.step(action)
    assert (
        'Note: the door stays shut for "nonsense".' in observation
        and "SAY <word>" in info["admissible_actions"]
    )
    env.step(f"SAY {goal.password}")
    env.step("MOVE east")
    _, reward, terminated, _, info = env.step(f"CLAIM {goal.decoy}")
    assert terminated and reward == 0.5 and not info["won"]  # the score mode: the vault, not the treasure
    with pytest.raises(ConfigurationError, match="reset"):
        env.step("MOVE west")
    with pytest.raises(ConfigurationError):
        env.restore(toy_task, "WebShop | search\nInstruction: x\n[Search]")
    with pytest.raises(ConfigurationError, match="does not match"):
        env.restore(toy_task, toy.tasks("train")[2].initial_state)
    with pytest.raises(ConfigurationError, match="reward"):
        gym.make("DreamGym/Toy-Ref-v0", reward="shaped")


def test_fill_slots_says_the_password(toy, toy_task):
    password = goal_of(toy_task).password
    assert toy.fill_slots("SAY <word>", toy_task) == [f"SAY {password}"]
    assert toy.fill_slots("SAY <word>", None, toy_task.initial_state) == [f"SAY {password}"]
    assert toy.fill_slots("SAY <word>", None) == []
    assert ACTION_SLOT.fullmatch("<word>")


def test_gym_make_and_domain_instance_step_the_scripted_model(toy, toy_model, toy_task):
    env = gym.make("DreamGym/Toy-v0", state_mode="text", experience_model=toy_model)
    assert env.spec is not None and env.spec.max_episode_steps == 8
    observation, info = env.reset(options={"task": toy_task})
    assert observation == toy_task.initial_state and info["admissible_actions"] == [
        "MOVE north",
        "MOVE south",
    ]
    _, _, _, _, info = env.step("click[Buy Now]")  # WebShop's syntax: invalid here, no model call
    assert not info["action_valid"] and toy_model.calls == 0
    observation, _, _, _, info = env.step("MOVE north")
    assert observation.startswith("Toy | vault") and toy_model.requests[-1].prompt == toy.prompt
    goal = goal_of(toy_task)
    _, reward, terminated, _, info = env.step(f"CLAIM {goal.treasure}")
    assert terminated and reward == 1.0 and info["won"]
    env.close()

    direct = DreamEnv(ToyDomain(), toy_model, max_steps=2)
    direct.reset(seed=0)
    direct.step("MOVE north")
    _, _, terminated, truncated, _ = direct.step("MOVE west")
    assert truncated and not terminated  # the model may not end a toy episode except by CLAIM


def test_a_request_shows_the_whole_world_of_a_pack_that_picks_no_lines(toy, toy_model, toy_task):
    """``Domain.supplies`` by default: every line of the task's world, in every request."""
    hidden = toy_task.model_copy(update={"world": "the key lies under the rug\nthe vault hums"})
    env = DreamEnv(toy, toy_model)
    env.reset(options={"task": hidden})
    env.step("MOVE north")
    assert toy_model.requests[-1].world == ["the key lies under the rug", "the vault hums"]
    env.reset(options={"task": toy_task})
    env.step("MOVE north")
    assert toy_model.requests[-1].world == []


def test_a_free_instruction_becomes_a_task(toy, toy_model):
    env = DreamEnv("toy", toy_model)
    instruction = (
        'Get the key from the cellar, unlock the vault door, say the password "zebra" and claim the crown.'
    )
    _, info = env.reset(options={"task": instruction})
    assert goal_of(info["task"]).password == "zebra" and info["task"].domain == "toy"


def test_make_vec_steps_four_envs_in_one_batch(toy, toy_model):
    model = toy_model
    envs = gym.make_vec("DreamGym/Toy-v0", state_mode="text", num_envs=4, experience_model=model)
    assert isinstance(envs.unwrapped, DreamVectorEnv)
    assert all(env.max_steps == 8 and env.domain is toy for env in envs.unwrapped.envs)
    _, infos = envs.reset(seed=0)
    _, _, _, _, infos = envs.step(["MOVE north", "MOVE south", "search[nothing]", "MOVE north"])
    assert (
        model.batches == 1 and model.calls == 3 and list(infos["action_valid"]) == [True, True, False, True]
    )
    envs.close()
