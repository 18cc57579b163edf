from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamgym_env.envs.domain import ActionError, ParsedAction
from dreamgym_env.envs.webarena.grammar import MAX_ACTION_CHARS, Command, parse_action, parse_command


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("click [12]", "click [12]"),
        ("  CLICK [ 12 ] ", "click [12]"),
        ("type [3] [red shoes] [0]", "type [3] [red shoes] [0]"),
        ("type [3] [red shoes]", "type [3] [red shoes] [1]"),
        ("type [3] [a [b] c] [1]", "type [3] [a [b] c] [1]"),
        ("hover [7]", "hover [7]"),
        ("press [Control+a]", "press [Control+a]"),
        ("scroll [DOWN]", "scroll [down]"),
        ("new_tab", "new_tab"),
        ("tab_focus [2]", "tab_focus [2]"),
        ("close_tab", "close_tab"),
        ("goto [http://reddit.local/forums]", "goto [http://reddit.local/forums]"),
        ("go_back", "go_back"),
        ("go_forward", "go_forward"),
        ("stop [$12.99]", "stop [$12.99]"),
        ("stop []", "stop []"),
        ("Let's think. In summary, the next action I will perform is ```click [5]```", "click [5]"),
        ("`stop [N/A]`", "stop [N/A]"),
    ],
)
def test_valid_actions_parse_to_their_canonical_form(text, canonical):
    parsed = parse_action(text)
    assert isinstance(parsed, ParsedAction), parsed
    assert parsed.text == canonical
    assert parsed.verb == canonical.split()[0]


def test_type_keeps_the_text_and_the_enter_flag():
    command = parse_command("type [4] [hello world] [0]")
    assert command == Command("type", element=4, text="hello world", enter=False)


@pytest.mark.parametrize(
    "text",
    ["", "click", "click [abc]", "click 12", "type [3]", "type [x] [y] [1]", "scroll [left]", "press [Ctrl a]",
     "tab_focus [one]", "goto []", "goto [a b]", "go_back [1]", "new_tab now", "stop", "jump [3]", "\ud800",
     "x" * (MAX_ACTION_CHARS + 1)],
)
def test_malformed_actions_are_errors(text):
    assert isinstance(parse_action(text), ActionError)


@pytest.mark.parametrize("value", [None, 3, b"click [1]", ["click [1]"], {"a": 1}])
def test_non_strings_are_errors(value):
    assert isinstance(parse_action(value), ActionError)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parse_never_raises(text):
    result = parse_action(text)
    assert isinstance(result, ParsedAction | ActionError)
    if isinstance(result, ParsedAction):
        assert parse_action(result.text) == result
