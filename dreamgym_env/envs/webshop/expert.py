"""The WebShop expert: a scripted policy that reads the pages and the task's goal."""

from __future__ import annotations

import re
from typing import Any

from dreamgym_env.envs.webshop.catalog import TITLE_ATTRIBUTES
from dreamgym_env.envs.webshop.goal import Goal
from dreamgym_env.envs.webshop.matching import phrase_in_tokens, phrases_match, tokens
from dreamgym_env.envs.webshop.pages import BACK_LABEL, BUY_LABEL, NEXT_LABEL, PREV_LABEL
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

_RESULT = re.compile(r"^\[(\S+)\] (.*) \| \$([0-9.]+)$")
_OPTION = re.compile(r"^([a-z][a-z ]*): (\[.*\])$")
_VALUE = re.compile(r"\[([^\[\]]+)\]")
_PRICE = re.compile(r"^Price: \$([0-9.]+) \|")
SETTLE_AFTER_STEPS = 11
"""After this many actions in an episode the expert stops looking and buys the closest item, so
that it buys within WebShop's 15 steps."""


def goal_query(goal: Goal) -> str:
    """The search query the expert types: product type, wanted attributes and option values."""
    return " ".join((goal.product_type, *goal.attributes, *goal.options.values()))


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
        self._task_id: str | None = None
        self._rejected: set[str] = set()
        self._checked: set[str] = set()
        self._settle = False
        self._steps = 0

    def reset(self) -> None:
        """Forget the current episode."""
        self._task_id, self._rejected, self._checked, self._settle = None, set(), set(), False
        self._steps = 0

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
        lines = observation.split("\n")
        header = lines[0] if lines else ""
        if header == "WebShop | search":
            return f"search[{goal_query(goal)}]"
        if header.startswith("WebShop | results"):
            return self._on_results(lines, goal)
        if header.startswith("WebShop | item"):
            return self._on_item(header, lines, goal)
        if header.startswith("WebShop | done"):
            return f"click[{BACK_LABEL}]"  # nothing left to do; any action is fine
        if header.startswith("WebShop | features"):
            self._on_features(header, lines, goal)
        return f"click[{PREV_LABEL}]"  # a sub-page

    # -- results page ------------------------------------------------------------------------
    def _on_results(self, lines: list[str], goal: Goal) -> str:
        results = [m.groups() for m in map(_RESULT.match, lines[3:]) if m]
        fresh = [(item, title, float(price)) for item, title, price in results if item not in self._rejected]
        plausible = [r for r in fresh if self._plausible(r[1], r[2], goal)]
        if plausible:
            best = max(plausible, key=lambda r: self._named(r[1], goal))  # the first of the best
            return f"click[{best[0]}]"
        navigation = lines[2] if len(lines) > 2 else ""
        if f"[{NEXT_LABEL}]" in navigation and not self._settle:
            return f"click[{NEXT_LABEL}]"
        if fresh:
            self._settle = True
            best = max(fresh, key=lambda r: self._closeness(r[1], r[2], goal))
            return f"click[{best[0]}]"
        if f"[{PREV_LABEL}]" in navigation:
            return f"click[{PREV_LABEL}]"
        self._settle = True
        return f"click[{results[0][0]}]" if results else f"click[{BACK_LABEL}]"

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
    def _on_item(self, header: str, lines: list[str], goal: Goal) -> str:
        item = header.split()[3]
        title = lines[3] if len(lines) > 3 else ""
        price_match = next((m for m in map(_PRICE.match, lines) if m), None)
        price = float(price_match.group(1)) if price_match else float("inf")
        offered = {m.group(1): _VALUE.findall(m.group(2)) for m in map(_OPTION.match, lines) if m}
        selected_line = next((line for line in lines if line.startswith("Selected: ")), "Selected: none")
        selected = {part.partition("=")[0]: part.partition("=")[2] for part in selected_line[10:].split(", ")}
        wanted: list[str] = []
        complete = True
        for group, value in goal.options.items():
            label = next((v for v in offered.get(group, ()) if phrases_match(v, value)), None)
            if label is None:
                complete = False
            elif not phrases_match(selected.get(group, ""), value):
                wanted.append(label)
        if not self._settle:
            if item in self._rejected or not (complete and self._plausible(title, price, goal)):
                self._rejected.add(item)
                return f"click[{PREV_LABEL}]"
            if self._named(title, goal) < len(goal.attributes) and item not in self._checked:
                return "click[Features]"
        return f"click[{wanted[0]}]" if wanted else f"click[{BUY_LABEL}]"

    # -- features page -----------------------------------------------------------------------
    def _on_features(self, header: str, lines: list[str], goal: Goal) -> None:
        """Check the wanted attributes against the item's features; remember the verdict."""
        item = header.split()[3]
        features = [line[2:] for line in lines if line.startswith("- ")]
        if all(any(phrases_match(a, f) for f in features) for a in goal.attributes):
            self._checked.add(item)
        else:
            self._rejected.add(item)
