from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.domain import PROMPT as WEBSHOP_PROMPT
from dreamgym_env.errors import (
    ModelOutputError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    ModelTransportError,
)
from dreamgym_env.experience.config import RetryPolicy
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.experience.prompt import TRANSITION_SCHEMA, messages
from dreamgym_env.testing import (
    ScriptedOpenAIServer,
    delay,
    drop,
    echo_responder,
    http_error,
    ok,
    request_action,
    truncated,
)
from dreamgym_env.types import ExperienceRequest, Task, Transition

T = TypeVar("T")
SECRET = "sk-test-SECRET123"
FAST_RETRY = RetryPolicy(max_attempts=3, backoff_base_s=0.001, backoff_max_s=0.01, jitter=0.5)
GOOD = {
    "reasoning": "the search opens results",
    "next_state": "WebShop [results]",
    "reward": 0,
    "done": False,
}


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def make_model(server: ScriptedOpenAIServer, **settings: Any) -> OpenAIExperienceModel:
    settings = {"model": "test-model", "api_key": None, "retry": FAST_RETRY, "timeout_s": 5.0, **settings}
    return OpenAIExperienceModel(base_url=server.url, **settings)


async def predict(model: OpenAIExperienceModel, requests: list[ExperienceRequest]) -> list[Transition]:
    try:
        return await model.predict(requests)
    finally:
        await model.aclose()


def make_request(task: Task, action: str) -> ExperienceRequest:
    return ExperienceRequest(prompt=WEBSHOP_PROMPT, task=task, state=task.initial_state, action=action)


@pytest.fixture
def request_(webshop_task: Task) -> ExperienceRequest:
    return make_request(webshop_task, "search[navy shirt]")


def test_answer_becomes_transition_with_usage(server, request_):
    server.enqueue(ok(GOOD, prompt_tokens=111, completion_tokens=22))
    (transition,) = run(predict(make_model(server), [request_]))
    assert transition.next_state == "WebShop [results]" and transition.reasoning == GOOD["reasoning"]
    assert transition.reward == 0.0 and transition.terminated is False
    usage = transition.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.attempts, usage.model) == (
        111,
        22,
        1,
        "test-model",
    )
    assert usage.latency_s > 0


def test_empty_batch_makes_no_call(server):
    assert run(predict(make_model(server), [])) == [] and server.requests_total == 0


def test_request_body_carries_prompt_and_settings(server, request_):
    run(predict(make_model(server, temperature=0.0, max_tokens=321), [request_]))
    (body,) = server.requests
    assert body["messages"] == messages(get_domain("webshop").prompt, request_)
    assert body["model"] == "test-model" and body["temperature"] == 0 and body["max_tokens"] == 321
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == TRANSITION_SCHEMA


@pytest.mark.parametrize(
    ("failure", "settings"),
    [
        (http_error(429), {}),
        (http_error(500), {}),
        (http_error(503, headers={"Retry-After": "0"}), {}),
        (delay(3.0), {"timeout_s": 0.3}),
        (drop(), {}),
    ],
    ids=["429", "500", "503-retry-after", "timeout", "dropped-connection"],
)
def test_transient_failure_then_success(server, request_, failure, settings):
    server.enqueue(failure)
    (transition,) = run(predict(make_model(server, **settings), [request_]))
    assert transition.next_state == "after search[navy shirt]"  # the echo responder's answer
    assert transition.usage.attempts == 2 and server.requests_total == 2


@pytest.mark.parametrize(
    ("failure", "error_type", "settings"),
    [
        (http_error(429), ModelRateLimitError, {}),
        (http_error(502), ModelServerError, {}),
        (delay(3.0), ModelTimeoutError, {"timeout_s": 0.2}),
        (drop(), ModelTransportError, {}),
    ],
    ids=["429", "502", "timeout", "dropped-connection"],
)
def test_persistent_failure_raises_typed_error(server, request_, failure, error_type, settings):
    server.enqueue(*[failure] * FAST_RETRY.max_attempts)
    with pytest.raises(error_type) as caught:
        run(predict(make_model(server, **settings), [request_]))
    error = caught.value
    assert error.attempts == FAST_RETRY.max_attempts == server.requests_total
    assert request_.task.id in str(error) and "search[navy shirt]" in str(error)  # which request failed
    assert "test-model@http://127.0.0.1" in error.backend
    # Not chained to the library's error, which may carry the key (see test_secrets.py).
    assert error.__cause__ is None and error.__suppress_context__


