from __future__ import annotations

import pytest

from dreamgym_env.curriculum import EndpointChat, InstructionVariations, TaskGenerator
from dreamgym_env.curriculum.generator import parse_candidates
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.goal import Goal
from dreamgym_env.errors import ModelServerError
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer, http_error, ok, truncated
from dreamgym_env.types import Task


@pytest.fixture
def chat(server: ScriptedOpenAIServer):
    client = EndpointChat(base_url=server.url, model="writer", api_key=None, retry=1)
    yield client
    client.close()


@pytest.fixture
def generator(chat, webshop_variations) -> TaskGenerator:
    return TaskGenerator(chat, webshop_variations, concurrency=1)


def reworded(task: Task) -> dict:
    goal = Goal.of_task(task)
    return {
        "parent_id": task.id,
        "instruction": "please get me " + task.instruction.split(" ", 2)[2],
        "goal": {
            "product_type": goal.product_type,
            "attributes": list(goal.attributes),
            "options": dict(goal.options),
            "price_upper": goal.price_upper,
        },
    }


def test_candidates_are_validated(server, generator, parent, fresh_candidates):
    good, other = fresh_candidates(parent, 2)
    infeasible = {**other, "goal": {**other["goal"], "price_upper": 1.0}}
    infeasible["instruction"] = other["instruction"].replace(f"{other['goal']['price_upper']:.2f}", "1.00")
    unknown_type = {**good, "goal": {**good["goal"], "product_type": "hovercraft"}}
    unstated = {**good, "instruction": "i want something nice for me, price lower than 9.00 dollars"}
    sibling = get_domain("webshop").tasks("train")[1]
    replies = [
        good,
        good,  # the same candidate twice: the second is a duplicate
        {"parent_id": parent.id},  # no instruction, no goal
        {**good, "parent_id": "not-a-seed"},
        unstated,
        reworded(parent),  # the seed's own goal in other words
        reworded(sibling) | {"parent_id": parent.id},  # a goal of the train split
        infeasible,
        unknown_type,
        "not an object",
    ]
    server.enqueue(ok({"tasks": replies}))
    report = generator.generate_sync([parent], 8)
    assert report.calls == 3  # two more calls got the default (non-task) answer
    assert report.counts() == {"accepted": 1, "malformed": 6, "duplicate": 3, "infeasible": 2}
    reasons = " | ".join(str(r) for r in report.rejected)
    assert "not one of the seeds" in reasons and "does not state" in reasons and "hovercraft" in reasons
    assert "no product of the catalog wins" in reasons and f"same as {parent.id!r}" in reasons
    (task,) = report.accepted
    assert task.parent_id == parent.id and task.metadata["generated"] is True
    assert task.initial_state == parent.initial_state.replace(parent.instruction, task.instruction)
    assert Goal.of_task(task).target_id  # the product that proves it feasible


def test_accepted_tasks_are_reachable_and_winnable(server, generator, parent, fresh_candidates):
    candidates = fresh_candidates(parent, 3)
    server.enqueue(ok({"tasks": candidates}))
    report = generator.generate_sync([parent], 3)
    assert len(report.accepted) == 3 and report.calls == 1
    domain = get_domain("webshop")
    model = ScriptedExperienceModel()
    synthetic = DreamEnv(domain, model)
    reference = domain.make_reference_env()
    expert = domain.expert_policy()
    for task in report.accepted:
        obs, info = synthetic.reset(options={"task": task})
        assert (
            synthetic.state == task.initial_state
            and info["task_id"] == task.id
            and info["task"].parent_id == parent.id
        )
        obs, info = reference.reset(options={"task": task})
        for _ in range(15):
            obs, reward, terminated, truncated, info = reference.step(expert(obs, info))
            if terminated or truncated:
                break
        assert reward == 1.0  # feasible: the expert wins it in the reference env
    model.close()


def test_prompt_shows_the_seeds_and_asks_for_the_schema(server, generator, parent):
    server.enqueue(ok({"tasks": []}))
    generator.max_calls = 1
    report = generator.generate_sync([parent], 2)
    assert report.accepted == [] and "0 of 2 accepted" in report.note
    body = server.requests[0]
    system, user = (m["content"] for m in body["messages"])
    assert "men's shirt" in system  # the shop's product types
    assert parent.id in user and parent.instruction in user and "products have attributes:" in user
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["tasks"]["items"]["required"] == ["parent_id", "instruction", "goal"]
    assert body["temperature"] == 0.8


def test_accepted_tasks_are_listed_in_later_prompts(server, generator, parent, fresh_candidates):
    first, second = fresh_candidates(parent, 2)
    server.enqueue(ok({"tasks": [first]}), ok({"tasks": [first, second]}))
    report = generator.generate_sync([parent], 2)
    assert len(report.accepted) == 2 and report.counts()["duplicate"] == 1
    assert first["instruction"] in server.requests[1]["messages"][1]["content"]


def test_unusable_replies_are_counted_and_asked_again(server, generator, parent, fresh_candidates):
    (good,) = fresh_candidates(parent, 1)
    server.enqueue(
        truncated('{"tasks": [{"parent_id": '),
        ok("no json here"),
        ok(f'```json\n{{"tasks": [{_json(good)}]}}\n```'),
    )
    report = generator.generate_sync([parent], 1)
    assert len(report.accepted) == 1 and report.calls == 3
    assert [str(r) for r in report.rejected] == [
        "malformed: the reply is not JSON (Expecting value) (cut at the token limit)",
        "malformed: the reply is not JSON (Expecting value)",
    ]


def _json(value: object) -> str:
    import json

    return json.dumps(value)


def test_transport_failures_raise_typed_errors(server, generator, parent):
    server.enqueue(http_error(500))
    with pytest.raises(ModelServerError, match="task generation"):
        generator.generate_sync([parent], 1)


def test_refused_json_schema_falls_back(server, generator, parent):
    refusal = {
        "error": {"message": "response_format json_schema is not supported", "type": "invalid_request_error"}
    }
    server.enqueue(http_error(400, refusal), ok({"tasks": []}))
    generator.max_calls = 1
    generator.generate_sync([parent], 1)
    assert server.requests[1]["response_format"]["type"] == "json_object"


def test_near_verbatim_instructions_are_duplicates(server, chat, parent):
    known = Task(id="k", domain="webshop", instruction=parent.instruction, initial_state=parent.initial_state)
    generator = TaskGenerator(
        chat, InstructionVariations(get_domain("webshop")), known_tasks=[known], concurrency=1
    )
    same_words = parent.instruction.replace("i'm looking for", "Im looking for") + "!"
    near = "Please, " + parent.instruction
    different = "i need a pair of running shoes in size 9, price lower than 90.00 dollars"
    texts = (same_words, near, different)
    server.enqueue(ok({"tasks": [{"parent_id": parent.id, "instruction": t} for t in texts]}))
    report = generator.generate_sync([parent], 3)
    assert [t.instruction for t in report.accepted] == [different]
    assert str(report.rejected[0]) == "duplicate: asks for the same as 'k'"
    assert str(report.rejected[1]).startswith("duplicate: instruction nearly repeats 'k' (cosine 0.97")
    assert report.accepted[0].metadata == {"generated": True}


def test_parse_candidates_shapes():
    assert parse_candidates('{"tasks": [1]}') == [1]
    assert parse_candidates("[1, 2]") == [1, 2]
    assert parse_candidates('Here you go: {"tasks": []} done') == []
    assert parse_candidates('{"other": 1}') == 'the reply has no "tasks" list'
