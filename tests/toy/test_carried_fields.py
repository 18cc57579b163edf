"""Carried fields: what an action cannot change is not written by the model, and the next state keeps it."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.bench.fidelity import reference_transitions
from dreamgym_env.domain import ParsedAction, SuppliedFields
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.experience.parsing import OutputParseError, parse_transition
from dreamgym_env.experience.prompt import answer_state_schema, carried_values, user_prompt, without_fields
from dreamgym_env.testing import ScriptedOpenAIServer, ok
from dreamgym_env.training.dataset import request_of, sft_example
from dreamgym_env.types import Task

from .pack import ToyDomain, ToyState, render_toy_state


class CarryingToy(ToyDomain):
    """The toy pack, declaring that no action changes the goal."""

    def supplies(
        self, task: Task | None, state: str, abstract: BaseModel | None, action: ParsedAction
    ) -> SuppliedFields:
        return replace(super().supplies(task, state, abstract, action), carried=("goal",))


def structured_steps(name: str, policy: str, episodes: int, seed: int) -> list[Any]:
    domain = get_domain(name)
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    actor = make_policy(policy, domain, seed=seed)
    played = collect_trajectories(env, actor, episodes, seed=seed, progress=False, state_mode="structured")
    return [step for trajectory in played for step in trajectory.steps if step.action_valid]


@pytest.mark.parametrize("name", ["webshop", "alfworld", "webarena"])
def test_carried_fields_never_change_on_the_reference_env(name):
    domain = get_domain(name)
    steps = [
        s for policy in ("expert", "noisy", "random") for s in structured_steps(name, policy, 25, seed=3)
    ]
    carried_sets, updated_seen = set(), 0
    for step in steps:
        fields = domain.answer_fields(step.state, step.action)
        before, after = json.loads(step.state), json.loads(step.next_state)
        assert "instruction" in fields["carried_fields"] or name == "webarena"
        for field in fields["carried_fields"]:  # a WebArena state leaves out empty changes
            assert after.get(field) == before.get(field), (step.action, field)
        for field in fields["updated_fields"]:  # entries are added or changed, never removed
            assert set(before[field]) <= set(after[field]), (step.action, field)
            updated_seen += after[field] != before[field]
        carried_sets.add(tuple(fields["carried_fields"]))
    assert len(steps) > 150
    if name == "alfworld":  # the seen receptacles grow and change through updates
        assert updated_seen > 50 and len(carried_sets) >= 5
    if name == "webshop":  # every rule of the shop's navigation was exercised
        assert {
            ("instruction",),
            ("instruction", "query", "page"),
            ("kind", "instruction", "query", "page", "item"),
            ("kind", "instruction", "query", "total"),
            ("instruction", "item", "selected"),
        } <= carried_sets
    if name == "webarena":  # clicks and typing may change the sites' data; the history and stop never do
        assert carried_sets == {(), ("changes",)}
        assert any(json.loads(s.next_state).get("changes") for s in steps)


def test_webshop_keeps_only_the_instruction_where_the_page_is_new():
    domain = get_domain("webshop")
    search = domain.initial_abstract_state(domain.tasks("test")[0]).model_dump_json()
    assert domain.answer_fields(search, "search[yoga mat]")["carried_fields"] == ["instruction"]
    assert domain.answer_fields(search, "not an action")["carried_fields"] == []
    assert domain.answer_fields("{not json", "search[x]")["carried_fields"] == []


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
    fields = toy.answer_fields(ToyState(room="hall", goal="g").model_dump_json(), "MOVE north")
    assert fields == {"carried_fields": ["goal"], "updated_fields": [], "given_fields": {}, "world": []}


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


def expert_transitions(name: str) -> list[Any]:
    """The structured reference transitions of three expert episodes on ``name``'s train tasks."""
    domain = get_domain(name)
    env = domain.make_reference_env(split="train", max_steps=domain.max_episode_steps)
    played = collect_trajectories(
        env, make_policy("expert", domain), 3, seed=0, progress=False, state_mode="structured"
    )
    return reference_transitions(played, domain)


def test_sft_targets_leave_the_carried_fields_out_and_rows_keep_them():
    domain = get_domain("webshop")
    pairs = expert_transitions("webshop")
    pair = next(p for p in pairs if "item" in p.request.carried_fields)
    request, truth = pair.request, pair.truth
    row = sft_example(
        request, truth, "an option", split="train", policy="expert", reasoning_source="reference"
    )
    target = json.loads(row["completion"][0]["content"])["next_state"]
    assert not set(request.carried_fields) & set(target)
    assert "selected" not in target and "selected" in request.given_fields  # the item's option owns the value
    again = request_of(row, domain)
    assert again.carried_fields == request.carried_fields and answer_state_schema(again) is not None
    parsed = parse_transition(
        row["completion"][0]["content"], None, answer_state_schema(again), carried_values(again)
    )
    assert json.loads(parsed.next_state) == json.loads(truth.next_state)
    assert "Leave kind, instruction, query, page, item out" in user_prompt(request)


