"""How the shop moves from page to page: the transition function of the reference env."""

from __future__ import annotations

from dreamgym_env.domain import ParsedAction
from dreamgym_env.envs.webshop.catalog import Catalog, Product
from dreamgym_env.envs.webshop.pages import (
    BACK_LABEL,
    BUY_LABEL,
    NEXT_LABEL,
    PREV_LABEL,
    SEARCH_LABEL,
    SUB_PAGE_LABELS,
    Page,
    sanitize_query,
)


def find_label(labels: tuple[str, ...], argument: str) -> str | None:
    """The page label an action's argument names, lower-cased (``Search`` is not clickable), as ``WebAgentTextEnv.step``."""
    folded = argument.lower()
    return next((label for label in labels if label.lower() == folded and label != SEARCH_LABEL), None)


def select_option(
    product: Product, selection: tuple[tuple[str, str], ...], value: str
) -> tuple[tuple[str, str], ...]:
    """The selection after clicking option ``value`` of ``product``: each group it is a value of takes it."""
    chosen = dict(selection)
    for option in product.options:
        if value in option.values:
            chosen[option.label] = value
    return tuple((o.label, chosen[o.label]) for o in product.options if o.label in chosen)


def next_page(catalog: Catalog, page: Page, labels: tuple[str, ...], action: ParsedAction) -> Page | None:
    """The page after ``action`` on ``page`` (whose clickable labels are ``labels``); ``None`` if invalid.

    A search works on every page, as ``WebAgentTextEnv.step`` runs one whatever the page shows.
    """
    if action.verb == "search":
        return Page("results", query=sanitize_query(action.argument))
    label = find_label(labels, action.argument) if action.verb == "click" else None
    if label is None:
        return None
    if label == BACK_LABEL:
        return Page("search")
    if page.kind == "results":
        if label == PREV_LABEL:
            return Page("results", query=page.query, page=page.page - 1)
        if label == NEXT_LABEL:
            return Page("results", query=page.query, page=page.page + 1)
        return Page("item", query=page.query, page=page.page, item=catalog.by_id[label].index)
    if page.kind == "item":
        if label == PREV_LABEL:
            return Page("results", query=page.query, page=page.page)
        if label in SUB_PAGE_LABELS:
            kind = SUB_PAGE_LABELS[label]
            return Page(kind, query=page.query, page=page.page, item=page.item, selection=page.selection)  # type: ignore[arg-type]
        if label == BUY_LABEL:
            return Page("done", item=page.item, selection=page.selection)
        selection = select_option(catalog.products[page.item], page.selection, label)
        return Page("item", query=page.query, page=page.page, item=page.item, selection=selection)
    if label == PREV_LABEL:  # a sub-page
        return Page("item", query=page.query, page=page.page, item=page.item, selection=page.selection)
    return None
