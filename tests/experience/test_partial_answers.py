"""Items 1 and 4 of issue 14: partial, out-of-range and oversized answers are re-asked, then raised.

Never defaulted, clamped or passed through: each bad answer is re-asked with its problem named,
and after ``max_output_reasks`` re-asks it is a ``ModelOutputError``; an env records nothing.
"""

from __future__ import annotations

import json

import pytest

from dreamgym_env.errors import ModelOutputError
from dreamgym_env.experience.parsing import MAX_STATE_CHARS
from dreamgym_env.testing import ok

GOOD = {
    "reasoning": "the search opens results",
    "next_state": "WebShop [results]",
    "reward": 0,
    "done": False,
}
REASKS = 2


def answer(**fields: object) -> str:
    """GOOD with ``fields`` changed; a field set to ``...`` is left out; ``raw:`` values go in verbatim."""
    body = {key: value for key, value in {**GOOD, **fields}.items() if value is not ...}
    text = json.dumps({k: (f"@{k}@" if str(v).startswith("raw:") else v) for k, v in body.items()})
    for key, value in body.items():
        if str(value).startswith("raw:"):
            text = text.replace(f'"@{key}@"', str(value)[4:])
    return text


BAD_ANSWERS = {
    "no-reward": (answer(reward=...), "no 'reward' field"),
    "no-done": (answer(done=...), "no 'done' field"),
    "no-next-state": (answer(next_state=...), "no 'next_state' field"),
    "sorry-prose": ('I\'m sorry, I can\'t help with {"next_state": "that"}', "no 'reward' field"),
    "reward-5": (answer(reward=5), "'reward' must be a number from 0 to 1, got 5"),
    "reward--3": (answer(reward=-3), "got -3"),
    "reward-true": (answer(reward=True), "got True"),
    "reward-infinity": (answer(reward="raw:Infinity", done=True), "got inf"),
    "reward-nan": (answer(reward="raw:NaN"), "got nan"),
    "oversized-state": (answer(next_state="x" * 200_000), f"more than the limit of {MAX_STATE_CHARS}"),
}


@pytest.mark.parametrize(("bad", "problem"), BAD_ANSWERS.values(), ids=BAD_ANSWERS.keys())
def test_bad_answer_is_reasked_naming_the_problem_then_accepted(
    server, endpoint_model, webshop_request, bad, problem
):
    server.enqueue(ok(bad), ok(GOOD))
    transition = endpoint_model().predict_one(webshop_request)
    assert transition.next_state == GOOD["next_state"] and transition.usage.attempts == 2
    reask = server.requests[1]["messages"]
    assert reask[2]["role"] == "assistant" and reask[3]["role"] == "user"
    assert problem in reask[3]["content"]


@pytest.mark.parametrize(("bad", "problem"), BAD_ANSWERS.values(), ids=BAD_ANSWERS.keys())
def test_bad_answer_kept_is_an_output_error_and_the_env_records_nothing(
    server, endpoint_model, recording_env, bad, problem
):
    server.enqueue(*[ok(bad)] * (REASKS + 1))
    recording = recording_env(endpoint_model(max_output_reasks=REASKS))
    with pytest.raises(ModelOutputError) as caught:
        recording.env.step("search[navy shirt]")
    assert caught.value.attempts == REASKS + 1 == server.requests_total
    assert problem in str(caught.value)
    recording.assert_nothing_recorded()
    # Nothing half-done: the same step succeeds once the model answers properly.
    observation, *_ = recording.env.step("search[navy shirt]")
    assert observation == "after search[navy shirt]" and len(recording.env.steps) == 1


@pytest.mark.parametrize(
    "good",
    [
        answer(reward=1, done=True),
        answer(reward=1.0, done=True),
        answer(reward=0.0, done="false"),
        "```json\n" + answer(reward=1, done=True) + "\n```",
        "<think>the agent searched {maybe}</think>\n" + answer(reasoning=...),
        "Here is the answer:\n" + answer() + "\nThat is all.",
        answer(next_state="x" * MAX_STATE_CHARS),
    ],
    ids=["int-1", "float-1", "string-bool", "fence", "think", "prose-around-a-full-answer", "at-the-limit"],
)
def test_legitimate_forms_are_accepted_at_once(server, endpoint_model, webshop_request, good):
    server.enqueue(ok(good))
    transition = endpoint_model().predict_one(webshop_request)
    assert transition.usage.attempts == 1 == server.requests_total
    assert transition.reward in (0.0, 1.0) and transition.next_state


def test_state_over_the_env_observation_space_is_an_error_and_nothing_is_recorded(
    server, endpoint_model, recording_env
):
    recording = recording_env(endpoint_model(), max_text_length=500)
    server.enqueue(ok(answer(next_state="y" * 501)))  # within the answer schema, over the env's space
    with pytest.raises(ModelOutputError, match="outside the observation space") as caught:
        recording.env.step("search[navy shirt]")
    assert caught.value.attempts == 1 == server.requests_total
    recording.assert_nothing_recorded()
    observation, *_ = recording.env.step("search[navy shirt]")
    assert recording.env.observation_space.contains(observation)