def test_the_parser_keeps_the_entries_of_an_updated_field_the_model_did_not_write():
    schema = without_fields(get_domain("alfworld").state_json_schema or {}, ["instruction", "receptacles"])
    seen = {"cabinet 1": ["mug 1"], "fridge 1": []}
    answer = {
        "reasoning": "r",
        "next_state": {"location": "fridge 1", "is_open": True, "seen": {"fridge 1": ["apple 2"]}},
        "reward": 0,
        "done": False,
    }
    carried = {"instruction": "x", "receptacles": ["cabinet 1", "fridge 1"]}
    state = json.loads(parse_transition(json.dumps(answer), None, schema, carried, {"seen": seen}).next_state)
    assert state["seen"] == {"cabinet 1": ["mug 1"], "fridge 1": ["apple 2"]}
    whole = {**answer, "next_state": {**answer["next_state"], "seen": {**seen, "fridge 1": ["apple 2"]}}}
    again = json.loads(parse_transition(json.dumps(whole), None, schema, carried, {"seen": seen}).next_state)
    assert again == state  # a model that wrote every entry gives the same state
    with pytest.raises(OutputParseError, match="seen"):  # an entry is still checked against the schema
        bad = {**answer, "next_state": {**answer["next_state"], "seen": {"fridge 1": "apple 2"}}}
        parse_transition(json.dumps(bad), None, schema, carried, {"seen": seen})


def test_alfworld_targets_write_only_the_seen_entries_a_command_changes():
    domain = get_domain("alfworld")
    pairs = expert_transitions("alfworld")
    take = next(
        p
        for p in pairs
        if p.request.action.startswith("take ") and len(json.loads(p.request.state)["seen"]) >= 2
    )
    request, truth = take.request, take.truth
    assert request.updated_fields == ["seen"] and request.given_fields == {}
    assert "location" in request.carried_fields
    row = sft_example(request, truth, "message", split="train", policy="expert", reasoning_source="reference")
    target = json.loads(row["completion"][0]["content"])["next_state"]
    assert list(target["seen"]) == [request.action.rsplit(" from ", 1)[1]]
    assert "location" not in target and "inventory" in target
    again = request_of(row, domain)
    assert again.updated_fields == ["seen"]
    assert "In seen write only the entries the action adds or changes." in user_prompt(request)
    for command in ("inventory", "look"):  # they show what is known and change nothing of it
        fields = domain.answer_fields(request.state, command)
        assert fields["updated_fields"] == [] and "seen" in fields["carried_fields"]
    go = next(p for p in pairs if p.request.action.startswith("go to "))  # a look: the room gives seen
    assert go.request.updated_fields == [] and list(go.request.given_fields) == ["seen"]
    row = sft_example(go.request, go.truth, "arrive", split="train", policy="expert", reasoning_source="reference")
    assert "seen" not in json.loads(row["completion"][0]["content"])["next_state"]


def test_webshop_targets_leave_out_what_the_catalog_gives():
    domain = get_domain("webshop")
    pairs = expert_transitions("webshop")
    search = next(p for p in pairs if p.request.action.startswith("search["))
    request, truth = search.request, search.truth
    assert list(request.given_fields) == ["query", "page", "total", "results"] and request.given_fields["results"]
    row = sft_example(request, truth, "search", split="train", policy="expert", reasoning_source="reference")
    target = json.loads(row["completion"][0]["content"])["next_state"]
    assert "results" not in target and "total" not in target and target["kind"] == "results"
    assert "Leave query, page, total, results out of next_state: the environment's data gives them." in user_prompt(request)
    assert request_of(row, domain).given_fields == request.given_fields
    answer = json.loads(row["completion"][0]["content"])
    parsed = parse_transition(json.dumps(answer), None, answer_state_schema(request), carried_values(request))
    assert json.loads(parsed.next_state) == json.loads(truth.next_state)  # the state whole again
    wrong = {**answer, "next_state": {**target, "results": []}}  # a model that writes them anyway is overruled
    again = parse_transition(json.dumps(wrong), None, answer_state_schema(request), carried_values(request))
    assert json.loads(again.next_state)["results"] == request.given_fields["results"]
