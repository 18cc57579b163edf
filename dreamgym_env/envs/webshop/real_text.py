"""A page as WebShop's own text env prints it: the agent-facing observation of both WebShop ids.

``WebAgentTextEnv.convert_html_to_text(html, simple=True)`` of princeton-nlp/WebShop
(``web_agent_site/envs/web_agent_text_env.py``, commit 64fa2a5) joins the stripped visible
strings of the page's HTML with ``' [SEP] '``. The HTML comes from the templates in
``web_agent_site/templates/``, so each page kind prints these elements, in this order:

* search (``search_page.html``): ``WebShop``, ``Instruction:``, the instruction, ``Search``.
* results (``results_page.html``): ``Instruction:``, the instruction, ``Back to Search``,
  ``Page <p> (Total results: <n>)``, ``< Prev`` (from page 2 on), ``Next >`` (always), then
  per product its id, title and price tag (``$<price>``).
* item (``item_page.html``): ``Instruction:``, the instruction, ``Back to Search``,
  ``< Prev``, per option group its name and values, the title, ``Price: $<price>``,
  ``Rating: <rating>``, ``Description``, ``Features``, ``Reviews``, ``Buy Now``. The selected
  options are not shown (the text mode prints no ``checked`` state).
* description / features / reviews (``description_page.html``, ``features_page.html``,
  ``review_page.html``): ``Instruction:``, the instruction, ``Back to Search``, ``< Prev``,
  then the description; or each bullet point; or per review ``"<title>"``, its score and
  its body.
* done (``done_page.html`` as ``SimServer.done`` renders it, with the hidden purchase and
  target blocks, whose unset fields print ``None`` or nothing): ``Thank you for shopping with
  us!``, ..., ``Your score (min 0.0, max 1.0)``, the reward, ``Reward Details``, ``None``.

Empty strings (the templates' indentation) are left out, as in the observations the real env
is known to print ("WebShop [SEP] Instruction: [SEP] ... [SEP] Search"). The price tag is
WebShop's ``f"${price}"`` of a float (``$35.5``, ``$100.0``).

The Markov page text (:mod:`~dreamgym_env.envs.webshop.pages`) stays what the experience model
reads and writes and what the reference env restores from; :func:`observation_of_page` turns
it into this text without a catalog (the synthetic env's pages may show invented products).
"""

from __future__ import annotations

import json
import re

from dreamgym_env.envs.webshop.catalog import bullet_points_of
from dreamgym_env.envs.webshop.pages import (
    BACK_LABEL,
    BUY_LABEL,
    NEXT_LABEL,
    PREV_LABEL,
    SEARCH_LABEL,
    PageKind,
)
from dreamgym_env.envs.webshop.state import Choice, Item, OptionGroup, ResultRow, WebShopState

SEP = " [SEP] "
"""What ``convert_html_to_text`` joins a page's strings with."""
SUB_PAGE_BUTTONS = ("Description", "Features", "Reviews")


def price_tag(price: float) -> str:
    """WebShop's ``product['Price']``: ``f"${price}"`` of the float."""
    return f"${float(price)}"


def _review_elements(line: str) -> list[str]:
    """A ``"<name> (<n> stars): <review>"`` line as review_page.html prints it: title, score, body."""
    head, _, body = line.partition("): ")
    name, _, stars = head.rpartition(" (")
    return [f'"{name}"', stars.split()[0] if stars else "", body]


def real_text(state: WebShopState, reward: float | None = None) -> str:
    """The text WebShop's text env shows for ``state`` (``reward``: the done page's score)."""
    kind = state.kind
    if kind == "search":
        return SEP.join(("WebShop", "Instruction:", state.instruction, SEARCH_LABEL))
    if kind == "done":
        return SEP.join(_done_elements(state, reward))
    elements = ["Instruction:", state.instruction, BACK_LABEL]
    if kind == "results":
        elements.append(f"Page {state.page} (Total results: {state.total})")
        if state.page > 1:
            elements.append(PREV_LABEL)
        elements.append(NEXT_LABEL)
        for row in state.results:
            elements.extend((row.id, row.title, price_tag(row.price)))
        return SEP.join(elements)
    item = state.item
    if item is None:
        raise ValueError(f"a {kind} page needs its item")
    elements.append(PREV_LABEL)
    if kind == "item":
        for group in item.options:
            elements.append(group.name)
            elements.extend(group.values)
        elements.extend((item.title, f"Price: {price_tag(item.price)}", f"Rating: {item.rating}"))
        elements.extend((*SUB_PAGE_BUTTONS, BUY_LABEL))
    elif kind == "features":
        elements.extend(bullet_points_of(item.brand, item.category, item.attrs))
    elif kind == "reviews":
        for line in state.text:
            elements.extend(_review_elements(line))
    else:
        elements.extend(state.text)
    return SEP.join(e for e in elements if e)


