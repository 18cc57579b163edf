"""Carried fields: what an action cannot change is not written by the model, and the next state keeps it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.bench.fidelity import reference_transitions
from dreamgym_env.domain import ParsedAction
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.experience.parsing import OutputParseError, parse_transition
from dreamgym_env.experience.prompt import answer_state_schema, carried_values, user_prompt, without_fields
from dreamgym_env.testing import ScriptedOpenAIServer, ok
from dreamgym_env.training.dataset import request_of, sft_example

from .pack import ToyDomain, ToyState, render_toy_state


class CarryingToy(ToyDomain):
    """The toy pack, declaring that no action changes the goal."""

    def carried_fields(self, state: BaseModel, action: ParsedAction) -> tuple[str, ...]:
        return ("goal",)


def structured_steps(name: str, policy: str, episodes: int, seed: int) -> list[Any]:
    domain = get_domain(name)
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    actor = make_policy(policy, domain, seed=seed)
    played = collect_trajectories(env, actor, episodes, seed=seed, progress=False, state_mode="structured")
    return [step for trajectory in played for step in trajectory.steps if step.action_valid]


@pytest.mark.parametrize("name", ["webshop", "alfworld"])
def test_carried_fields_never_change_on_the_reference_env(name):
    domain = get_domain(name)
    steps = [
        s for policy in ("expert", "noisy", "random") for s in structured_steps(name, policy, 25, seed=3)
    ]
    carried_sets = set()
    for step in steps:
        carried = domain.request_carried_fields(step.state, step.action)
        before, after = json.loads(step.state), json.loads(step.next_state)
        assert "instruction" in carried
        for field in carried:
            assert after[field] == before[field], (step.action, field)
        carried_sets.add(tuple(carried))
    assert len(steps) > 150
    if name == "webshop":  # every rule of the shop's navigation was exercised
        assert {
            ("instruction",),
            ("instruction", "query", "page"),
            ("kind", "instruction", "query", "page", "item"),
            ("kind", "instruction", "query", "total"),
            ("instruction", "item", "selected"),
        } <= carried_sets


def test_webshop_keeps_only_the_instruction_where_the_page_is_new():
    domain = get_domain("webshop")
    search = domain.initial_abstract_state(domain.tasks("test")[0]).model_dump_json()
    assert domain.request_carried_fields(search, "search[yoga mat]") == ["instruction"]
    assert domain.request_carried_fields(search, "not an action") == []
    assert domain.request_carried_fields("{not json", "search[x]") == []


def test_the_answer_schema_leaves_the_carried_fields_out_of_properties_and_rules():
    schema = get_domain("webshop").state_json_schema
    assert schema is not None and schema["allOf"][0]["then"]["required"] == ["item"]
    reduced = without_fields(schema, ["instruction", "item"])
    assert "instruction" not in reduced["properties"] and "item" not in reduced["properties"]
    assert "instruction" not in reduced["required"] and reduced["allOf"][0]["then"]["required"] == []
    assert "instruction" in schema["properties"] and schema["allOf"][0]["then"]["required"] == ["item"]


def test_a_rule_on_a_carried_field_is_decided_by_its_value():
    schema = get_domain("webshop").state_json_schema
    assert schema is not None
    turn = without_fields(schema, ["kind", "instruction"], {"kind": "results", "instruction": "x"})
    on_item = without_fields(schema, ["kind", "instruction"], {"kind": "item", "instruction": "x"})
    assert Draft202012Validator(turn).is_valid({"page": 2, "results": []})  # results need no item
    assert not Draft202012Validator(on_item).is_valid({"selected": []})  # an item page does
    assert "kind" not in turn["properties"] and "kind" not in on_item["properties"]


def test_the_parser_completes_the_state_and_overrules_a_carried_field_written_anyway():
    toy = CarryingToy()
    schema = without_fields(ToyState.model_json_schema(), ["goal"])
    answer = {"reasoning": "r", "next_state": {"room": "library"}, "reward": 0, "done": False}
    transition = parse_transition(json.dumps(answer), None, schema, {"goal": "find the gem"})
    assert json.loads(transition.next_state) == {"goal": "find the gem", "room": "library"}
    answer["next_state"] = {"room": "library", "goal": "something else"}
    transition = parse_transition(json.dumps(answer), None, schema, {"goal": "find the gem"})
    assert json.loads(transition.next_state)["goal"] == "find the gem"
    with pytest.raises(OutputParseError, match="room"):  # what the model must write, it must write
        parse_transition(json.dumps({**answer, "next_state": {}}), None, schema, {"goal": "g"})
    assert toy.request_carried_fields(ToyState(room="hall", goal="g").model_dump_json(), "MOVE north") == [
        "goal"
    ]


def test_the_endpoint_is_asked_for_the_fields_that_change_and_the_env_keeps_the_rest():
    toy = CarryingToy()
    task = toy.tasks("test")[0]
    start = toy.initial_abstract_state(task)
    library = start.model_copy(update={"room": "library", "exits": {"south": "hall"}})
    written = {k: v for k, v in library.model_dump().items() if k != "goal"}
    with ScriptedOpenAIServer() as server:
        server.enqueue(
            ok(json.dumps({"reasoning": "moved", "next_state": written, "reward": 0, "done": False}))
        )
        model = OpenAIExperienceModel(base_url=server.url, model="toy-model", api_key="k")
        env = DreamEnv(toy, model, state_mode="structured")
        env.reset(options={"task": task})
        observation, *_ = env.step("MOVE north")
        model.close()
    assert observation == render_toy_state(library) and ToyState.model_validate_json(env.state) == library
    (body,) = server.requests
    state_schema = body["response_format"]["json_schema"]["schema"]["properties"]["next_state"]
    assert "goal" not in state_schema["properties"] and "room" in state_schema["properties"]
    assert "Leave goal out of next_state" in body["messages"][1]["content"]
    assert "- goal (string)" in body["messages"][0]["content"]  # the system prompt stays the same


def test_sft_targets_leave_the_carried_fields_out_and_rows_keep_them():
    domain = get_domain("webshop")
    env = domain.make_reference_env(split="train", max_steps=domain.max_episode_steps)
    played = collect_trajectories(
        env, make_policy("expert", domain), 3, seed=0, progress=False, state_mode="structured"
    )
    pairs = reference_transitions(played, domain)
    pair = next(p for p in pairs if "item" in p.request.carried_fields)
    request, truth = pair.request, pair.truth
    row = sft_example(
        request, truth, "an option", split="train", policy="expert", reasoning_source="reference"
    )
    target = json.loads(row["completion"][0]["content"])["next_state"]
    assert not set(request.carried_fields) & set(target) and "selected" in target
    again = request_of(row, domain)
    assert again.carried_fields == request.carried_fields and answer_state_schema(again) is not None
    parsed = parse_transition(
        row["completion"][0]["content"], None, answer_state_schema(again), carried_values(again)
    )
    assert json.loads(parsed.next_state) == json.loads(truth.next_state)
    assert "Leave kind, instruction, query, page, item out" in user_prompt(request)
