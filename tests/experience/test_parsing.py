from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dreamgym_env.experience.parsing import MAX_STATE_CHARS, OutputParseError, parse_transition
from dreamgym_env.experience.prompt import TRANSITION_SCHEMA
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


@pytest.mark.parametrize(
    ("raw", "reward"), [(0, 0.0), (1, 1.0), (0.0, 0.0), (1.0, 1.0), (0.5, 0.5), ("0.25", 0.25)]
)
def test_rewards_in_the_unit_interval_are_kept(raw, reward):
    assert parse_transition(json.dumps({**GOOD, "reward": raw})).reward == reward


@pytest.mark.parametrize(
    "raw",
    [
        "5",
        "-3",
        "1.7",
        "-0.5",
        "1.0000001",
        "true",
        "false",
        "Infinity",
        "-Infinity",
        "NaN",
        '"high"',
        '"inf"',
        '"nan"',
        "null",
        "[1]",
        '{"value": 1}',
    ],
)
def test_rewards_out_of_range_or_not_numbers_are_errors_never_clamped(raw):
    text = json.dumps({**GOOD, "reward": "@"}).replace('"@"', raw)
    with pytest.raises(OutputParseError, match="'reward' must be a number from 0 to 1"):
        parse_transition(text)


@pytest.mark.parametrize("missing", ["reward", "done"])
def test_missing_reward_or_done_is_an_error_never_defaulted(missing):
    body = {key: value for key, value in GOOD.items() if key != missing}
    with pytest.raises(OutputParseError, match=f"no '{missing}' field"):
        parse_transition(json.dumps(body))


@pytest.mark.parametrize(
    "text",
    [
        'I\'m sorry, I can\'t help with {"next_state": "that"}',
        'Sure: {"next_state": "that", "reward": 0} and more prose',
        '{"next_state": "that", "done": false}',
    ],
)
def test_prose_around_a_partial_answer_is_an_error(text):
    with pytest.raises(OutputParseError, match=r"no '(reward|done)' field"):
        parse_transition(text)


def test_the_answer_is_found_after_other_json_objects():
    text = 'The page had {"price": 12}. ' + json.dumps(GOOD)
    assert parse_transition(text).next_state == GOOD["next_state"]


def test_next_state_at_the_schema_limit_is_kept_and_longer_is_an_error():
    assert len(parse_transition(json.dumps({**GOOD, "next_state": "x" * MAX_STATE_CHARS})).next_state) == (
        MAX_STATE_CHARS
    )
    with pytest.raises(OutputParseError, match=f"more than the limit of {MAX_STATE_CHARS}"):
        parse_transition(json.dumps({**GOOD, "next_state": "x" * (MAX_STATE_CHARS + 1)}))
    assert TRANSITION_SCHEMA["properties"]["next_state"]["maxLength"] == MAX_STATE_CHARS


def test_surrogate_escapes_come_back_encodable():
    text = (
        '{"reasoning": "r \\udc00", "next_state": "shoes \\ud800 \\ud83d\\ude00", "reward": 0, "done": false}'
    )
    transition = parse_transition(text)
    assert transition.next_state == "shoes \ufffd \U0001f600" and transition.reasoning == "r \ufffd"
    transition.model_dump_json()  # encodable


def test_structured_mode_needs_every_field_too():
    schema = {"type": "object", "properties": {"page": {"type": "string"}}, "required": ["page"]}
    good = {"reasoning": "r", "next_state": {"page": "search"}, "reward": 0, "done": False}
    assert parse_transition(json.dumps(good), state_schema=schema).next_state == '{"page":"search"}'
    with pytest.raises(OutputParseError, match="no 'done' field"):
        parse_transition(json.dumps({k: v for k, v in good.items() if k != "done"}), state_schema=schema)
    with pytest.raises(OutputParseError, match="reward"):
        parse_transition(json.dumps({**good, "reward": 3}), state_schema=schema)


@pytest.mark.parametrize(
    ("raw", "done"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("False", False),
        ("yes", True),
        ("no", False),
        (1, True),
        (0, False),
    ],
)
def test_string_and_number_booleans(raw, done):
    assert parse_transition(json.dumps({**GOOD, "done": raw})).terminated is done


@pytest.mark.parametrize("raw", ["maybe", "", 2, 0.5, None, [True]])
def test_unclear_boolean_is_an_error(raw):
    with pytest.raises(OutputParseError, match="'done' must be true or false"):
        parse_transition(json.dumps({**GOOD, "done": raw}))


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
    assert transition.next_state.strip() and len(transition.next_state) <= MAX_STATE_CHARS
    assert 0.0 <= transition.reward <= 1.0


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


@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-10, max_value=10),
        st.booleans(),
        st.none(),
        st.text(max_size=5),
    )
)
def test_a_reward_is_kept_exactly_when_it_is_a_number_in_the_unit_interval(raw):
    text = json.dumps({**GOOD, "reward": raw})  # NaN and infinities as JSON's NaN/Infinity
    try:
        number = float(raw) if not isinstance(raw, bool) and raw is not None else None
    except ValueError:
        number = None
    if number is not None and 0.0 <= number <= 1.0:
        assert parse_transition(text).reward == number
    else:
        with pytest.raises(OutputParseError, match="reward"):
            parse_transition(text)
