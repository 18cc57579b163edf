"""The WebShop expert: a scripted policy that reads the pages and the task's goal.

It reads both page formats of the reference env: WebShop's own ``' [SEP] '`` text (the
default observation of both WebShop ids) and the Markov ``"pages"`` lines. The real text shows
neither the open item's id nor the selection, so in that format the expert remembers what it
clicked.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from dreamgym_env.envs.webshop.catalog import TITLE_ATTRIBUTES
from dreamgym_env.envs.webshop.goal import Goal
from dreamgym_env.envs.webshop.matching import phrase_in_tokens, phrases_match, tokens
from dreamgym_env.envs.webshop.pages import BACK_LABEL, BUY_LABEL, NEXT_LABEL, PREV_LABEL, RESULTS_PER_PAGE
from dreamgym_env.envs.webshop.real_text import SEP
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

_RESULT = re.compile(r"^\[(\S+)\] (.*) \| \$([0-9.]+)$")
_OPTION = re.compile(r"^([a-z][a-z ]*): (\[.*\])$")
_VALUE = re.compile(r"\[([^\[\]]+)\]")
_PRICE = re.compile(r"^Price: \$([0-9.]+) \|")
_PAGES_PAGE = re.compile(r"\| page (\d+) of (\d+) \|")
_TEXT_PAGE = re.compile(r"^Page (\d+) \(Total results: (\d+)\)$")
SETTLE_AFTER_STEPS = 11
"""After this many actions in an episode the expert stops looking and buys the closest item, so
that it buys within WebShop's 15 steps."""
ANY_GROUP = ""
"""The group of every offered value where the page does not say which value is in which group."""


def goal_query(goal: Goal) -> str:
    """The search query the expert types: product type, wanted attributes and option values."""
    return " ".join((goal.product_type, *goal.attributes, *goal.options.values()))


@dataclass
class PageView:
    """What the expert reads off a page, in either format."""

    kind: str
    rows: list[tuple[str, str, float]] = field(default_factory=list)
    has_prev: bool = False
    has_next: bool = False
    item: str = ""
    title: str = ""
    price: float = math.inf
    offered: dict[str, list[str]] = field(default_factory=dict)
    selected: dict[str, str] | None = None
    """``None`` where the page does not show the selection."""
    features: list[str] = field(default_factory=list)


def view_of_pages(observation: str) -> PageView:
    """Read a page of the ``"pages"`` format."""
    lines = observation.split("\n")
    header = lines[0]
    if header == "WebShop | search":
        return PageView("search")
    if header.startswith("WebShop | results"):
        navigation = lines[2] if len(lines) > 2 else ""
        rows = [(i, t, float(p)) for i, t, p in (m.groups() for m in map(_RESULT.match, lines[3:]) if m)]
        counter = _PAGES_PAGE.search(header)
        has_next = counter is not None and int(counter.group(1)) < int(counter.group(2))
        return PageView("results", rows, f"[{PREV_LABEL}]" in navigation, has_next)
    if header.startswith("WebShop | done"):
        return PageView("done")
    kind, item = header.split()[2:4] if len(header.split()) > 3 else ("", "")
    if kind == "item":
        price = next((m for m in map(_PRICE.match, lines) if m), None)
        selected_line = next((line for line in lines if line.startswith("Selected: ")), "Selected: none")
        return PageView(
            "item",
            item=item,
            title=lines[3] if len(lines) > 3 else "",
            price=float(price.group(1)) if price else math.inf,
            offered={m.group(1): _VALUE.findall(m.group(2)) for m in map(_OPTION.match, lines) if m},
            selected={p.partition("=")[0]: p.partition("=")[2] for p in selected_line[10:].split(", ")},
        )
    kind = kind if kind in ("description", "features", "reviews") else "unknown"  # left with < Prev
    return PageView(kind, item=item, features=[line[2:] for line in lines if line.startswith("- ")])


def view_of_text(observation: str, opened: str, last_click: str) -> PageView:
    """Read a page of WebShop's text; ``opened`` is the item last clicked, ``last_click`` the last label."""
    elements = observation.split(SEP)
    if elements[0] == "WebShop":
        return PageView("search")
    if elements[0].startswith("Thank you for shopping"):
        return PageView("done")
    counter = next((m for m in map(_TEXT_PAGE.match, elements) if m), None)
    if counter is not None:
        start = elements.index(NEXT_LABEL) + 1
        rows = [
            (elements[i], elements[i + 1], float(elements[i + 2][1:]))
            for i in range(start, len(elements) - 2, 3)
        ]
        page, total = int(counter.group(1)), int(counter.group(2))
        return PageView("results", rows, page > 1, page < math.ceil(total / RESULTS_PER_PAGE))
    at_price = next((i for i, e in enumerate(elements) if e.startswith("Price: $")), None)
    if at_price is not None:
        return PageView(
            "item",
            item=opened,
            title=elements[at_price - 1],
            price=float(elements[at_price][len("Price: $") :]),
            offered={ANY_GROUP: elements[4 : at_price - 1]},
        )
    kind = last_click.lower() if last_click in ("Description", "Features", "Reviews") else "description"
    return PageView(kind, item=opened, features=elements[4:])


