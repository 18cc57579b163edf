"""Item 2 of issue 14: HTTP 200 bodies that are not a chat completion are typed, retried, then raised.

Proxies and overloaded gateways answer like this. The transport checks the body's shape in one
place (``chat_reply``) and treats a bad one like a 5xx: a ``ModelServerError``, retried within the
retry budget (the model is not re-asked: it never saw a bad answer).
"""

from __future__ import annotations

import json

import pytest

from dreamgym_env.errors import ModelServerError
from dreamgym_env.experience.answers import ChatReply
from dreamgym_env.experience.transport import InvalidResponse, chat_reply
from dreamgym_env.testing import ok, raw

ATTEMPTS = 3
"""The retry budget of the ``endpoint_model`` fixture."""

GOOD = {"reasoning": "r", "next_state": "WebShop [results]", "reward": 0, "done": False}


def completion(message: object = None, *, usage: object = None, **choice: object) -> dict[str, object]:
    """A chat completion body with ``message`` (default: an assistant message) and ``usage``."""
    first = {"index": 0, "finish_reason": "stop", **choice}
    if message is not ...:
        first["message"] = message if message is not None else {"role": "assistant", "content": "{}"}
    body: dict[str, object] = {"id": "x", "object": "chat.completion", "choices": [first]}
    if usage is not None:
        body["usage"] = usage
    return body


GARBAGE = {
    "html": (raw("<html><body>502 Bad Gateway</body></html>", content_type="text/html"), "not JSON"),
    "html-said-json": (raw("<html>oops</html>"), "not JSON"),
    "empty": (raw(""), "an empty body"),
    "json-list": (raw([1, 2]), "a JSON list"),
    "no-choices": (raw({"id": "x", "object": "chat.completion"}), "no 'choices' list"),
    "error-object": (raw({"error": {"message": "upstream overloaded"}}), "upstream overloaded"),
    "choice-without-message": (raw(completion(...)), "no 'message' object"),
    "content-dict": (raw(completion({"role": "assistant", "content": GOOD})), "content is a dict"),
    "content-list": (raw(completion({"role": "assistant", "content": [GOOD]})), "content is a list"),
    "usage-strings": (
        raw(completion(usage={"prompt_tokens": "50", "completion_tokens": "20"})),
        "usage.prompt_tokens",
    ),
    "finish-reason-number": (raw(completion(finish_reason=5)), "finish_reason is a int"),
}


@pytest.mark.parametrize(("garbage", "problem"), GARBAGE.values(), ids=GARBAGE.keys())
def test_garbage_then_a_good_answer_is_a_clean_retry(
    server, endpoint_model, webshop_request, garbage, problem
):
    server.enqueue(garbage, ok(GOOD))
    transition = endpoint_model().predict_one(webshop_request)
    assert transition.next_state == GOOD["next_state"] and transition.usage.attempts == 2
    assert server.requests[0]["messages"] == server.requests[1]["messages"]  # retried, not re-asked


@pytest.mark.parametrize(("garbage", "problem"), GARBAGE.values(), ids=GARBAGE.keys())
def test_garbage_kept_is_a_server_error_and_the_env_records_nothing(
    server, endpoint_model, recording_env, garbage, problem
):
    server.enqueue(*[garbage] * ATTEMPTS)
    recording = recording_env(endpoint_model())
    with pytest.raises(ModelServerError, match="HTTP 200 without a chat completion") as caught:
        recording.env.step("search[navy shirt]")
    assert problem in str(caught.value)
    assert caught.value.attempts == ATTEMPTS == server.requests_total
    recording.assert_nothing_recorded()


@pytest.mark.parametrize(
    ("body", "reply"),
    [
        (completion({"role": "assistant", "content": "hi"}), ChatReply("hi")),
        (completion({"role": "assistant", "content": None}), ChatReply("")),  # a refusal: re-asked
        (completion(finish_reason=None), ChatReply("{}")),
        (completion(usage={"prompt_tokens": 7, "completion_tokens": 3}), ChatReply("{}", "stop", 7, 3)),
        (completion(usage={"prompt_tokens": None}), ChatReply("{}")),
        ({"choices": []}, ChatReply(None, "no choices")),
    ],
    ids=["plain", "null-content", "null-finish", "usage", "null-usage-field", "no-choice"],
)
def test_chat_reply_reads_legitimate_bodies(body, reply):
    assert chat_reply(json.dumps(body)) == reply


@pytest.mark.parametrize(
    "usage", [[], "50", {"prompt_tokens": -1}, {"completion_tokens": 2.5}, {"prompt_tokens": True}]
)
def test_chat_reply_refuses_bad_usage(usage):
    with pytest.raises(InvalidResponse, match="usage"):
        chat_reply(json.dumps(completion(usage=usage)))
