from __future__ import annotations

import re

import pytest

from dreamgym_env.envs.webshop.catalog import load_catalog
from dreamgym_env.envs.webshop.domain import PROMPT
from dreamgym_env.envs.webshop.pages import (
    NO_RESULTS_LINE,
    Page,
    is_reachable,
    parse_page,
    render,
    sanitize_query,
)

INSTRUCTION = "i need a yoga mat, non slip, in black, 6mm thick, under 50.00 dollars"
BLOCKS = {  # the prompt's heading of each page kind
    "search": "Search page:",
    "results": "Results page:",
    "item": "Item page:",
    "description": "Sub-page (description, features or reviews):",
    "done": "After Buy Now:",
}


def template_regex(line: str) -> re.Pattern[str]:
    """A prompt template line as a regex: <...> is any text, ", ..." and " ..." more of the same."""
    pattern = re.escape(line).replace("\\ ", " ")
    pattern = pattern.replace(", \\.\\.\\.", "(, .+)*").replace(" \\.\\.\\.", "( .+)*")
    pattern = re.sub(r"<[a-z][a-z |'\\\\-]*>", ".+", pattern.replace("\\<", "<").replace("\\>", ">"))
    pattern = pattern.replace(" \\[< Prev\\]", "( \\[< Prev\\])?").replace(
        " \\[Next >\\]", "( \\[Next >\\])?"
    )
    return re.compile(pattern)


def prompt_block(kind: str) -> tuple[list[re.Pattern[str]], list[str]]:
    """The template lines the prompt gives for a page kind, and the literal lines its notes quote."""
    lines = PROMPT.state_format.splitlines()
    templates, quoted = [], []
    for line in lines[lines.index(BLOCKS[kind]) + 1 :]:
        if line in BLOCKS.values() or line.startswith("The query"):
            break
        if line.startswith("... "):
            quoted.extend(re.findall(r'"([^"]+)"', line))
        else:
            templates.append(template_regex(line))
    return templates, quoted


def pages():
    catalog = load_catalog()
    query = "yoga mat non slip"
    item = catalog.search(query)[0]
    product = catalog.products[item]
    chosen = tuple((o.label, o.values[0]) for o in product.options)
    yield "search", Page("search")
    yield "results", Page("results", query=query, page=1)
    yield "results", Page("results", query=query, page=3)
    yield "results", Page("results", query=query, page=5)
    yield "results", Page("results", query="zzzz qqqq", page=1)
    yield "item", Page("item", query=query, page=1, item=item)
    yield "item", Page("item", query=query, page=2, item=item, selection=chosen)
    for kind in ("description", "features", "reviews"):
        yield "description", Page(kind, query=query, page=1, item=item, selection=chosen[:1])  # type: ignore[arg-type]
    yield "done", Page("done", item=item, selection=chosen)
    yield "done", Page("done", item=item)


@pytest.mark.parametrize(("block", "page"), list(pages()))
def test_rendered_pages_follow_the_prompt(block, page):
    catalog = load_catalog()
    lines = render(page, INSTRUCTION, catalog).text.split("\n")
    templates, quoted = prompt_block(block)
    notes = [template_regex(q) for q in quoted]
    assert templates[0].fullmatch(lines[0]), (lines[0], templates[0].pattern)
    assert lines[1] == f"Instruction: {INSTRUCTION}"
    for line in lines:  # every line is one the prompt describes, or one its notes quote
        assert any(t.fullmatch(line) for t in templates) or any(n.search(line) for n in notes), line
    # every line the prompt describes is there, or a variant its notes quote stands in its place
    strict = [t for t in templates if t.pattern != ".+"]  # "<title>" matches any line
    variants = [line for line in lines if not any(t.fullmatch(line) for t in strict)]
    for template in templates:
        assert any(template.fullmatch(line) for line in lines) or any(
            n.search(line) for line in variants for n in notes
        ), template.pattern


@pytest.mark.parametrize(("block", "page"), list(pages()))
def test_pages_parse_back(block, page):
    catalog = load_catalog()
    text = render(page, INSTRUCTION, catalog).text
    assert parse_page(text, catalog) == page


def test_results_navigation_labels_and_no_results():
    """results_page.html: '< Prev' from page 2 on, 'Next >' on every results page (SimServer.receive turns
    the page whatever its number, so past the last one the page has no products)."""
    catalog = load_catalog()
    first = render(Page("results", query="yoga mat", page=1), INSTRUCTION, catalog)
    assert first.labels[:2] == ("Back to Search", "Next >")
    assert len(first.labels) == 12
    last = render(Page("results", query="yoga mat", page=5), INSTRUCTION, catalog)
    assert last.labels[:3] == ("Back to Search", "< Prev", "Next >")
    beyond = render(Page("results", query="yoga mat", page=9), INSTRUCTION, catalog)
    assert beyond.labels == ("Back to Search", "< Prev", "Next >") and beyond.text.endswith("[Next >]")
    empty = render(Page("results", query="zzzz"), INSTRUCTION, catalog)
    assert empty.text.endswith(NO_RESULTS_LINE) and empty.labels == ("Back to Search", "Next >")
    assert "| page 1 of 1 | 0 results" in empty.text


def test_parse_refuses_foreign_pages():
    catalog = load_catalog()
    assert parse_page("hello", catalog) is None
    assert (
        parse_page('WebShop | item B0NOTANITEM | query "x" | page 1\nInstruction: x\nSelected: none', catalog)
        is None
    )
    assert parse_page("WebShop | teleport\nInstruction: x", catalog) is None


def test_sanitize_query():
    assert sanitize_query('  Red "Shirt" [Buy Now] | x ') == "red shirt buy now x"


def test_is_reachable():
    catalog = load_catalog()
    query = "yoga mat non slip"
    results = catalog.search(query)
    item = results[0]
    product = catalog.products[item]
    assert is_reachable(Page("results", query=query, page=6), catalog)  # [Next >] goes past the last
    assert not is_reachable(Page("results", query=query, page=0), catalog)
    assert not is_reachable(Page("item", query=query, page=6, item=item), catalog)
    assert is_reachable(Page("item", query=query, page=1, item=item), catalog)
    assert not is_reachable(Page("item", query=query, page=2, item=item), catalog)
    good = tuple((o.label, o.values[-1]) for o in product.options)
    assert is_reachable(Page("features", query=query, page=1, item=item, selection=good), catalog)
    assert (
        not is_reachable(Page("item", query=query, page=1, item=item, selection=good[::-1]), catalog)
        or len(good) < 2
    )
    assert not is_reachable(
        Page("item", query=query, page=1, item=item, selection=(("color", "plaid"),)), catalog
    )
    assert is_reachable(Page("done", item=item, selection=good), catalog)
