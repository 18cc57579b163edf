"""The WebArena expert: per-template scripts that act on the elements they find on the page.

A script is a list of steps (click the element of a role and name, type into a field, read
the answer and stop). The goal comes from ``info["task"].metadata`` (template and slot
values, an oracle's knowledge, as WebArena's human demonstrations have); element ids always
come from the observation, so the expert works in either observation mode. When a step's
element is not in the viewport it scrolls down, up to :data:`MAX_SCROLLS` times.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dreamgym_env.envs.webarena.grammar import NOT_APPLICABLE
from dreamgym_env.envs.webarena.state import Element, parse_state
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

MAX_SCROLLS = 8
Reader = Callable[[list[Element]], str]


@dataclass(frozen=True)
class Click:
    """Click the element of ``role`` named ``name`` (``prefix``: whose name starts so), the first after ``after``."""

    role: str
    name: str
    prefix: bool = False
    after: str = ""


@dataclass(frozen=True)
class Type:
    name: str
    text: str
    enter: bool = True


@dataclass(frozen=True)
class Answer:
    read: Reader


Step = Click | Type | Answer


def text_matching(pattern: str) -> Reader:
    """The first group of the first element name matching ``pattern``."""
    compiled = re.compile(pattern)

    def read(elements: list[Element]) -> str:
        for e in elements:
            match = compiled.search(e.name)
            if match:
                return match.group(1)
        return ""

    return read


def ranked(n: int) -> Reader:
    """The product names after ``Rank 1`` ... ``Rank n`` of the bestsellers report."""

    def read(elements: list[Element]) -> str:
        names = [
            elements[i + 1].name for i, e in enumerate(elements[:-1]) if re.fullmatch(r"Rank \d+", e.name)
        ]
        return ", ".join(names[:n])

    return read


def nothing(elements: list[Element]) -> str:
    return ""


def _shop(product: str) -> list[Step]:
    return [Type("Search entire store here...", product), Click("link", product)]


def _admin_find(section: str, query: str) -> list[Step]:
    return [Click("link", section), Type("Search by keyword", query)]


def _forum(slots: dict[str, str]) -> list[Step]:
    return [Click("link", "Forums"), Click("link", slots["forum"])]


def _post(slots: dict[str, str]) -> list[Step]:
    return [*_forum(slots), Click("link", slots["post"])]


def _project(slots: dict[str, str]) -> list[Step]:
    return [Type("Filter by name", slots["project"]), Click("link", slots["project"])]


def _route(slots: dict[str, str], mode: str) -> list[Step]:
    steps: list[Step] = [
        Click("link", "Find directions between two points"),
        Type("From", slots["start"], False),
        Type("To", slots["end"], False),
        Click("button", "Go"),
    ]
    return [*steps, Click("link", mode)] if mode != "Car" else steps


PLANS: dict[str, Callable[[dict[str, str]], list[Step]]] = {
    "shopping.price": lambda s: [*_shop(s["product"]), Answer(text_matching(r"^Price: \$([\d.]+)$"))],
    "shopping.review_count": lambda s: [*_shop(s["product"]), Answer(text_matching(r"^(\d+) Reviews$"))],
    "shopping.rating": lambda s: [*_shop(s["product"]), Answer(text_matching(r"^Rating: (\d+)%$"))],
    "shopping.price_unavailable": lambda s: [
        Type("Search entire store here...", s["product"]),
        Answer(lambda _: NOT_APPLICABLE),
    ],
    "shopping.add_to_cart": lambda s: [*_shop(s["product"]), Click("button", "Add to Cart")],
    "shopping.add_qty": lambda s: [
        *_shop(s["product"]),
        Type("Qty", s["qty"], False),
        Click("button", "Add to Cart"),
    ],
    "shopping.buy": lambda s: [
        *_shop(s["product"]),
        Click("button", "Add to Cart"),
        Click("link", "My Cart", True),
        Click("link", "Proceed to Checkout"),
        Click("button", "Place Order"),
    ],
    "shopping.order_total": lambda s: [
        Click("link", "My Orders"),
        Click("link", "View Order", after=f"Order # {s['order']}"),
        Answer(text_matching(r"^Grand Total: \$([\d.]+)$")),
    ],
    "shopping.order_status": lambda s: [
        Click("link", "My Orders"),
        Click("link", "View Order", after=f"Order # {s['order']}"),
        Answer(text_matching(r"^Status: (.+)$")),
    ],
    "shopping.category": lambda s: [Click("link", s["category"]), Answer(nothing)],
    "shopping_admin.set_status": lambda s: [
        *_admin_find("Orders", s["order"]),
        Click("link", f"Order #{s['order']}"),
        Click("combobox", "Status"),
        Click("option", s["status"]),
        Click("button", "Update Status"),
    ],
    "shopping_admin.customer_orders": lambda s: [
        *_admin_find("Orders", s["customer"]),
        Answer(text_matching(r"^(\d+) records found$")),
    ],
    "shopping_admin.customer_email": lambda s: [
        *_admin_find("Customers", s["customer"]),
        Click("link", s["customer"]),
        Answer(text_matching(r"^Email: (.+)$")),
    ],
    "shopping_admin.order_total": lambda s: [
        *_admin_find("Orders", s["order"]),
        Click("link", f"Order #{s['order']}"),
        Answer(text_matching(r"^Grand Total: \$([\d.]+)$")),
    ],
    "shopping_admin.bestseller_month": lambda s: [
        Click("link", "Reports"),
        Click("link", s["year"]),
        Click("link", s["month"]),
        Answer(ranked(1)),
    ],
    "shopping_admin.bestsellers_year": lambda s: [
        Click("link", "Reports"),
        Click("link", s["year"]),
        Answer(ranked(int(s["n"]))),
    ],
    "shopping_admin.set_price": lambda s: [
        *_admin_find("Products", s["product"]),
        Click("link", s["product"]),
        Type("Price", s["price"], False),
        Click("button", "Save"),
    ],
    "reddit.subscribe": lambda s: [*_forum(s), Click("button", "Subscribe")],
    "reddit.unsubscribe": lambda s: [*_forum(s), Click("button", "Unsubscribe")],
    "reddit.upvote": lambda s: [*_post(s), Click("button", "Upvote")],
    "reddit.downvote": lambda s: [*_post(s), Click("button", "Downvote")],
    "reddit.comment": lambda s: [*_post(s), Type("Comment", s["comment"], False), Click("button", "Post")],
    "reddit.new_post": lambda s: [
        *_forum(s),
        Click("link", "Submit a new post"),
        Type("Title", s["title"], False),
        Click("button", "Create submission"),
    ],
    "reddit.forum_page": lambda s: [*_forum(s), Answer(nothing)],
    "reddit.comment_count": lambda s: [*_post(s), Answer(text_matching(r"^(\d+) comments$"))],
    "reddit.author": lambda s: [*_post(s), Answer(text_matching(r"^Submitted by (\S+) in "))],
    "gitlab.star": lambda s: [*_project(s), Click("button", "Star")],
    "gitlab.unstar": lambda s: [*_project(s), Click("button", "Unstar")],
    "gitlab.new_issue": lambda s: [
        *_project(s),
        Click("link", "Issues"),
        Click("link", "New issue"),
        Type("Title", s["title"], False),
        Click("button", "Create issue"),
    ],
    "gitlab.add_member": lambda s: [
        *_project(s),
        Click("link", "Members"),
        Type("Username or name", s["user"], False),
        Click("combobox", "Role"),
        Click("option", s["role"]),
        Click("button", "Invite"),
    ],
    "gitlab.close_issue": lambda s: [
        *_project(s),
        Click("link", "Issues"),
        Click("link", s["issue"]),
        Click("button", "Close issue"),
    ],
    "gitlab.open_issues": lambda s: [
        *_project(s),
        Click("link", "Issues"),
        Answer(text_matching(r"^Open (\d+)$")),
    ],
    "gitlab.issues_page": lambda s: [*_project(s), Click("link", "Issues"), Answer(nothing)],
    "gitlab.stars": lambda s: [*_project(s), Answer(text_matching(r"^Stars: (\d+)$"))],
    "gitlab.mr_author": lambda s: [
        *_project(s),
        Click("link", "Merge requests"),
        Click("link", "All", True),
        Click("link", s["mr"]),
        Answer(text_matching(r"created by (\S+)$")),
    ],
    "map.drive_time": lambda s: [*_route(s, "Car"), Answer(text_matching(r"Time: (\d+:\d\d)\.$"))],
    "map.walk_time": lambda s: [*_route(s, "Foot"), Answer(text_matching(r"Time: (\d+:\d\d)\.$"))],
    "map.bike_time": lambda s: [*_route(s, "Bicycle"), Answer(text_matching(r"Time: (\d+:\d\d)\.$"))],
    "map.distance": lambda s: [*_route(s, "Car"), Answer(text_matching(r"^Distance: ([\d.]+)km\."))],
    "map.directions": lambda s: [*_route(s, "Car"), Answer(nothing)],
    "map.address": lambda s: [
        Type("Search", s["place"]),
        Click("link", s["place"]),
        Answer(text_matching(r"^Address: (.+)$")),
    ],
}


class WebArenaExpert:
    """Follows the script of the task's template, one step an action (see the module docstring).

    A policy ``(observation, info) -> action``. It keeps its place in the script for the current
    task; :meth:`reset` forgets it (a new task id does too). A task without a known template
    (a free instruction) gets ``stop []``.
    """

    def __init__(self) -> None:
        self._task_id: str | None = None
        self._plan: list[Step] = []
        self._position = 0
        self._scrolls = 0

    def reset(self) -> None:
        """Forget the current episode."""
        self._task_id, self._plan, self._position, self._scrolls = None, [], 0, 0

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        task = info.get("task")
        if not isinstance(task, Task):
            raise ConfigurationError("the WebArena expert needs info['task'] (a Task with a template)")
        if task.id != self._task_id:
            self.reset()
            self._task_id = task.id
            plan = PLANS.get(str(task.metadata.get("template")))
            self._plan = plan(dict(task.metadata.get("slots", {}))) if plan else [Answer(nothing)]
        if self._position >= len(self._plan):
            return "stop []"
        step = self._plan[self._position]
        elements = parse_state(observation).elements
        if isinstance(step, Answer):
            self._position += 1
            return f"stop [{step.read(elements)}]"
        target = self._find(step, elements)
        if target is None:
            if self._scrolls < MAX_SCROLLS:
                self._scrolls += 1
                return "scroll [down]"
            self._position = len(self._plan)
            return "stop []"
        self._position += 1
        self._scrolls = 0
        if isinstance(step, Type):
            return f"type [{target}] [{step.text}] [{int(step.enter)}]"
        return f"click [{target}]"

    @staticmethod
    def _find(step: Click | Type, elements: list[Element]) -> int | None:
        if isinstance(step, Type):
            return next(
                (e.id for e in elements if e.role in ("textbox", "searchbox") and e.name == step.name), None
            )
        start = 0
        if step.after:
            start = next((i for i, e in enumerate(elements) if e.name == step.after), -1) + 1
            if start == 0:
                return None
        for e in elements[start:]:
            if e.role == step.role and (e.name.startswith(step.name) if step.prefix else e.name == step.name):
                return e.id
        return None
