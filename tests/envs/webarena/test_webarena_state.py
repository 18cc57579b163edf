from __future__ import annotations

from dreamgym_env.envs.webarena.state import (
    MORE_ABOVE,
    MORE_BELOW,
    Element,
    TabHistory,
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
        Element(
            id=3,
            role="textbox",
            name="Comment",
            depth=2,
            properties={"focused": True, "required": False, "value": "it's fine"},
        ),
        Element(id=4, role="button", name="Post", depth=2),
    ],
)


def test_axtree_render_and_parse_round_trip():
    """browser_env/processors.py ``TextObervationProcessor.process``: tabs joined by " | ", a blank line, the tree; the URL
    after it as WebArena's prompt template puts it; names as ``repr``, property values unquoted."""
    text = render(STATE)
    assert text.split("\n") == [
        "Tab 0 (current): /f/books | Tab 1: New Tab",
        "",
        "[1] RootWebArea '/f/books' focused: True",
        "\t[2] heading \"Search results for: 'x'\"",
        "\t\t[3] textbox 'Comment' focused: True required: False value: it's fine",
        "\t\t[4] button 'Post'",
        "URL: http://reddit.local/f/books",
    ]
    assert parse_state(text) == STATE


def test_layout_nodes_without_name_are_pruned_and_children_move_up():
    """browser_env/processors.py ``parse_accessibility_tree``: a nameless, property-less banner/list/listitem/... is left out
    (its children one level up); a nameless listitem with properties too; ``main`` stays."""
    page = STATE.model_copy(
        update={
            "elements": [
                Element(id=1, role="RootWebArea", name="t"),
                Element(id=2, role="navigation", depth=1),
                Element(id=3, role="link", name="Home", depth=2),
                Element(id=4, role="main", depth=1),
                Element(id=5, role="list", depth=2),
                Element(id=6, role="listitem", depth=3, properties={"selected": False}),
                Element(id=7, role="link", name="Post", depth=4),
                Element(id=8, role="listitem", name="named", depth=3),
            ]
        }
    )
    assert render(page).split("\n")[2:-1] == [
        "[1] RootWebArea 't'",
        "\t[3] link 'Home'",
        "\t[4] main ''",
        "\t\t[7] link 'Post'",
        "\t\t[8] listitem 'named'",
    ]
    assert render(parse_state(render(page))) == render(page)


def test_static_text_already_in_the_three_lines_before_is_dropped():
    """browser_env/processors.py ``clean_accesibility_tree``: a StaticText whose text is empty or in one of the 3 previous lines goes."""
    page = STATE.model_copy(
        update={
            "elements": [
                Element(id=1, role="RootWebArea", name="t"),
                Element(id=2, role="link", name="Price: $5", depth=1),
                Element(id=3, role="StaticText", name="$5", depth=2),
                Element(id=4, role="StaticText", name="", depth=1),
                Element(id=5, role="button", name="a", depth=1),
                Element(id=6, role="button", name="b", depth=1),
                Element(id=7, role="button", name="c", depth=1),
                Element(id=8, role="StaticText", name="$5", depth=1),
            ]
        }
    )
    assert render(page).split("\n")[2:-1] == [
        "[1] RootWebArea 't'",
        "\t[2] link 'Price: $5'",
        "\t[5] button 'a'",
        "\t[6] button 'b'",
        "\t[7] button 'c'",
        "\t[8] StaticText '$5'",
    ]


def test_compact_render_and_parse():
    text = render(STATE, "compact")
    assert text.split("\n") == [
        "URL: http://reddit.local/f/books",
        "Tabs: [0] /f/books (current) | [1] New Tab",
        "[2] heading: Search results for: 'x'",
        "[3] textbox: Comment (focused, value: 'it's fine')",
        "[4] button: Post",
    ]
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
        elements=[
            Element(id=1, role="RootWebArea", name="One Stop Market"),
            Element(id=2, role="main", depth=1),
            Element(id=3, role="link", name="My Cart (0)", depth=2, properties={"focused": False}),
        ],
    )
    text = page.model_dump_json()
    assert (
        '"elements":[{"id":1,"role":"RootWebArea","name":"One Stop Market"},{"id":2,"role":"main","depth":1},'
        in text
    )
    assert '"properties":{"focused":false}' in text  # a property that is False is still said
    assert (
        '"message"' not in text
        and '"more_' not in text
        and '"properties":{}' not in text
        and '"name":""' not in text
        and '"history"' not in text
    )
    assert WebArenaState.model_validate_json(text) == page
    # a tab on its first page leaves its position out
    history = [TabHistory(urls=["http://shopping.local/"]), TabHistory(urls=["a", "b"], index=1)]
    tabs = page.model_copy(update={"history": history})
    written = '"history":[{"urls":["http://shopping.local/"]},{"urls":["a","b"],"index":1}]'
    assert written in tabs.model_dump_json()
    assert WebArenaState.model_validate_json(tabs.model_dump_json()) == tabs
    # an answer that writes the empty fields out is the same state, with the same canonical JSON
    written = text.replace(
        '{"id":2,"role":"main","depth":1}', '{"id":2,"role":"main","name":"","depth":1,"properties":{}}'
    )
    assert WebArenaState.model_validate_json(written).model_dump_json() == text


def test_scroll_lines_say_what_the_viewport_hides_and_read_back():
    scrolled = STATE.model_copy(
        update={"more_above": True, "more_below": True, "message": "Invalid action: x"}
    )
    for mode in ("axtree", "compact"):
        lines = render(scrolled, mode).split("\n")
        assert lines[-3:] == [MORE_ABOVE, MORE_BELOW, "Invalid action: x"]
        parsed = parse_state(render(scrolled, mode))
        assert (parsed.more_above, parsed.more_below, parsed.message) == (True, True, "Invalid action: x")
    assert parse_state(render(scrolled)) == scrolled
    assert '"more_above":true,"more_below":true' in scrolled.model_dump_json()
    assert WebArenaState.model_validate_json(scrolled.model_dump_json()) == scrolled
    assert MORE_BELOW not in render(STATE)