class WebShopExpert:
    """Searches with the goal's words, opens the result that fits best, checks it, selects, buys.

    A policy ``(observation, info) -> action`` that uses the goal in ``info["task"].metadata``
    (an oracle's knowledge, as WebShop's own scripted expert has) but sees the shop only
    through its pages. A result may fit when its title names the product type and its price is
    within the bound; of those it opens the one whose title names most wanted attributes. A
    wanted attribute the title does not name is looked up on the item's Features page. An item
    that lacks a wanted attribute or option is remembered and left with ``< Prev``. When no
    result fits, or after :data:`SETTLE_AFTER_STEPS` actions, it buys the closest one.

    It keeps what it has seen for the current task; :meth:`reset` forgets it (a new task id
    does too).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the current episode."""
        self._task_id: str | None = None
        self._rejected: set[str] = set()
        self._checked: set[str] = set()
        self._settle = False
        self._steps = 0
        self._opened = ""
        self._last_click = ""
        self._chosen: dict[str, str] = {}

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        task = info.get("task")
        if not isinstance(task, Task):
            raise ConfigurationError("the WebShop expert needs info['task'] (a Task with a goal)")
        if task.id != self._task_id:
            self.reset()
            self._task_id = task.id
        goal = Goal.of_task(task)
        self._steps += 1
        if self._steps > SETTLE_AFTER_STEPS:
            self._settle = True
        if SEP in observation:
            view = view_of_text(observation, self._opened, self._last_click)
        else:
            view = view_of_pages(observation)
        action = self._act(view, goal)
        self._last_click = action[6:-1] if action.startswith("click[") else ""
        return action

    def _act(self, view: PageView, goal: Goal) -> str:
        if view.kind == "search":
            return f"search[{goal_query(goal)}]"
        if view.kind == "results":
            return self._on_results(view, goal)
        if view.kind == "item":
            return self._on_item(view, goal)
        if view.kind == "done":
            return f"click[{BACK_LABEL}]"  # nothing left to do; any action is fine
        if view.kind == "features":
            self._on_features(view, goal)
        return f"click[{PREV_LABEL}]"  # a sub-page

    # -- results page ------------------------------------------------------------------------
    def _open(self, item: str) -> str:
        self._opened, self._chosen = item, {}
        return f"click[{item}]"

    def _on_results(self, view: PageView, goal: Goal) -> str:
        fresh = [row for row in view.rows if row[0] not in self._rejected]
        plausible = [r for r in fresh if self._plausible(r[1], r[2], goal)]
        if plausible:
            return self._open(max(plausible, key=lambda r: self._named(r[1], goal))[0])  # the first best
        if view.has_next and not self._settle:
            return f"click[{NEXT_LABEL}]"
        if fresh:
            self._settle = True
            return self._open(max(fresh, key=lambda r: self._closeness(r[1], r[2], goal))[0])
        if view.has_prev:
            return f"click[{PREV_LABEL}]"
        self._settle = True
        return self._open(view.rows[0][0]) if view.rows else f"click[{BACK_LABEL}]"

    @classmethod
    def _plausible(cls, title: str, price: float, goal: Goal) -> bool:
        """Of the type, within the bound, and able to have the wanted attributes its title does not name.

        A title lists at most :data:`~dreamgym_env.envs.webshop.catalog.TITLE_ATTRIBUTES` attributes
        after its dash; one that lists fewer lists them all.
        """
        if price > goal.price_upper or not phrase_in_tokens(goal.product_type, tokens(title)):
            return False
        listed = title.rpartition(" - ")[2].count(",") + 1
        return listed >= TITLE_ATTRIBUTES or cls._named(title, goal) == len(goal.attributes)

    @staticmethod
    def _named(title: str, goal: Goal) -> int:
        words = tokens(title)
        return sum(phrase_in_tokens(a, words) for a in goal.attributes)

    @staticmethod
    def _closeness(title: str, price: float, goal: Goal) -> float:
        words = tokens(title)
        matched = sum(phrase_in_tokens(a, words) for a in goal.attributes)
        return 3 * phrase_in_tokens(goal.product_type, words) + matched + (price <= goal.price_upper)

    # -- item page ---------------------------------------------------------------------------
    def _on_item(self, view: PageView, goal: Goal) -> str:
        selected = self._chosen if view.selected is None else view.selected
        wanted: list[tuple[str, str]] = []
        complete = True
        for group, value in goal.options.items():
            offered = view.offered.get(group, view.offered.get(ANY_GROUP, []))
            label = next((v for v in offered if phrases_match(v, value)), None)
            if label is None:
                complete = False
            elif not phrases_match(selected.get(group, ""), value):
                wanted.append((group, label))
        if not self._settle:
            if view.item in self._rejected or not (
                complete and self._plausible(view.title, view.price, goal)
            ):
                self._rejected.add(view.item)
                return f"click[{PREV_LABEL}]"
            if self._named(view.title, goal) < len(goal.attributes) and view.item not in self._checked:
                return "click[Features]"
        if not wanted:
            return f"click[{BUY_LABEL}]"
        group, label = wanted[0]
        self._chosen[group] = label
        return f"click[{label}]"

    # -- features page -----------------------------------------------------------------------
    def _on_features(self, view: PageView, goal: Goal) -> None:
        """Check the wanted attributes against the item's features; remember the verdict."""
        if all(any(phrases_match(a, f) for f in view.features) for a in goal.attributes):
            self._checked.add(view.item)
        else:
            self._rejected.add(view.item)
