"""The WebShop expert: a scripted policy that reads the pages and the task's goal."""

from __future__ import annotations

import re
from typing import Any

from dreamgym_env.envs.webshop.goal import Goal
from dreamgym_env.envs.webshop.matching import phrase_in_tokens, phrases_match, tokens
from dreamgym_env.envs.webshop.pages import BACK_LABEL, BUY_LABEL, NEXT_LABEL, PREV_LABEL
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

_RESULT = re.compile(r"^\[(\S+)\] (.*) \| \$([0-9.]+)$")
_OPTION = re.compile(r"^([a-z][a-z ]*): (\[.*\])$")
_VALUE = re.compile(r"\[([^\[\]]+)\]")
_PRICE = re.compile(r"^Price: \$([0-9.]+) \|")


def goal_query(goal: Goal) -> str:
    """The search query the expert types: product type, wanted attributes and option values."""
    return " ".join((goal.product_type, *goal.attributes, *goal.options.values()))


class WebShopExpert:
    """Searches with the goal's words, opens the first result that fits, selects, buys.

    A policy ``(observation, info) -> action`` that uses the goal in ``info["task"].metadata``
    (an oracle's knowledge, as WebShop's own scripted expert has) but sees the shop only
    through its pages. A result fits when its title names the product type and every wanted
    attribute and its price is within the bound; an opened item that lacks a wanted option is
    remembered and left with ``< Prev``. When no result fits, it buys the closest one.

    It keeps what it has seen for the current task; :meth:`reset` forgets it (a new task id
    does too).
    """

    def __init__(self) -> None:
        self._task_id: str | None = None
        self._rejected: set[str] = set()
        self._settle = False

    def reset(self) -> None:
        """Forget the current episode."""
        self._task_id, self._rejected, self._settle = None, set(), False

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        task = info.get("task")
        if not isinstance(task, Task):
            raise ConfigurationError("the WebShop expert needs info['task'] (a Task with a goal)")
        if task.id != self._task_id:
            self.reset()
            self._task_id = task.id
        goal = Goal.of_task(task)
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
        return f"click[{PREV_LABEL}]"  # a sub-page

    # -- results page ------------------------------------------------------------------------
    def _on_results(self, lines: list[str], goal: Goal) -> str:
        results = [m.groups() for m in map(_RESULT.match, lines[3:]) if m]
        fresh = [(item, title, float(price)) for item, title, price in results if item not in self._rejected]
        for item, title, price in fresh:
            if self._fits(title, price, goal):
                return f"click[{item}]"
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

    @staticmethod
    def _fits(title: str, price: float, goal: Goal) -> bool:
        words = tokens(title)
        return (
            price <= goal.price_upper
            and phrase_in_tokens(goal.product_type, words)
            and all(phrase_in_tokens(a, words) for a in goal.attributes)
        )

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
        if not self._settle and not (complete and self._fits(title, price, goal)):
            self._rejected.add(item)
            return f"click[{PREV_LABEL}]"
        return f"click[{wanted[0]}]" if wanted else f"click[{BUY_LABEL}]"
