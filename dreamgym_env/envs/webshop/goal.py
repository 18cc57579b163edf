"""WebShop goals and the reward formula that scores a purchase against one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dreamgym_env.envs.webshop.catalog import Product
from dreamgym_env.envs.webshop.matching import phrase_in_tokens, phrases_match
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

SAME_CATEGORY_TYPE_SCORE = 0.5
"""Type factor of a product of another type but of the goal's category (0 for another category)."""


@dataclass(frozen=True)
class Goal:
    """What a task asks for; kept in ``Task.metadata["goal"]`` for scoring.

    ``options`` maps an option group's label (``size``, ``color`` ...) to the wanted value.
    ``target_id`` is the product the task was generated from (one product that satisfies it).
    """

    product_type: str
    category: str
    attributes: tuple[str, ...]
    options: Mapping[str, str]
    price_upper: float
    target_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "product_type": self.product_type,
            "category": self.category,
            "attributes": list(self.attributes),
            "options": dict(self.options),
            "price_upper": self.price_upper,
            "target_id": self.target_id,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Goal:
        return cls(
            product_type=str(data["product_type"]),
            category=str(data["category"]),
            attributes=tuple(data.get("attributes", ())),
            options=dict(data.get("options", {})),
            price_upper=float(data["price_upper"]),
            target_id=str(data.get("target_id", "")),
        )

    @classmethod
    def of_task(cls, task: Task) -> Goal:
        """The goal kept in a task's metadata; a task without one cannot be scored."""
        data = task.metadata.get("goal")
        if not isinstance(data, Mapping):
            raise ConfigurationError(
                f"task {task.id!r} has no WebShop goal in metadata['goal']; the reference env scores "
                "purchases against it (use a task of WebShopDomain().tasks(...))"
            )
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"task {task.id!r} has a malformed goal: {exc!r}") from exc


@dataclass(frozen=True)
class Score:
    """WebShop's reward of a purchase, with its parts."""

    value: float
    type_factor: float
    matched_attributes: tuple[str, ...] = ()
    matched_options: tuple[str, ...] = ()
    price_ok: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def won(self) -> bool:
        return self.value >= 1.0 - 1e-9


def _type_factor(product_type: str, category: str, goal: Goal) -> float:
    if phrases_match(product_type, goal.product_type):
        return 1.0
    return SAME_CATEGORY_TYPE_SCORE if category == goal.category else 0.0


def type_factor(product: Product, goal: Goal) -> float:
    """1 for the goal's product type, :data:`SAME_CATEGORY_TYPE_SCORE` within its category, else 0."""
    return _type_factor(product.product_type, product.category, goal)


def _has_attribute(attributes: Sequence[str], title_tokens: tuple[str, ...], attribute: str) -> bool:
    return any(phrases_match(attribute, a) for a in attributes) or phrase_in_tokens(attribute, title_tokens)


def has_attribute(product: Product, attribute: str) -> bool:
    """Whether ``product`` has ``attribute``: one of its attributes, or words of its title."""
    return _has_attribute(product.attributes, product.title_tokens, attribute)


def score_facts(
    *,
    product_type: str,
    category: str,
    attributes: Sequence[str],
    title_tokens: tuple[str, ...],
    price: float,
    selected: Sequence[str],
    goal: Goal,
) -> Score:
    """WebShop's reward of a purchase described by its facts (see :func:`score_purchase`).

    ``title_tokens`` is the product title's :func:`~dreamgym_env.envs.webshop.matching.tokens`;
    ``selected`` the option values bought with.
    """
    factor = _type_factor(product_type, category, goal)
    matched = tuple(a for a in goal.attributes if _has_attribute(attributes, title_tokens, a))
    options = tuple(v for v in goal.options.values() if any(phrases_match(v, s) for s in selected))
    price_ok = price <= goal.price_upper + 1e-9
    total = len(goal.attributes) + len(goal.options) + 1
    value = factor * (len(matched) + len(options) + int(price_ok)) / total
    return Score(round(value, 6), factor, matched, options, price_ok)


def score_purchase(product: Product, selection: Mapping[str, str], goal: Goal) -> Score:
    """WebShop's reward for buying ``product`` with the ``selection`` of options.

    ``type factor x (matched attributes + matched options + [price <= bound]) /
    (attributes + options + 1)``; a wanted option counts when any selected value matches it.
    """
    return score_facts(
        product_type=product.product_type,
        category=product.category,
        attributes=product.attributes,
        title_tokens=product.title_tokens,
        price=product.price,
        selected=list(selection.values()),
        goal=goal,
    )
