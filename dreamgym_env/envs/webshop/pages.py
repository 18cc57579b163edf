"""The text pages of the WebShop reference env: how a page state renders, and back.

The format is the one :data:`~dreamgym_env.envs.webshop.domain.PROMPT` describes to the
experience model (a test renders every kind of page and checks it against the prompt). Pages
are Markov: the text of a page determines the env's state (the item page names the query and
results page that ``< Prev`` returns to, sub-pages show the selection), so a page can be parsed
back (:func:`parse_page`) and the env restored to it.
"""

from __future__ import annotations

import math
import re
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from dreamgym_env.envs.webshop.catalog import Catalog, Product

PageKind = Literal["search", "results", "item", "description", "features", "reviews", "done"]
RESULTS_PER_PAGE = 10

SEARCH_LABEL = "Search"
BACK_LABEL = "Back to Search"
PREV_LABEL = "< Prev"
NEXT_LABEL = "Next >"
BUY_LABEL = "Buy Now"
SUB_PAGE_LABELS = {"Description": "description", "Features": "features", "Reviews": "reviews"}
NO_RESULTS_LINE = "No products match the query."
_QUERY_JUNK = re.compile(r'[\[\]"|\x00-\x1f]')


@dataclass(frozen=True)
class Page:
    """The state of the shop: which page is shown, for which query, item and option selection.

    ``item`` is a product index (``-1`` where no item is open); ``selection`` holds
    ``(group label, value)`` pairs in the item's option order.
    """

    kind: PageKind
    query: str = ""
    page: int = 1
    item: int = -1
    selection: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Rendered:
    """A page's text and its clickable labels, in page order."""

    text: str
    labels: tuple[str, ...]


def sanitize_query(query: str) -> str:
    """The query as the shop keeps it: lower case, no brackets, quotes or bars, single spaces."""
    return " ".join(_QUERY_JUNK.sub(" ", query).lower().split())


def search_page(instruction: str) -> str:
    """The search page, where every WebShop episode starts."""
    return f"WebShop | search\nInstruction: {instruction}\n[{SEARCH_LABEL}]"


