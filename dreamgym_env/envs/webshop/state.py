"""The abstract WebShop state: the task-relevant content of one page, and its text.

:class:`WebShopState` is what a page shows, self-contained (rendering it needs no catalog):
the page ``kind``, the instruction, the query and results page, the result rows, the open
item with its option groups and the selection, the sub-page text and, on the ``done`` page,
the purchase (``item`` is the product bought, ``selected`` the options bought with). The item
also carries the product facts the purchase score needs (type, category, attributes), so a
``done`` state can be scored without the catalog (:func:`score_state`).

:func:`render` gives exactly the page text of the reference env
(:mod:`~dreamgym_env.envs.webshop.pages`): for every page it renders,
``render(state_of_page(page, instruction, catalog)) == pages.render(page, instruction, catalog).text``.
An invalid action leaves the page as it is, so its observation is the page's text too.

In structured mode the experience model writes this state as JSON
(``WebShopState.model_json_schema()``); field names are short and lists bounded so that a
schema-constrained decoder cannot run away. The schema is about 4,200 characters of JSON; a
typical results state about 1,400 (10 rows), an item state about 650.
"""

from __future__ import annotations

import json
import weakref
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dreamgym_env.envs.webshop.catalog import MAX_RESULTS
from dreamgym_env.envs.webshop.navigation import select_option
from dreamgym_env.envs.webshop.pages import (
    BACK_LABEL,
    LAYOUT_CACHE_SIZE,
    NEXT_LABEL,
    NO_RESULTS_LINE,
    PREV_LABEL,
    RESULTS_PER_PAGE,
    SUB_PAGE_LABELS,
    Page,
    PageKind,
    is_reachable,
    page_count,
    parse_page,
    sanitize_query,
)

if TYPE_CHECKING:
    from dreamgym_env.domain import ParsedAction
    from dreamgym_env.envs.webshop.catalog import Catalog, Product
    from dreamgym_env.envs.webshop.goal import Goal, Score

__all__ = [
    "Choice",
    "Item",
    "OptionGroup",
    "ResultRow",
    "WebShopState",
    "catalog_facts",
    "catalog_lines",
    "item_of",
    "render",
    "score_state",
    "state_of_page",
    "state_of_text",
]

ITEM_KINDS: frozenset[str] = frozenset({"item", "description", "features", "reviews", "done"})
"""Page kinds that show an item (``done``: the item bought)."""


def _drop_titles(schema: dict[str, Any]) -> None:
    """Leave pydantic's generated field titles out of the schema (the prompt shows it: keep it short)."""
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


_FROZEN = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_drop_titles)
Word = Annotated[str, Field(max_length=60)]
Line = Annotated[str, Field(max_length=400)]


class ResultRow(BaseModel):
    """One row of a results page: [<id>] <title> | $<price>."""

    model_config = _FROZEN

    id: str = Field(description="item id, the row's clickable label", max_length=20)
    title: str = Field(description="product title", max_length=200)
    price: float = Field(description="price in dollars", ge=0)


class OptionGroup(BaseModel):
    """One option group of an item: <name>: [<value>] [<value>] ..."""

    model_config = _FROZEN

    name: str = Field(description='group name, e.g. "color", "size"', max_length=40)
    values: tuple[Word, ...] = Field(description="the values offered, in page order", max_length=12)


class Choice(BaseModel):
    """A selected option: <group>=<value>."""

    model_config = _FROZEN

    group: str = Field(description="option group name", max_length=40)
    value: str = Field(description="the selected value of that group", max_length=60)


class Item(BaseModel):
    """The open (or bought) product: what its pages show, and the facts that score a purchase."""

    model_config = _FROZEN

    id: str = Field(description="item id", max_length=20)
    title: str = Field(description="product title", max_length=200)
    price: float = Field(description="price in dollars", ge=0)
    rating: float = Field(description="average rating, 1 to 5 stars", ge=0, le=5)
    brand: str = Field(description="brand (features page)", max_length=60)
    category: str = Field(description="category (features page)", max_length=60)
    type: str = Field(description='product type, e.g. "running shoes"', max_length=60)
    attrs: tuple[Word, ...] = Field(
        description='attributes, the features page\'s "- <attr>" lines, in order', max_length=8
    )
    options: tuple[OptionGroup, ...] = Field(
        default=(), description="option groups, in page order", max_length=4
    )