def _done_elements(state: WebShopState, reward: float | None) -> list[str]:
    assert state.item is not None
    options = json.dumps({c.group: c.value for c in state.selected}, sort_keys=True)
    return [
        "Thank you for shopping with us!",
        "Your code:",
        "None",
        "(Paste it in your MTurk interface.)",
        "Purchased",
        "asin",
        state.item.id,
        "options",
        options,
        *("attrs", "None", "category", "None", "query", "None", "product category", "None"),
        "Target",
        *("asin", "options", "attrs", "price upper", "instuction text", "category", "product category"),
        "query",
        "Goal",
        "None",
        "Reward",
        "Your score (min 0.0, max 1.0)",
        str(0.0 if reward is None else float(reward)),
        "Reward Details",
        "None",
    ]


_RESULTS_HEADER = re.compile(r'^WebShop \| results \| query "([^"]*)" \| page (\d+) of \d+ \| (\d+) results$')
_ITEM_HEADER = re.compile(
    r'^WebShop \| (item|description|features|reviews) (\S+) \| query "([^"]*)" \| page (\d+)$'
)
_ROW = re.compile(r"^\[(\S+)\] (.*) \| \$([0-9.]+)$")
_PRICE_RATING = re.compile(r"^Price: \$([0-9.]+) \| Rating: ([0-9.]+) stars$")
_OPTION_LINE = re.compile(r"^([^:\[\]]+): ((?:\[[^\[\]]+\] ?)+)$")
_VALUE = re.compile(r"\[([^\[\]]+)\]")
_PURCHASE = re.compile(r"^Purchased (\S+) with (.*) for \$([0-9.]+)\.$")
_INSTRUCTION = "Instruction: "


def observation_of_page(text: str, reward: float | None = None) -> str:
    """The real text of a page in the Markov format, or ``text`` itself when it is not one.

    ``reward`` is the done page's score. A text that does not parse as a page (a synthetic
    env's model may write one) is shown as written: the agent sees what the model wrote.
    """
    state = _state_of_page_text(text)
    return text if state is None else real_text(state, reward)


def _selection(text: str) -> tuple[Choice, ...] | None:
    if text in ("none", "no options"):
        return ()
    choices = []
    for part in text.split(", "):
        group, sep, value = part.partition("=")
        if not sep:
            return None
        choices.append(Choice.model_construct(group=group, value=value))
    return tuple(choices)


def _item(item_id: str, title: str = "", price: float = 0.0, rating: float = 0.0) -> Item:
    return Item.model_construct(
        id=item_id,
        title=title,
        price=price,
        rating=rating,
        brand="",
        category="",
        type="",
        attrs=(),
        options=(),
    )


def _state_of_page_text(text: str) -> WebShopState | None:
    """What :func:`real_text` needs of a page's text (no catalog: facts it does not print stay empty)."""
    lines = text.split("\n")
    if len(lines) < 3 or not lines[1].startswith(_INSTRUCTION):
        return None
    header, instruction, body = lines[0], lines[1][len(_INSTRUCTION) :], lines[2:]
    if header == "WebShop | search":
        return WebShopState.model_construct(kind="search", instruction=instruction)
    if header == "WebShop | done":
        bought = _PURCHASE.match(body[-1])
        selected = _selection(bought.group(2)) if bought else None
        if bought is None or selected is None:
            return None
        return WebShopState.model_construct(
            kind="done", instruction=instruction, item=_item(bought.group(1)), selected=selected
        )
    results = _RESULTS_HEADER.match(header)
    if results:
        rows = [_ROW.match(line) for line in body[1:]]
        return WebShopState.model_construct(
            kind="results",
            instruction=instruction,
            query=results.group(1),
            page=int(results.group(2)),
            total=int(results.group(3)),
            results=tuple(
                ResultRow.model_construct(id=row.group(1), title=row.group(2), price=float(row.group(3)))
                for row in rows
                if row
            ),
        )
    opened = _ITEM_HEADER.match(header)
    if opened is None:
        return None
    kind: PageKind = opened.group(1)  # type: ignore[assignment]
    base = WebShopState.model_construct(
        kind=kind, instruction=instruction, query=opened.group(3), page=int(opened.group(4))
    )
    if kind == "item":
        return _item_page(opened.group(2), body, base)
    text_lines = tuple(line for line in body[1:] if not line.startswith("Selected: "))
    item = _item(opened.group(2))
    if kind == "features":
        points = [line.removeprefix("- ") for line in text_lines]
        brand = next((p.removeprefix("brand: ") for p in points if p.startswith("brand: ")), "")
        category = next((p.removeprefix("category: ") for p in points if p.startswith("category: ")), "")
        attrs = tuple(p for p in points if not p.startswith(("brand: ", "category: ")))
        item = item.model_copy(update={"brand": brand, "category": category, "attrs": attrs})
        text_lines = ()
    return base.model_copy(update={"item": item, "text": text_lines})


def _item_page(item_id: str, body: list[str], base: WebShopState) -> WebShopState | None:
    if len(body) < 3:
        return None
    price = _PRICE_RATING.match(body[2])
    if price is None:
        return None
    groups = []
    for line in body[3:]:
        option = _OPTION_LINE.match(line)
        if option and not line.startswith("Selected: "):
            groups.append(
                OptionGroup.model_construct(
                    name=option.group(1), values=tuple(_VALUE.findall(option.group(2)))
                )
            )
    item = _item(item_id, body[1], float(price.group(1)), float(price.group(2)))
    item = item.model_copy(update={"options": tuple(groups)})
    return base.model_copy(update={"item": item})