def _selection_text(selection: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{group}={value}" for group, value in selection) if selection else "none"


def _origin(product: Product, page: Page) -> str:
    return f'{product.id} | query "{page.query}" | page {page.page}'


def page_count(total: int) -> int:
    return max(1, math.ceil(total / RESULTS_PER_PAGE))


LAYOUT_CACHE_SIZE = 200_000
"""Page layouts (all of a page but its instruction) kept per catalog before the cache restarts."""


_LAYOUTS: weakref.WeakKeyDictionary[Catalog, dict[Page, tuple[str, str, tuple[str, ...]]]] = (
    weakref.WeakKeyDictionary()
)
"""Rendered page layouts of each catalog (a catalog's pages recur across episodes)."""


def render(page: Page, instruction: str, catalog: Catalog) -> Rendered:
    """Render ``page`` for a task with ``instruction`` (the second line of every page)."""
    layouts = _LAYOUTS.setdefault(catalog, {})
    layout = layouts.get(page)
    if layout is None:
        if len(layouts) >= LAYOUT_CACHE_SIZE:
            layouts.clear()
        layout = layouts[page] = _layout(page, catalog)
    header, body, labels = layout
    return Rendered(f"{header}\nInstruction: {instruction}\n{body}", labels)


def _layout(page: Page, catalog: Catalog) -> tuple[str, str, tuple[str, ...]]:
    """A page's first line, its lines after the instruction, and its labels."""
    if page.kind == "search":
        return "WebShop | search", f"[{SEARCH_LABEL}]", (SEARCH_LABEL,)
    if page.kind == "results":
        results = catalog.search(page.query)
        pages = page_count(len(results))
        nav = [BACK_LABEL, PREV_LABEL, NEXT_LABEL] if page.page > 1 else [BACK_LABEL, NEXT_LABEL]
        header = (
            f'WebShop | results | query "{page.query}" | page {page.page} of {pages} | {len(results)} results'
        )
        shown = results[(page.page - 1) * RESULTS_PER_PAGE : page.page * RESULTS_PER_PAGE]
        products = [catalog.products[i] for i in shown]
        lines = [" ".join(f"[{label}]" for label in nav)]
        lines.extend(f"[{p.id}] {p.title} | ${p.price:.2f}" for p in products)
        if not results:
            lines.append(NO_RESULTS_LINE)
        return header, "\n".join(lines), (*nav, *(p.id for p in products))
    product = catalog.products[page.item]
    if page.kind == "done":
        bought = f"with {_selection_text(page.selection)}" if page.selection else "with no options"
        return "WebShop | done", f"Purchased {product.id} {bought} for ${product.price:.2f}.", ()
    if page.kind == "item":
        lines = [
            f"[{BACK_LABEL}] [{PREV_LABEL}]",
            product.title,
            f"Price: ${product.price:.2f} | Rating: {product.rating:.1f} stars",
        ]
        values: list[str] = []
        for option in product.options:
            lines.append(f"{option.label}: " + " ".join(f"[{v}]" for v in option.values))
            values.extend(option.values)
        lines.append(f"Selected: {_selection_text(page.selection)}")
        lines.append("[Description] [Features] [Reviews] [Buy Now]")
        labels = (BACK_LABEL, PREV_LABEL, *values, *SUB_PAGE_LABELS, BUY_LABEL)
        return f"WebShop | item {_origin(product, page)}", "\n".join(lines), labels
    lines = [
        f"[{BACK_LABEL}] [{PREV_LABEL}]",
        f"Selected: {_selection_text(page.selection)}",
        *catalog.text(product, page.kind),
    ]
    return f"WebShop | {page.kind} {_origin(product, page)}", "\n".join(lines), (BACK_LABEL, PREV_LABEL)


def is_reachable(page: Page, catalog: Catalog) -> bool:
    """Whether an episode can reach ``page``.

    That is: a results page that exists, an item opened from a results page that shows it, a
    selection of values the item offers, in the order of its groups.
    """
    if page.kind == "search":
        return True
    if page.kind != "done":
        results = catalog.search(page.query)
        if page.page < 1:  # [Next >] goes on past the last page, as in WebShop
            return False
        if page.kind == "results":
            return True
        shown = results[(page.page - 1) * RESULTS_PER_PAGE : page.page * RESULTS_PER_PAGE]
        if page.item not in shown:
            return False
    product = catalog.products[page.item]
    chosen = dict(page.selection)
    canonical = tuple((o.label, chosen[o.label]) for o in product.options if o.label in chosen)
    return canonical == page.selection and all(
        value in product.option(label).values  # type: ignore[union-attr]
        for label, value in page.selection
    )


_ORIGIN = re.compile(r'^(item|description|features|reviews) (\S+) \| query "([^"]*)" \| page (\d+)$')
_RESULTS = re.compile(r'^results \| query "([^"]*)" \| page (\d+) of \d+ \| \d+ results$')
_DONE = re.compile(r"^Purchased (\S+) with (.*) for \$[0-9.]+\.$")


def _parse_selection(text: str) -> tuple[tuple[str, str], ...] | None:
    if text in ("none", "no options"):
        return ()
    pairs = []
    for part in text.split(", "):
        group, sep, value = part.partition("=")
        if not sep:
            return None
        pairs.append((group, value))
    return tuple(pairs)


def parse_page(text: str, catalog: Catalog) -> Page | None:
    """The page state a page's text shows, or ``None`` if it is not a page of this shop.

    The caller should check that rendering the result gives ``text`` back (``parse_page``
    reads the header and selection only).
    """
    lines = text.split("\n")
    if len(lines) < 2 or not lines[0].startswith("WebShop | "):
        return None
    header = lines[0][len("WebShop | ") :]
    if header == "search":
        return Page("search")
    match = _RESULTS.match(header)
    if match:
        return Page("results", query=match.group(1), page=int(match.group(2)))
    if header == "done":
        done = _DONE.match(lines[-1])
        product = catalog.by_id.get(done.group(1)) if done else None
        selection = _parse_selection(done.group(2)) if done else None
        if product is None or selection is None:
            return None
        return Page("done", item=product.index, selection=selection)
    match = _ORIGIN.match(header)
    if not match:
        return None
    product = catalog.by_id.get(match.group(2))
    selected = next((line for line in lines if line.startswith("Selected: ")), None)
    selection = _parse_selection(selected[len("Selected: ") :]) if selected else None
    if product is None or selection is None:
        return None
    kind: PageKind = match.group(1)  # type: ignore[assignment]
    return Page(kind, query=match.group(3), page=int(match.group(4)), item=product.index, selection=selection)
