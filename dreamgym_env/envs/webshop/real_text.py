"""A page as WebShop's own text env prints it (``observation_mode='text'``).

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
"""

from __future__ import annotations

import json

from dreamgym_env.envs.webshop.catalog import bullet_points_of
from dreamgym_env.envs.webshop.pages import BACK_LABEL, BUY_LABEL, NEXT_LABEL, PREV_LABEL, SEARCH_LABEL
from dreamgym_env.envs.webshop.state import WebShopState

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