def _state_schema(schema: dict[str, Any]) -> None:
    """No field titles, and the item-page rule in the schema itself, so a validator re-asks for it."""
    _drop_titles(schema)
    schema["allOf"] = [
        {
            "if": {"properties": {"kind": {"enum": sorted(ITEM_KINDS)}}, "required": ["kind"]},
            "then": {"required": ["item"], "properties": {"item": {"type": "object"}}},
        }
    ]


class WebShopState(BaseModel):
    """The content of one WebShop page; the page text is rendered from it."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_state_schema)

    kind: PageKind = Field(description="which page is shown")
    instruction: str = Field(description="the task's instruction, shown on every page", max_length=1000)
    query: str = Field(
        default="",
        description="results, item and sub-pages: the search query (lower case) of the results page",
        max_length=500,
    )
    page: int = Field(
        default=1,
        description="results, item and sub-pages: the results page number ([Next >] goes past the last)",
        ge=1,
    )
    total: int = Field(
        default=0,
        description=f"results page: number of results (at most {MAX_RESULTS}, {RESULTS_PER_PAGE} a page)",
        ge=0,
        le=MAX_RESULTS,
    )
    results: tuple[ResultRow, ...] = Field(
        default=(), description="results page: the rows of this page", max_length=RESULTS_PER_PAGE
    )
    item: Item | None = Field(
        default=None, description="item, sub-pages and done: the product (done: the one bought)"
    )
    selected: tuple[Choice, ...] = Field(
        default=(), description="item, sub-pages and done: the selected options, in group order", max_length=4
    )
    text: tuple[Line, ...] = Field(
        default=(),
        description="description page: its paragraph; reviews page: its lines "
        '"<name> (<n> stars): <review>"; else empty (the features page shows the item\'s facts)',
        max_length=6,
    )

    @model_validator(mode="after")
    def _item_where_shown(self) -> WebShopState:
        if self.kind in ITEM_KINDS and self.item is None:
            raise ValueError(f"a {self.kind} page needs its item")
        return self

    @property
    def page_count(self) -> int:
        """The number of results pages (``total`` results, 10 a page, at least 1)."""
        return page_count(self.total)


# -- rendering -------------------------------------------------------------------------------------


def _selection_text(selected: tuple[Choice, ...]) -> str:
    return ", ".join(f"{c.group}={c.value}" for c in selected) if selected else "none"


def render(state: WebShopState) -> str:
    """The page text of ``state``, exactly as the reference env shows it (deterministic)."""
    kind = state.kind
    if kind == "search":
        return f"WebShop | search\nInstruction: {state.instruction}\n[Search]"
    if kind == "results":
        pages = state.page_count
        nav = [BACK_LABEL, PREV_LABEL, NEXT_LABEL] if state.page > 1 else [BACK_LABEL, NEXT_LABEL]
        lines = [
            f'WebShop | results | query "{state.query}" | page {state.page} of {pages} | {state.total} results',
            f"Instruction: {state.instruction}",
            " ".join(f"[{label}]" for label in nav),
        ]
        lines.extend(f"[{row.id}] {row.title} | ${row.price:.2f}" for row in state.results)
        if not state.total:
            lines.append(NO_RESULTS_LINE)
        return "\n".join(lines)
    item = state.item
    if item is None:
        raise ValueError(f"a {kind} page needs its item")
    if kind == "done":
        bought = f"with {_selection_text(state.selected)}" if state.selected else "with no options"
        return (
            f"WebShop | done\nInstruction: {state.instruction}\n"
            f"Purchased {item.id} {bought} for ${item.price:.2f}."
        )
    origin = f'{item.id} | query "{state.query}" | page {state.page}'
    lines = [
        f"WebShop | {kind} {origin}",
        f"Instruction: {state.instruction}",
        f"[{BACK_LABEL}] [{PREV_LABEL}]",
    ]
    if kind == "item":
        lines.append(item.title)
        lines.append(f"Price: ${item.price:.2f} | Rating: {item.rating:.1f} stars")
        lines.extend(f"{group.name}: " + " ".join(f"[{v}]" for v in group.values) for group in item.options)
        lines.append(f"Selected: {_selection_text(state.selected)}")
        lines.append("[Description] [Features] [Reviews] [Buy Now]")
        return "\n".join(lines)
    lines.append(f"Selected: {_selection_text(state.selected)}")
    if kind == "features":
        lines.extend((f"- brand: {item.brand}", f"- category: {item.category}"))
        lines.extend(f"- {a}" for a in item.attrs)
    else:
        lines.extend(state.text)
    return "\n".join(lines)


# -- from the reference env's pages ----------------------------------------------------------------


def item_of(product: Product) -> Item:
    """The :class:`Item` of a catalog product."""
    return Item.model_construct(
        id=product.id,
        title=product.title,
        price=product.price,
        rating=product.rating,
        brand=product.brand,
        category=product.category,
        type=product.product_type,
        attrs=product.attributes,
        options=tuple(OptionGroup.model_construct(name=o.label, values=o.values) for o in product.options),
    )


# Parts shared by many pages, built once (states are immutable, so sharing them is safe).
@lru_cache(maxsize=16_384)
def _item(catalog: Catalog, index: int) -> Item:
    return item_of(catalog.products[index])


@lru_cache(maxsize=16_384)
def _row(catalog: Catalog, index: int) -> ResultRow:
    product = catalog.products[index]
    return ResultRow.model_construct(id=product.id, title=product.title, price=product.price)


@lru_cache(maxsize=4_096)
def _choice(group: str, value: str) -> Choice:
    return Choice.model_construct(group=group, value=value)


def _base_state(page: Page, catalog: Catalog) -> WebShopState:
    """The state of ``page`` with an empty instruction (built without validation: it is the catalog's)."""
    if page.kind == "search":
        return WebShopState.model_construct(kind="search", instruction="")
    if page.kind == "results":
        found = catalog.search(page.query)
        shown = found[(page.page - 1) * RESULTS_PER_PAGE : page.page * RESULTS_PER_PAGE]
        return WebShopState.model_construct(
            kind="results",
            instruction="",
            query=page.query,
            page=page.page,
            total=len(found),
            results=tuple(_row(catalog, i) for i in shown),
        )
    product = catalog.products[page.item]
    text = catalog.text(product, page.kind) if page.kind in ("description", "reviews") else ()
    return WebShopState.model_construct(
        kind=page.kind,
        instruction="",
        query=page.query,
        page=page.page,
        item=_item(catalog, page.item),
        selected=tuple(_choice(g, v) for g, v in page.selection),
        text=text,
    )


_PAGE_STATES: weakref.WeakKeyDictionary[Catalog, dict[Page, WebShopState]] = weakref.WeakKeyDictionary()
"""Page states of each catalog, without their instruction."""


def state_of_page(page: Page, instruction: str, catalog: Catalog) -> WebShopState:
    """The state of a reference-env page for a task with ``instruction``.

    ``render(state_of_page(page, instruction, catalog))`` is the page's text. Page states are
    cached per catalog (without the instruction), so this costs a dictionary look-up and a
    shallow copy once a page has been seen.
    """
    states = _PAGE_STATES.setdefault(catalog, {})
    base = states.get(page)
    if base is None:
        if len(states) >= LAYOUT_CACHE_SIZE:
            states.clear()
        base = states[page] = _base_state(page, catalog)
    return base.model_copy(update={"instruction": instruction})


def state_of_text(text: str, catalog: Catalog) -> WebShopState | None:
    """The state of a page's text, or ``None``.

    ``None`` when ``text`` is not a page of ``catalog``'s shop as the reference env renders it.
    """
    page = parse_page(text, catalog)
    lines = text.split("\n")
    if page is None or not lines[1].startswith("Instruction: ") or not is_reachable(page, catalog):
        return None
    state = state_of_page(page, lines[1][len("Instruction: ") :], catalog)
    return state if render(state) == text else None


def catalog_facts(state: WebShopState | None, action: ParsedAction, catalog: Catalog) -> dict[str, Any]:
    """What ``catalog`` answers to ``action`` on ``state``: the next state's fields that come from it.

    A search: the engine's ``query`` (the argument, sanitised), ``page`` 1, ``total`` and
    ``results``; [Next >], [< Prev] on results: the new ``page`` and its ``results``; [< Prev] on an
    item: the results page's ``total`` and ``results``; an item id: its ``item``; an option value:
    the ``selected`` options after it (the group the product lists the value in takes it);
    [Description], [Reviews]: the sub-page's ``text``. Each value as the state's JSON writes it.
    None for an action whose page the catalog does not shape ([Buy Now], [Back to Search]), a
    label the catalog does not know, or a click from a page that is not a state (``None``).
    """
    label = action.argument.lower()
    if action.verb == "search":
        query = sanitize_query(action.argument)
        return {"query": query, "page": 1, **_results(catalog, query, 1, with_total=True)}
    if action.verb != "click" or state is None:
        return {}
    if state.kind == "results":
        if label in (NEXT_LABEL.lower(), PREV_LABEL.lower()):
            page = state.page + (1 if label == NEXT_LABEL.lower() else -1)
            return {"page": page, **_results(catalog, state.query, page, with_total=False)}
        product = next((catalog.by_id.get(row.id) for row in state.results if row.id.lower() == label), None)
        return {} if product is None else {"item": item_of(product).model_dump(mode="json")}
    if state.kind == "item" and state.item is not None:
        if label == PREV_LABEL.lower():
            return _results(catalog, state.query, state.page, with_total=True)
        product = catalog.by_id.get(state.item.id)
        if product is None:
            return {}
        kind = SUB_PAGE_LABELS.get(next((k for k in SUB_PAGE_LABELS if k.lower() == label), ""), "")
        if kind in ("description", "reviews"):
            return {"text": list(catalog.text(product, kind))}
        value = next((v for o in product.options for v in o.values if v.lower() == label), None)
        if value is not None:
            chosen = select_option(product, tuple((c.group, c.value) for c in state.selected), value)
            return {"selected": [_choice(g, v).model_dump(mode="json") for g, v in chosen]}
    return {}


def catalog_lines(state: WebShopState | None, action: ParsedAction, catalog: Catalog) -> tuple[str, ...]:
    """:func:`catalog_facts` as request lines, ``"<field>": <JSON>`` each."""
    facts = catalog_facts(state, action, catalog)
    return tuple(
        f"{json.dumps(name)}: {json.dumps(value, ensure_ascii=False)}" for name, value in facts.items()
    )


def _results(catalog: Catalog, query: str, page: int, *, with_total: bool) -> dict[str, Any]:
    """The results page's ``total`` and rows, as the reference env's page state holds them."""
    shown = state_of_page(Page("results", query=query, page=page), "", catalog) if page >= 1 else None
    rows = [row.model_dump(mode="json") for row in shown.results] if shown else []
    total = len(catalog.search(query)) if shown is None else shown.total
    return {"total": total, "results": rows} if with_total else {"results": rows}


# -- scoring ---------------------------------------------------------------------------------------


def score_state(state: WebShopState, goal: Goal) -> Score | None:
    """WebShop's score of the purchase a ``done`` state shows, from the state's fields alone.

    The reference env's rules (:func:`~dreamgym_env.envs.webshop.goal.score_purchase`) over the
    facts the item carries: its title, its type's search query and breadcrumb, attributes,
    bullet points and description (both determined by the item's facts), price, and the
    selected option values. ``None`` when the state is not a purchase.
    """
    if state.kind != "done" or state.item is None:
        return None
    from dreamgym_env.envs.webshop.catalog import (
        bullet_points_of,
        description_of,
        product_category_of,
        query_of,
    )
    from dreamgym_env.envs.webshop.goal import Purchase, score

    item = state.item
    purchase = Purchase(
        title=item.title,
        query=query_of(item.type),
        product_category=product_category_of(item.category, item.type),
        attributes=item.attrs,
        bullet_points=bullet_points_of(item.brand, item.category, item.attrs),
        description=description_of(item.id, item.type, item.brand, item.category, item.attrs),
        price=item.price,
        options=tuple(c.value for c in state.selected),
    )
    return score(purchase, goal)
