"""LLMAgent: prompt, <think>/<action> parsing, invalid outputs counted and replaced, both chat backends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from dreamgym_env.agents import (
    ExpertAgent,
    LLMAgent,
    RandomAgent,
    Turn,
    make_agent,
    make_chat_client,
    parse_agent_output,
)
from dreamgym_env.agents.llm import (
    FORMAT_INSTRUCTIONS,
    INVALID_OUTPUT_ACTION,
    JSON_FORMAT_INSTRUCTIONS,
    MAX_LISTED_ACTIONS,
    agent_messages,
    answer_schema,
    parse_constrained_output,
)
from dreamgym_env.curriculum.chat import EndpointChat
from dreamgym_env.envs.registry import get_domain, registered_domains
from dreamgym_env.errors import ConfigurationError, ModelServerError, UnknownNameError
from dreamgym_env.experience.local import LocalExperienceModel, LocalSettings
from dreamgym_env.testing import ScriptedOpenAIServer
from dreamgym_env.testing.replies import http_error, ok
from dreamgym_env.types import ActionError


@pytest.mark.parametrize(
    ("text", "action", "thought"),
    [
        (
            "<think>Search first.</think>\n<action>search[red shoes]</action>",
            "search[red shoes]",
            "Search first.",
        ),
        ("<action>  click[Buy Now]  </action>", "click[Buy Now]", ""),
        ("<THINK>upper case</THINK><Action>look</Action>", "look", "upper case"),
        # An action mentioned while thinking is not the answer.
        (
            "<think>maybe <action>look</action>?</think><action>inventory</action>",
            "inventory",
            "maybe <action>look</action>?",
        ),
    ],
)
def test_good_answers_give_their_action_and_thought(text, action, thought):
    output = parse_agent_output(text)
    assert (output.action, output.thought, output.problem) == (action, thought, "")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("search[red shoes]", "no <action> tag"),
        ("", "no <action> tag"),
        ("<think>only thinking</think>", "no <action> tag"),
        ("<action>search[red shoes]", "the <action> tag is not closed"),
        ("<action>   </action>", "the <action> tag is empty"),
        ("<action>look</action><action>inventory</action>", "2 <action> tags, expected one"),
        ("<action>look\ninventory</action>", "the action spans several lines"),
        ("<think>never ends <action>look</action>", "no <action> tag"),
        (None, "the answer had no choice"),
    ],
)
def test_missing_and_malformed_tags_give_no_action_and_say_why(text, problem):
    output = parse_agent_output(text)
    assert output.action is None and output.problem == problem


def test_an_answer_cut_at_max_tokens_says_so():
    assert parse_agent_output("<think>long", "length").problem.endswith("(the answer was cut at max_tokens)")
    assert parse_agent_output("<think>long</think>", "length").thought == "long"


def test_the_prompt_holds_agent_prompt_task_history_observation_and_actions(webshop_task):
    domain = get_domain("webshop")
    history = [(f"click[item {i}]", f"page {i}") for i in range(6)]
    actions = [f"click[x{i}]" for i in range(MAX_LISTED_ACTIONS + 3)]
    turn = Turn(0, "WebShop | results", {"admissible_actions": actions}, webshop_task, history)
    system, user = agent_messages(domain, turn, history_len=2)
    assert system["role"] == "system" and system["content"].startswith(domain.agent_prompt)
    assert FORMAT_INSTRUCTIONS in system["content"]
    text = user["content"]
    assert webshop_task.instruction in text and "WebShop | results" in text
    assert "click[item 4]" in text and "page 5" in text and "click[item 3]" not in text
    assert "4 earlier step(s) not shown" in text
    assert "- click[x0]" in text and f"- click[x{MAX_LISTED_ACTIONS - 1}]" in text
    assert f"click[x{MAX_LISTED_ACTIONS}]" not in text and "and 3 more" in text


@pytest.mark.parametrize("name", sorted(registered_domains()))
def test_every_domain_rejects_the_invalid_output_action(name):
    assert isinstance(get_domain(name).parse_action(INVALID_OUTPUT_ACTION), ActionError)


def _turns(task, n: int = 3) -> list[Turn]:
    info = {"admissible_actions": ["search[<query>]"], "task": task}
    return [Turn(i, task.initial_state, info, task) for i in range(n)]


def test_agent_on_an_endpoint_counts_invalid_outputs_and_falls_back(webshop_task):
    with ScriptedOpenAIServer() as server:
        server.enqueue(
            ok(
                "<think>I search.</think><action>search[pet bed]</action>",
                prompt_tokens=50,
                completion_tokens=7,
            ),
            ok("search[pet bed]", prompt_tokens=40, completion_tokens=3),
            ok("<action>search[pet bed]", prompt_tokens=40, completion_tokens=4),
        )
        chat = make_chat_client("scripted-model", base_url=server.url, max_concurrency=1)
        try:
            agent = make_agent("llm:scripted-model", "webshop", chat=chat)
            assert isinstance(agent, LLMAgent) and agent.name == "llm:scripted-model"
            decisions = agent.act(_turns(webshop_task))
        finally:
            chat.close()
        bodies = server.requests
    good, missing, malformed = decisions
    assert (good.action, good.thought, good.output_valid) == ("search[pet bed]", "I search.", True)
    assert (good.prompt_tokens, good.completion_tokens) == (50, 7)
    assert (missing.action, missing.output_valid, missing.problem) == (
        INVALID_OUTPUT_ACTION,
        False,
        "no <action> tag",
    )
    assert (malformed.action, malformed.output_valid) == (INVALID_OUTPUT_ACTION, False)
    assert malformed.problem == "the <action> tag is not closed"
    assert len(bodies) == 3 and all("response_format" not in body for body in bodies)
    assert all(body["temperature"] == 0.0 for body in bodies)  # the endpoint's setting, not the task writer's
    assert webshop_task.instruction in bodies[0]["messages"][1]["content"]


def test_endpoint_failures_are_raised_typed_and_the_key_never_shows(webshop_task, monkeypatch):
    monkeypatch.setenv("DREAMGYM_API_KEY", "sk-secret-agent-key")
    with ScriptedOpenAIServer() as server:
        server.enqueue(*[http_error(500)] * 2)
        chat = make_chat_client("m", base_url=server.url, retry=2)
        try:
            assert isinstance(chat, EndpointChat) and "sk-secret" not in repr(chat)
            with pytest.raises(ModelServerError) as caught:
                LLMAgent("webshop", chat).act(_turns(webshop_task, 1))
        finally:
            chat.close()
        assert server.request_headers[0]["authorization"] == "Bearer sk-secret-agent-key"
    assert "sk-secret" not in str(caught.value)
    assert str(caught.value).startswith("agent: server error (HTTP 500)")


def test_endpoint_chat_errors_keep_the_task_generation_label_by_default():
    with ScriptedOpenAIServer() as server:
        server.enqueue(http_error(500))
        chat = EndpointChat(base_url=server.url, model="m", retry=1)
        try:
            with pytest.raises(ModelServerError, match=r"^task generation: server error \(HTTP 500\)"):
                chat.run(chat.complete([{"role": "user", "content": "hi"}]))
        finally:
            chat.close()


def test_llm_without_a_model_uses_the_configured_endpoint(monkeypatch):
    chat = make_chat_client(environ={"DREAMGYM_BASE_URL": "localhost:9", "DREAMGYM_MODEL": "served"})
    try:
        assert isinstance(chat, EndpointChat)
        assert (chat.config.base_url, chat.model_id) == ("http://localhost:9/v1", "served")
    finally:
        chat.close()


def completion(content: str) -> dict[str, Any]:
    return {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 30, "completion_tokens": 5},
    }


class FakeRuntime:
    """The embedded runtime's double: answers in turn, records the bodies."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers, self.bodies = answers, []

    def chat(self, body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        self.bodies.append(body)
        return self.answers.pop(0)

    def close(self) -> None:
        return None


def embedded_chat(tmp_path: Path, runtime: FakeRuntime) -> LocalExperienceModel:
    gguf = tmp_path / "tiny-agent.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))

    def factory(path: Path, settings: LocalSettings) -> FakeRuntime:
        return runtime

    return LocalExperienceModel(gguf, runtime_factory=factory, n_parallel=1)


def test_agent_on_the_embedded_model_with_tags_gets_plain_chat_completions(tmp_path: Path, webshop_task):
    runtime = FakeRuntime([completion("<action>search[bed]</action>"), completion("no tags")])
    chat = embedded_chat(tmp_path, runtime)
    try:
        decisions = LLMAgent("webshop", chat, constrained=False).act(_turns(webshop_task, 2))
    finally:
        chat.close()
    assert [d.action for d in decisions] == ["search[bed]", INVALID_OUTPUT_ACTION]
    assert [d.output_valid for d in decisions] == [True, False]
    assert decisions[0].prompt_tokens == 30 and decisions[0].completion_tokens == 5
    assert all("response_format" not in body for body in runtime.bodies)
    assert runtime.bodies[0]["messages"][0]["content"].startswith(get_domain("webshop").agent_prompt)


def test_agent_names_are_checked_and_the_baselines_share_the_interface(webshop_task):
    with pytest.raises(UnknownNameError, match="Did you mean 'expert'"):
        make_agent("exprt", "webshop")
    with pytest.raises(ConfigurationError, match="only the llm agent takes a model"):
        make_agent("random:x", "webshop")
    with pytest.raises(ConfigurationError, match="no model after"):
        make_agent("llm:", "webshop")
    for agent in (make_agent("random", "webshop"), make_agent("expert", "webshop")):
        assert isinstance(agent, (RandomAgent, ExpertAgent))
        agent.start_episode(0, seed=1)
        (decision,) = agent.act(_turns(webshop_task, 1))
        assert decision.output_valid and decision.action.startswith("search[")
        assert decision.prompt_tokens == decision.completion_tokens == 0


def test_the_constrained_answer_admits_listed_actions_and_filled_slots_only():
    turn = Turn(0, "page", {"admissible_actions": ["search[<query>]", "click[Buy Now]"]})
    answer = Draft202012Validator(answer_schema(turn))
    for action in ("click[Buy Now]", "search[red shoes]", "search[a (b) * c?]"):
        assert answer.is_valid({"think": "t", "action": action}), action
    for action in ("search[]", "click[Nope]", "search[a\nb]", "search[red] x", "search[" + "a" * 101 + "]"):
        assert not answer.is_valid({"think": "t", "action": action}), action
    assert not answer.is_valid({"action": "click[Buy Now]"})  # the thought comes first
    free = Draft202012Validator(answer_schema(Turn(0, "page", {})))
    assert free.is_valid({"think": "", "action": "go to desk 1"}) and not free.is_valid(
        {"think": "", "action": ""}
    )


@pytest.mark.parametrize(
    ("text", "finish", "action", "problem"),
    [
        ('{"think": "buy it", "action": " click[Buy Now] "}', "stop", "click[Buy Now]", ""),
        ('{"think": "buy it", "action": ""}', "stop", None, "the answer has no action"),
        ('{"think": "buy it"}', "stop", None, "the answer has no action"),
        ('{"think": "x", "action": "a\\nb"}', "stop", None, "the action spans several lines"),
        ("<action>look</action>", "stop", None, "the answer is not a JSON object"),
        (
            '{"think": "a long',
            "length",
            None,
            "the answer is not a JSON object (the answer was cut at max_tokens)",
        ),
        ("[1]", "stop", None, "the answer is not a JSON object"),
        (None, None, None, "the answer had no choice"),
    ],
)
def test_constrained_answers_are_read_or_say_what_is_wrong(text, finish, action, problem):
    output = parse_constrained_output(text, finish)
    assert (output.action, output.problem) == (action, problem)


def test_agent_on_the_embedded_model_answers_constrained_json_by_default(tmp_path: Path, webshop_task):
    runtime = FakeRuntime([completion('{"think": "look", "action": "search[bed]"}'), completion("no json")])
    chat = embedded_chat(tmp_path, runtime)
    try:
        agent = LLMAgent("webshop", chat)
        decisions = agent.act(_turns(webshop_task, 2))
    finally:
        chat.close()
    assert agent.constrained
    assert [(d.action, d.thought, d.output_valid) for d in decisions] == [
        ("search[bed]", "look", True),
        (INVALID_OUTPUT_ACTION, "", False),
    ]
    schema = runtime.bodies[0]["response_format"]["schema"]
    assert schema["properties"]["action"]["pattern"].startswith("^search")
    assert JSON_FORMAT_INSTRUCTIONS in runtime.bodies[0]["messages"][0]["content"]
    assert '{"think": ..., "action": ...}' in runtime.bodies[0]["messages"][1]["content"]
