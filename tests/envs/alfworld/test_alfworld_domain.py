from __future__ import annotations

from dreamgym_env.domain import ActionError, ParsedAction
from dreamgym_env.envs.alfworld.domain import ALFWorldDomain
from dreamgym_env.envs.alfworld.goal import Goal
from dreamgym_env.envs.alfworld.reference_env import ALFWorldRefEnv

DOMAIN = ALFWorldDomain()


def test_domain_basics():
    assert DOMAIN.name == "alfworld" and DOMAIN.max_episode_steps == 50
    assert isinstance(DOMAIN.parse_action("go to fridge 1"), ParsedAction)
    assert isinstance(DOMAIN.parse_action("fly"), ActionError)
    assert DOMAIN.invalid_action_feedback("You arrive at fridge 1.", ActionError("x")) == "Nothing happens."
    assert DOMAIN.admissible_actions("You arrive at fridge 1. The fridge 1 is closed.") is None
    assert len(DOMAIN.tasks("train")) == 3528 and len(DOMAIN.tasks("test")) == 504
    assert isinstance(DOMAIN.make_reference_env(split="test"), ALFWorldRefEnv)


def test_prompt_is_concise_and_names_every_command():
    prompt = DOMAIN.prompt
    words = len(f"{prompt.rules} {prompt.state_format} {prompt.reward_rubric}".split())
    assert words < 500
    for command in (
        "go to",
        "take",
        "put",
        "open",
        "close",
        "use",
        "clean",
        "heat",
        "cool",
        "examine",
        "inventory",
    ):
        assert command in prompt.rules
    assert "Nothing happens." in prompt.state_format


def test_make_task_from_an_alfworld_instruction_is_scorable():
    task = DOMAIN.make_task("Put a clean apple in fridge")
    assert task.instruction == "Put a clean apple in fridge"
    assert Goal.of_task(task) == Goal("pick_clean_then_place", "apple", "fridge")
    env = ALFWorldRefEnv(tasks=[task])
    obs, info = env.reset(options={"task": task})
    assert obs == task.initial_state
    expert = DOMAIN.expert_policy()
    for _ in range(20):
        obs, reward, terminated, _, info = env.step(expert(obs, info))
        if terminated:
            break
    assert info["won"]


def test_make_task_from_a_free_instruction():
    task = DOMAIN.make_task("make the kitchen tidy")
    assert "goal" not in task.metadata
    assert task.initial_state.endswith("Your task is to: make the kitchen tidy")
    assert DOMAIN.make_task("make the kitchen tidy") == task


def test_a_request_shows_the_starting_places_of_the_receptacles_its_action_names():
    task = DOMAIN.tasks("test")[0]
    world = task.world.splitlines()
    cabinet_1 = next(line for line in world if line.startswith('"cabinet 1":'))
    assert any(line.startswith('"cabinet 12":') for line in world)  # a name cabinet 1 is a prefix of
    assert DOMAIN.world_lines(task, "{}", "go to cabinet 1") == (cabinet_1,)
    fridge = next(line for line in world if line.startswith('"fridge 1":'))
    assert DOMAIN.world_lines(task, "{}", "put apple 1 in/on fridge 1") == (fridge,)
    assert DOMAIN.world_lines(task, "{}", "look") == ()
    assert DOMAIN.world_lines(task, "{}", "fly to the moon") == ()
