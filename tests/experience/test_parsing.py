from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dreamgym_env.experience.parsing import OutputParseError, parse_transition
from dreamgym_env.types import Usage

GOOD = {
    "reasoning": "the search opens results",
    "next_state": "WebShop [results]",
    "reward": 0,
    "done": False,
}


def test_plain_json():
    transition = parse_transition(json.dumps(GOOD))
    assert transition.reasoning == GOOD["reasoning"] and transition.next_state == "WebShop [results]"
    assert transition.reward == 0.0 and transition.terminated is False


def test_fenced_json():
    text = "```json\n" + json.dumps({**GOOD, "reward": 1, "done": True}, indent=2) + "\n```"
    transition = parse_transition(text)
    assert transition.reward == 1.0 and transition.terminated is True


def test_prose_then_json():
    text = "Let me think. The agent searched, so the results page opens.\n" + json.dumps(GOOD) + "\nDone."
    assert parse_transition(text).next_state == "WebShop [results]"


def test_prose_with_braces_before_the_json():
    text = "The set {a, b} is not JSON. " + json.dumps(GOOD)
    assert parse_transition(text).next_state == "WebShop [results]"


def test_think_block_becomes_reasoning_when_json_has_none():
    body = {"next_state": "WebShop [item] B01", "reward": 0, "done": False}
    text = "<think>The agent clicks an item {not json}, so its page opens.</think>\n" + json.dumps(body)
    transition = parse_transition(text)
    assert transition.next_state == "WebShop [item] B01"
    assert transition.reasoning == "The agent clicks an item {not json}, so its page opens."


def test_think_block_does_not_override_json_reasoning():
    text = "<think>long thoughts</think>" + json.dumps(GOOD)
    assert parse_transition(text).reasoning == GOOD["reasoning"]


def test_unclosed_think_block_is_an_error():
    with pytest.raises(OutputParseError):
        parse_transition("<think>the agent searches " + json.dumps(GOOD)[:20])


@pytest.mark.parametrize(
    "text",
    [
        '{"reasoning": "the agent searches", "next_state": "WebShop [resu',  # truncated
        "",
        "The next page lists shirts.",
        "[1, 2, 3]",
    ],
    ids=["truncated", "empty", "prose-only", "not-an-object"],
)
def test_not_a_transition(text):
    with pytest.raises(OutputParseError, match="no JSON object"):
        parse_transition(text)


@pytest.mark.parametrize(
    "body",
    [
        {"reasoning": "r", "reward": 0, "done": False},
        {"reasoning": "r", "next_state": "   ", "reward": 0, "done": False},
        {"reasoning": "r", "next_state": 42, "reward": 0, "done": False},
    ],
    ids=["missing", "blank", "not-a-string"],
)
def test_next_state_required(body):
    with pytest.raises(OutputParseError, match="next_state"):
        parse_transition(json.dumps(body))


@pytest.mark.parametrize(("raw", "clipped"), [(1.7, 1.0), (-0.5, 0.0), ("0.25", 0.25), (1, 1.0)])
def test_reward_clipped_to_unit_interval(raw, clipped):
    assert parse_transition(json.dumps({**GOOD, "reward": raw})).reward == clipped


@pytest.mark.parametrize("raw", ["high", None, [1]])
def test_reward_must_be_a_number(raw):
    with pytest.raises(OutputParseError, match="reward"):
        parse_transition(json.dumps({**GOOD, "reward": raw}))


def test_nan_reward_is_an_error():
    with pytest.raises(OutputParseError, match="NaN"):
        parse_transition('{"next_state": "s", "reward": NaN, "done": false}')


@pytest.mark.parametrize(
    ("raw", "done"),
    [("true", True), ("False", False), ("yes", True), ("no", False), (1, True), (0, False), ("", False)],
)
def test_string_and_number_booleans(raw, done):
    assert parse_transition(json.dumps({**GOOD, "done": raw})).terminated is done


def test_unclear_boolean_is_an_error():
    with pytest.raises(OutputParseError, match="done"):
        parse_transition(json.dumps({**GOOD, "done": "maybe"}))


def test_alternative_keys_state_and_terminated():
    transition = parse_transition(json.dumps({"state": "S", "terminated": True, "reward": 1}))
    assert (transition.next_state, transition.terminated, transition.reward) == ("S", True, 1.0)


def test_usage_is_attached():
    usage = Usage(prompt_tokens=3, completion_tokens=4, attempts=2, model="m")
    assert parse_transition(json.dumps(GOOD), usage).usage == usage


@given(st.text(max_size=300))
def test_any_text_parses_or_raises_parse_error(text):
    try:
        transition = parse_transition(text)
    except OutputParseError:
        return
    assert transition.next_state.strip() and 0.0 <= transition.reward <= 1.0


@given(
    st.fixed_dictionaries(
        {
            "reasoning": st.text(max_size=50),
            "next_state": st.text(min_size=1, max_size=80).filter(str.strip),
            "reward": st.floats(min_value=0, max_value=1),
            "done": st.booleans(),
        }
    ),
    st.sampled_from(["{}", "```json\n{}\n```", "Answer:\n{}\nThat is all.", "<think>hmm</think>{}"]),
)
def test_valid_answers_round_trip_in_any_wrapping(body, wrapping):
    transition = parse_transition(wrapping.replace("{}", json.dumps(body), 1))
    assert transition.next_state == body["next_state"] and transition.terminated is body["done"]
    assert transition.reward == pytest.approx(body["reward"])