def test_unreachable_endpoint_is_transport_error(request_):
    with ScriptedOpenAIServer() as gone:
        url = gone.url  # the port is closed once the server stops
    model = OpenAIExperienceModel(base_url=url, model="m", api_key=None, retry=FAST_RETRY)
    with pytest.raises(ModelTransportError, match="could not reach"):
        run(predict(model, [request_]))


def test_refused_request_is_not_retried(server, request_):
    server.enqueue(http_error(404, {"error": {"message": "The model `nope` does not exist"}}))
    with pytest.raises(ModelRequestError, match=r"HTTP 404.*does not exist") as caught:
        run(predict(make_model(server), [request_]))
    assert caught.value.attempts == 1 and server.requests_total == 1


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (ok("I think the page changes."), "no JSON object"),
        (ok({"reasoning": "r", "reward": 0, "done": False}), "next_state"),
        (truncated('{"reasoning": "the user searches for a navy shi'), "truncated"),
    ],
    ids=["prose", "missing-field", "truncated"],
)
def test_bad_output_is_reasked_then_accepted(server, request_, bad, problem):
    server.enqueue(bad, ok(GOOD, prompt_tokens=100, completion_tokens=10))
    (transition,) = run(predict(make_model(server), [request_]))
    assert transition.next_state == GOOD["next_state"]
    assert transition.usage.attempts == 2
    assert transition.usage.prompt_tokens == 50 + 100  # both answers are paid for
    first, second = server.requests
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2] == {"role": "assistant", "content": bad.content}
    assert second["messages"][3]["role"] == "user" and problem in second["messages"][3]["content"]


def test_persistent_bad_output_raises_output_error_with_excerpt(server, request_):
    server.enqueue(*[ok("Sure! The next page shows shirts.")] * 3)
    with pytest.raises(ModelOutputError) as caught:
        run(predict(make_model(server, max_output_reasks=2), [request_]))
    assert caught.value.attempts == 3 == server.requests_total
    assert caught.value.output_excerpt == "Sure! The next page shows shirts."
    assert "The next page shows shirts" in str(caught.value)


def test_json_schema_refusal_falls_back_to_json_object_and_remembers(server, request_):
    refusal = {"error": {"message": "response_format type json_schema is not supported", "type": "invalid"}}
    server.enqueue(http_error(400, refusal))
    model = make_model(server)

    async def scenario() -> None:
        await model.predict([request_])
        await model.predict([request_])
        await model.aclose()

    run(scenario())
    formats = [body.get("response_format") for body in server.requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1] == formats[2] == {"type": "json_object", "schema": TRANSITION_SCHEMA}
    assert model.format_mode == "json_object"


def test_every_format_refused_falls_back_to_plain_text(server, request_):
    server.enqueue(
        http_error(400, {"error": {"message": "'response_format' of type 'json_schema' unsupported"}}),
        http_error(400, {"error": {"message": "json_object is not supported by this model"}}),
    )
    model = make_model(server)
    run(predict(model, [request_]))
    assert [("response_format" in body) for body in server.requests] == [True, True, False]
    assert model.format_mode == "text"


def test_max_tokens_refusal_switches_to_max_completion_tokens(server, request_):
    message = (
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'."
    )
    server.enqueue(http_error(400, {"error": {"message": message}}))
    run(predict(make_model(server, max_tokens=77), [request_]))
    first, second = server.requests
    assert first["max_tokens"] == 77 and "max_completion_tokens" not in first
    assert second["max_completion_tokens"] == 77 and "max_tokens" not in second


