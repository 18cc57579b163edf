from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamgym_env.domain import ActionError, ParsedAction
from dreamgym_env.envs.webarena.grammar import MAX_ACTION_CHARS, Command, parse_action, parse_command


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("click [12]", "click [12]"),
        ("click[12]", "click [12]"),
        ("  click [0012] and more", "click [12]"),
        ("type [3] [red shoes] [0]", "type [3] [red shoes] [0]"),
        ("type [3] [red shoes]", "type [3] [red shoes] [1]"),
        ("type [3] [a [b] c] [1]", "type [3] [a [b] c] [1]"),
        ("type [3] [x] [2]", "type [3] [x] [2] [1]"),  # " [1]" appended; the text is "x] [2"
        ("hover [7]", "hover [7]"),
        ("press [Control+a]", "press [Control+a]"),
        ("press [Ctrl a]", "press [Ctrl a]"),
        ("scroll [down]", "scroll [down]"),
        ("scroll down", "scroll [down]"),
        ("scroll [upward]", "scroll [up]"),
        ("new_tab", "new_tab"),
        ("new_tab now", "new_tab"),
        ("go_back [1]", "go_back"),
        ("tab_focus [2]", "tab_focus [2]"),
        ("close_tab", "close_tab"),
        ("goto [http://reddit.local/forums]", "goto [http://reddit.local/forums]"),
        ("goto [a b]", "goto [a b]"),
        ("go_forward", "go_forward"),
        ("stop [$12.99]", "stop [$12.99]"),
        ("stop [a] [b]", "stop [a] [b]"),
        ("stop []", "stop []"),
        ("stop", "stop []"),
        ("stop now", "stop []"),
        ("Let's think. In summary, the next action I will perform is ```click [5]```", "click [5]"),
        ("```stop [1]``` or ```stop [2]```", "stop [1]"),
    ],
)
def test_valid_actions_parse_to_their_canonical_form(text, canonical):
    """``create_id_based_action`` (browser_env/actions.py): verb before the first ``[``, each verb's
    pattern searched for; ``stop`` without brackets answers nothing; the first ``` block is read
    (``_extract_action`` of agent/prompts/prompt_constructor.py)."""
    parsed = parse_action(text)
    assert isinstance(parsed, ParsedAction), parsed
    assert parsed.text == canonical
    assert parsed.verb == canonical.split()[0]


def test_type_keeps_the_text_and_the_enter_flag():
    """browser_env/actions.py ``create_id_based_action``: the text is the greedy ``(.+)``; the flag 1 presses Enter."""
    assert parse_command("type [4] [hello world] [0]") == Command(
        "type", element=4, text="hello world", enter=False
    )
    assert parse_command("type [4] [x] [2]") == Command("type", element=4, text="x] [2", enter=True)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "click",
        "click [abc]",
        "click 12",
        "click [ 12 ]",
        "click  [12]",
        "CLICK [12]",
        "Click [12]",
        "Stop [x]",
        "scroll [DOWN]",
        "type [3]",
        "type [x] [y] [1]",
        "type [7] [] [1]",
        "type [7] [a\nb] [1]",
        "scroll [left]",
        "tab_focus [one]",
        "goto []",
        "press []",
        "jump [3]",
        "stop now [x]",
        "`stop [N/A]`",
        "\ud800",
        "x" * (MAX_ACTION_CHARS + 1),
    ],
)
def test_malformed_actions_are_errors(text):
    """browser_env/actions.py ``create_id_based_action`` raises ``ActionParsingError`` on these (capitalised verbs, an
    empty type text, spaces inside an id's brackets, an unknown verb)."""
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
