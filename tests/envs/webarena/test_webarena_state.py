from __future__ import annotations

from dreamgym_env.envs.webarena.state import (
    MORE_ABOVE,
    MORE_BELOW,
    Element,
    WebArenaState,
    parse_state,
    render,
)

STATE = WebArenaState(
    url="http://reddit.local/f/books",
    title="/f/books",
    tabs=["/f/books", "New Tab"],
    active_tab=0,
    elements=[
        Element(id=1, role="RootWebArea", name="/f/books", properties={"focused": True}),
        Element(id=2, role="heading", name="Search results for: 'x'", depth=1),
        Element(id=3, role="textbox", name="Comment", depth=2,
                properties={"focused": True, "required": False, "value": "it's fine"}),
        Element(id=4, role="button", name="Post", depth=2),
    ],
)


def test_axtree_render_and_parse_round_trip():
    text = render(STATE)
    assert text.split("\n")[:3] == ["Tab 0 (current): /f/books\tTab 1: New Tab", "URL: http://reddit.local/f/books",
                                    "[1] RootWebArea '/f/books' focused: True"]
    assert "\t\t[3] textbox 'Comment' focused: True required: False value: 'it's fine'" in text
    assert parse_state(text) == STATE


def test_compact_render_and_parse():
    text = render(STATE, "compact")
    assert text.split("\n") == [
        "URL: http://reddit.local/f/books", "Tabs: [0] /f/books (current) | [1] New Tab",
        "[2] heading: Search results for: 'x'", "[3] textbox: Comment (focused, value: 'it's fine')", "[4] button: Post"]
    parsed = parse_state(text)
    assert [(e.id, e.role) for e in parsed.elements] == [(2, "heading"), (3, "textbox"), (4, "button")]
    assert parsed.tabs == STATE.tabs and parsed.title == "/f/books"


def test_failure_line_and_json_round_trip():
    failed = STATE.model_copy(update={"message": "Invalid action: there is no element [9] on the page"})
    assert render(failed).endswith("\nInvalid action: there is no element [9] on the page")
    assert parse_state(render(failed)).message == failed.message
    assert WebArenaState.model_validate_json(failed.model_dump_json()) == failed


def test_json_leaves_out_empty_fields_and_reads_them_back():
    page = WebArenaState(
        url="http://shopping.local/",
        tabs=["One Stop Market"],
        elements=[Element(id=1, role="RootWebArea", name="One Stop Market"), Element(id=2, role="main", depth=1),
                  Element(id=3, role="link", name="My Cart (0)", depth=2, properties={"focused": False})],
    )
    text = page.model_dump_json()
    assert '"elements":[{"id":1,"role":"RootWebArea","name":"One Stop Market"},{"id":2,"role":"main","depth":1},' in text
    assert '"properties":{"focused":false}' in text  # a property that is False is still said
    assert '"message"' not in text and '"more_' not in text and '"properties":{}' not in text and '"name":""' not in text
    assert WebArenaState.model_validate_json(text) == page
    # an answer that writes the empty fields out is the same state, with the same canonical JSON
    written = text.replace('{"id":2,"role":"main","depth":1}', '{"id":2,"role":"main","name":"","depth":1,"properties":{}}')
    assert WebArenaState.model_validate_json(written).model_dump_json() == text


def test_scroll_lines_say_what_the_viewport_hides_and_read_back():
    scrolled = STATE.model_copy(update={"more_above": True, "more_below": True, "message": "Invalid action: x"})
    for mode in ("axtree", "compact"):
        lines = render(scrolled, mode).split("\n")
        assert lines[-3:] == [MORE_ABOVE, MORE_BELOW, "Invalid action: x"]
        parsed = parse_state(render(scrolled, mode))
        assert (parsed.more_above, parsed.more_below, parsed.message) == (True, True, "Invalid action: x")
    assert parse_state(render(scrolled)) == scrolled
    assert '"more_above":true,"more_below":true' in scrolled.model_dump_json()
    assert WebArenaState.model_validate_json(scrolled.model_dump_json()) == scrolled
    assert MORE_BELOW not in render(STATE)
