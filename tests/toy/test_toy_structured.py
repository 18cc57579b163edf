"""Structured mode on the toy pack: abstract states, schema-constrained answers, the rubric reward."""

from __future__ import annotations

import json

import pytest

from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import ModelOutputError
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer, ok
from dreamgym_env.types import Transition

from .pack import ToyDomain, ToyState, render_toy_state, toy_state_of


@pytest.fixture
def toy() -> ToyDomain:
    return ToyDomain()


def test_every_reference_state_round_trips_through_the_schema(toy):
    env = toy.make_reference_env(split="train", max_steps=toy.max_episode_steps)
    trajectories = collect_trajectories(env, toy.expert_policy(), 20, progress=False, state_mode="structured")
    for trajectory in trajectories:
        for step in trajectory.steps:
            state = ToyState.model_validate_json(step.next_state)
            assert ToyState.model_validate_json(state.model_dump_json()) == state
            assert toy_state_of(render_toy_state(state)) == state
    assert all(t.won for t in trajectories)


def test_structured_env_backed_by_the_oracle_plays_the_reference_env(toy):
    synthetic = DreamEnv(toy, OracleExperienceModel(toy), state_mode="structured", reward_mode="rubric")
    reference = toy.make_reference_env(split="test")
    expert = toy.expert_policy()
    for task in toy.tasks("test")[:3]:
        observation, info = synthetic.reset(options={"task": task})
        real, _ = reference.reset(options={"task": task})
        assert observation == real and json.loads(synthetic.state)["room"] == "hall"
        done = False
        while not done:
            action = expert(observation, info)
            observation, reward, done, _, info = synthetic.step(action)
            real, real_reward, _, _, _ = reference.step(action)
            assert observation == real and reward == real_reward
        assert info["won"] and info["reward_source"] == "rubric"


def answer(state: ToyState, reward: float = 0.0, done: bool = False) -> dict:
    return {"reasoning": "moved", "next_state": state.model_dump(), "reward": reward, "done": done}


def test_the_endpoint_gets_the_state_schema_and_a_schema_invalid_answer_is_reasked_then_raised(toy):
    task = toy.tasks("test")[0]
    start = toy.initial_abstract_state(task)
    library = start.model_copy(update={"room": "library", "exits": {"south": "hall"}})
    bad = {
        "reasoning": "x",
        "next_state": {"room": "attic", "goal": task.instruction},
        "reward": 0,
        "done": False,
    }
    with ScriptedOpenAIServer() as server:
        server.enqueue(ok(json.dumps(bad)), ok(json.dumps(answer(library))))
        model = OpenAIExperienceModel(base_url=server.url, model="toy-model", api_key="k")
        env = DreamEnv(toy, model, state_mode="structured", on_model_error="raise")
        env.reset(options={"task": task})
        observation, *_ = env.step("MOVE north")
        assert observation == render_toy_state(library) and json.loads(env.state)["room"] == "library"
        first, second = server.requests
        schema = first["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["next_state"]["properties"]["room"]["enum"][-1] == "done"
        assert (
            "room" in first["messages"][0]["content"] and json.loads(_state_of(first)) == start.model_dump()
        )
        assert "does not fit the state schema" in second["messages"][3]["content"]
        server.enqueue(*[ok(json.dumps(bad))] * 3)
        with pytest.raises(ModelOutputError, match="state schema"):
            env.step("MOVE south")
        model.close()


def _state_of(body: dict) -> str:
    content = body["messages"][1]["content"]
    return content.split("# Current state\n", 1)[1].split("\n\n", 1)[0]


def test_a_model_reward_is_replaced_by_the_rubric_where_the_domain_scores(toy):
    task = toy.tasks("test")[0]
    decoy = task.metadata["decoy"]
    claimed = ToyState(room="done", goal=task.instruction, claimed=decoy)
    model = ScriptedExperienceModel(
        lambda request: Transition(next_state=claimed.model_dump_json(), reward=1.0, terminated=True)
    )
    vault = toy.initial_abstract_state(task).model_copy(
        update={
            "room": "vault",
            "exits": {"west": "hall"},
            "here": sorted({decoy, task.metadata["treasure"]}),
            "door": "open",
        }
    )
    for mode, expected in (("model", 1.0), ("rubric", 0.0)):
        env = DreamEnv(toy, model, state_mode="structured", reward_mode=mode)
        env.reset(options={"task": task})
        env._set_state(vault.model_dump_json())
        _, reward, terminated, _, info = env.step(f"CLAIM {decoy}")
        assert terminated and reward == expected and info["reward_source"] == mode


def test_text_only_domains_refuse_structured_mode():
    from dreamgym_env.envs.registry import get_domain

    plain = type("Plain", (ToyDomain,), {"name": "plain", "state_schema": None})()
    with pytest.raises(Exception, match="no state schema"):
        DreamEnv(
            plain, ScriptedExperienceModel(lambda r: Transition(next_state="x")), state_mode="structured"
        )
    with pytest.raises(Exception, match="needs state_mode='structured'"):
        DreamEnv(
            get_domain("webshop"),
            ScriptedExperienceModel(lambda r: Transition(next_state="x")),
            reward_mode="rubric",
        )
