from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamgym_env.domain import ActionError, ParsedAction
from dreamgym_env.envs.alfworld.grammar import MAX_ACTION_CHARS, Command, parse_action, parse_command


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("go to cabinet 1", "go to cabinet 1"),
        ("  go to cabinet 10 ", "go to cabinet 10"),
        ("take apple 1 from countertop 2", "take apple 1 from countertop 2"),
        ("put apple 1 in/on fridge 1", "put apple 1 in/on fridge 1"),
        ("open drawer 3", "open drawer 3"),
        ("close drawer 3", "close drawer 3"),
        ("use floorlamp 1", "use floorlamp 1"),
        ("clean mug 1 with sinkbasin 1", "clean mug 1 with sinkbasin 1"),
        ("heat egg 2 with microwave 1", "heat egg 2 with microwave 1"),
        ("cool tomato 1 with fridge 1", "cool tomato 1 with fridge 1"),
        ("slice apple 1 with knife 1", "slice apple 1 with knife 1"),
        ("examine book 1", "examine book 1"),
        ("examine desk 1", "examine desk 1"),
        ("inventory", "inventory"),
        ("look\n", "look"),
    ],
)
def test_commands_parse_to_their_canonical_text(text, canonical):
    """The templates of alfworld 0.3.5's alfred.twl2 actions; TextWorld's PddlEnv.step strips the command."""
    parsed = parse_action(text)
    assert isinstance(parsed, ParsedAction)
    assert parsed.text == canonical


@pytest.mark.parametrize(
    "text",
    [
        "Go to cabinet 1",
        "go  to cabinet 1",
        "look.",
        "put apple 1 in fridge 1",  # 0.3.x's template is "put {o} in/on {r}"
        "put apple 1 on countertop 1",
        "move apple 1 to fridge 1",  # 0.4.x's wording
        "toggle desklamp 1",
        "USE floorlamp 1",
    ],
)
def test_commands_match_exactly(text):
    """TextWorld's PddlEnv.step looks the stripped command up in the admissible list: no other wording."""
    assert isinstance(parse_action(text), ActionError)


def test_command_fields():
    assert parse_command("take apple 1 from countertop 2") == Command("take", "apple 1", "countertop 2")
    assert parse_command("go to fridge 1") == Command("go", recep="fridge 1")
    assert parse_command("use desklamp 1") == Command("use", obj="desklamp 1")
    parsed = parse_action("go to fridge 1")
    assert isinstance(parsed, ParsedAction) and (parsed.verb, parsed.argument) == ("go", "fridge 1")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "go to",
        "go to cabinet",
        "go cabinet 1",
        "take apple 1",
        "put apple 1 into fridge 1",
        "heat egg 1",
        "jump",
        "click[Buy Now]",
        "go to cabinet ١",  # a non-ASCII digit is no object number
        "go to cabinet 1\ud800",
        "x" * (MAX_ACTION_CHARS + 1),
    ],
)
def test_malformed_commands_are_errors(text):
    assert isinstance(parse_action(text), ActionError)


@pytest.mark.parametrize("value", [None, 3, b"look", ["look"]])
def test_non_strings_are_errors(value):
    assert isinstance(parse_action(value), ActionError)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parse_never_raises(text):
    result = parse_action(text)
    assert isinstance(result, (ParsedAction, ActionError))
    if isinstance(result, ParsedAction):
        assert parse_action(result.text) == result