def test_api_key_never_shown(server, request_, caplog):
    echoed = {"error": {"message": f"Incorrect API key provided: {SECRET}", "type": "invalid_request_error"}}
    server.enqueue(http_error(429), http_error(401, echoed))
    model = make_model(server, api_key=SECRET)
    with caplog.at_level(logging.DEBUG), pytest.raises(ModelRequestError) as caught:
        run(predict(model, [request_]))
    assert server.request_headers[0]["authorization"] == f"Bearer {SECRET}"  # the key was used
    assert "HTTP 401" in str(caught.value) and "***" in str(caught.value)
    shown = [repr(model), str(model), repr(model.config), str(model.config), str(caught.value)]
    shown += [repr(caught.value), caught.value.backend, caplog.text]
    assert caplog.records  # the retry was logged
    assert all(SECRET not in text for text in shown)
    assert repr(model) == f"OpenAIExperienceModel(base_url='{server.url}', model='test-model')"


def test_requests_run_concurrently(request_):
    gate = threading.Barrier(32, timeout=20)

    def hold_until_all_arrive(body: dict[str, Any]) -> Any:
        gate.wait()  # breaks (and the request fails) unless 32 requests are in flight together
        return delay(0.2, then=echo_responder(body))

    with ScriptedOpenAIServer(responder=hold_until_all_arrive) as server:
        transitions = run(predict(make_model(server, max_concurrency=64), [request_] * 32))
        assert server.peak_in_flight == 32 and len(transitions) == 32


def test_max_concurrency_bounds_requests_in_flight(request_):
    gate = threading.Barrier(4, timeout=20)

    def hold_in_fours(body: dict[str, Any]) -> Any:
        gate.wait()  # needs 4 requests at once: proves the bound is reached
        return echo_responder(body)

    with ScriptedOpenAIServer(responder=hold_in_fours, latency_s=0.05) as server:
        run(predict(make_model(server, max_concurrency=4), [request_] * 12))
        assert server.peak_in_flight == 4 and server.requests_total == 12


def test_results_keep_request_order_when_answers_arrive_out_of_order(webshop_task):
    actions = [f"search[item {i}]" for i in range(6)]
    requests = [
        ExperienceRequest(
            prompt=WEBSHOP_PROMPT, task=webshop_task, state=webshop_task.initial_state, action=a
        )
        for a in actions
    ]

    def later_requests_answer_first(body: dict[str, Any]) -> Any:
        index = int(request_action(body).split()[-1].rstrip("]"))
        return delay(0.05 * (len(actions) - index), then=echo_responder(body))

    with ScriptedOpenAIServer(responder=later_requests_answer_first) as server:
        transitions = run(predict(make_model(server), requests))
    assert [t.next_state for t in transitions] == [f"after {a}" for a in actions]


def test_one_failure_fails_the_batch_with_its_error(webshop_task):
    def refuse_one(body: dict[str, Any]) -> Any:
        action = request_action(body)
        return (
            http_error(400, {"error": {"message": "bad"}})
            if action == "search[bad]"
            else echo_responder(body)
        )

    requests = [make_request(webshop_task, action) for action in ("search[a]", "search[bad]", "search[b]")]
    with (
        ScriptedOpenAIServer(responder=refuse_one) as server,
        pytest.raises(ModelRequestError, match=r"search\[bad\]"),
    ):
        run(predict(make_model(server), requests))


def test_sync_api_and_close(server, request_):
    model = make_model(server)
    try:
        assert model.predict_one(request_).next_state == "after search[navy shirt]"
        assert [t.next_state for t in model.predict_sync([request_, request_])] == [
            "after search[navy shirt]"
        ] * 2
    finally:
        model.close()
    assert server.requests_total == 3


def test_model_reused_across_event_loops(server, request_):
    model = make_model(server)
    for _ in range(2):
        assert run(predict(model, [request_]))[0].next_state == "after search[navy shirt]"


def test_settings_from_environment(monkeypatch, server, request_):
    monkeypatch.setenv("DREAMGYM_BASE_URL", server.url)
    monkeypatch.setenv("DREAMGYM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_MODEL", "ignored-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-not-for-third-parties")
    monkeypatch.setenv("DREAMGYM_API_KEY", SECRET)
    model = OpenAIExperienceModel(retry=FAST_RETRY)
    assert model.model_id == "env-model" and model.config.base_url == server.url
    run(predict(model, [request_]))
    assert server.requests[0]["model"] == "env-model"
    assert server.request_headers[0]["authorization"] == f"Bearer {SECRET}"
