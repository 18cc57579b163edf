"""How the curriculum writes and checks new WebShop tasks.

A candidate is an instruction with its goal (product type, attributes, options, price bound).
It is accepted when the goal parses, names only what the shop has, is stated by the
instruction, and is **feasible**: some product of the task's catalog wins it (WebShop's reward
1.0, :func:`~dreamgym_env.envs.webshop.goal.score_purchase`) when bought with the wanted options.
That product becomes the goal's ``target_id``. The seed context shows the model the seed's goal
and, for its product type, the attributes and option values the shop offers, so that it can
write variations that exist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from dreamgym_env.envs.webshop import vocabulary as V
from dreamgym_env.envs.webshop.catalog import (
    DEFAULT_CATALOG_SEED,
    DEFAULT_NUM_PRODUCTS,
    Product,
    load_catalog,
)
from dreamgym_env.envs.webshop.goal import Goal, score_purchase
from dreamgym_env.envs.webshop.matching import phrase_in_text, phrases_match
from dreamgym_env.envs.webshop.pages import search_page
from dreamgym_env.errors import ConfigurationError, excerpt
from dreamgym_env.task_variations import INSTRUCTION_PROPERTY, Rejection, TaskVariations, candidate_object
from dreamgym_env.types import Task

if TYPE_CHECKING:
    from dreamgym_env.domain import Domain

MAX_GOAL_ATTRIBUTES = 5
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_TYPES = {t.name: t for t in V.PRODUCT_TYPES}


def _labels(kind: V.ProductType) -> dict[str, V.OptionGroup]:
    return {V.OPTION_GROUPS[key].label: V.OPTION_GROUPS[key] for key in kind.groups}


def _canonical(phrase: str, known: Sequence[str]) -> str | None:
    return next((k for k in known if phrases_match(phrase, k)), None)


def _catalog_of(task: Task) -> tuple[int, int]:
    return int(task.metadata.get("catalog_seed", DEFAULT_CATALOG_SEED)), int(
        task.metadata.get("num_products", DEFAULT_NUM_PRODUCTS)
    )


def winning_selection(product: Product, goal: Goal) -> dict[str, str] | None:
    """The option values of ``product`` that match the goal's options, or ``None`` if one is missing."""
    selection: dict[str, str] = {}
    for label, wanted in goal.options.items():
        choice = product.option(label)
        value = next((v for v in choice.values if phrases_match(wanted, v)), None) if choice else None
        if value is None:
            return None
        selection[label] = value
    return selection


class WebShopTaskVariations(TaskVariations):
    """Candidates with a goal, checked against the vocabulary and the catalog (see the module docstring)."""

    def __init__(self, domain: Domain) -> None:
        super().__init__(domain)
        self._by_type: dict[tuple[int, int, str], list[Product]] = {}

    @cached_property
    def _describe(self) -> str:
        by_category: dict[str, list[str]] = {}
        for kind in V.PRODUCT_TYPES:
            by_category.setdefault(kind.category, []).append(kind.name)
        types = "\n".join(f"- {category}: {', '.join(names)}" for category, names in by_category.items())
        return (
            "An online shop (WebShop). A task asks the agent to find and buy a product of one "
            "product type that has some attributes, with one wanted value for some of the "
            "type's option groups (size, color, flavor ...), within a price bound. The shop "
            f"sells these product types:\n{types}"
        )

    def describe(self) -> str:
        return self._describe

    def guidance(self) -> str:
        return (
            "Each new task varies one seed task. Make it harder (more wanted attributes, a lower "
            "price bound that some product still meets, other option values) or different (a "
            "related product type of the same category, with that type's attributes and "
            "options). Use only attributes and option values that the seed context lists for "
            "the product type you ask for. The instruction must name the product type, every "
            'attribute and option value of the goal and the price bound (e.g. "price lower than '
            '40.00 dollars"). Never repeat a seed or another task.'
        )

    def seed_context(self, task: Task) -> str:
        try:
            goal = Goal.of_task(task)
        except ConfigurationError:
            return ""
        kind = _TYPES.get(goal.product_type)
        lines = [
            f"Goal: product type {goal.product_type!r} (category {goal.category}); attributes "
            f"{list(goal.attributes)}; options {dict(goal.options)}; price lower than {goal.price_upper:.2f} dollars",
        ]
        if kind is not None:
            lines.append(f"The shop's {kind.name!r} products have attributes: {', '.join(kind.attributes)}")
            for label, group in _labels(kind).items():
                lines.append(f"  option {label!r}: {', '.join(group.values)}")
            low, high = kind.price
            lines.append(f"  prices from about {low:.0f} to {high:.0f} dollars")
        return "\n".join(lines)

    def candidate_schema(self) -> dict[str, Any]:
        goal = {
            "type": "object",
            "properties": {
                "product_type": {"type": "string"},
                "attributes": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_GOAL_ATTRIBUTES},
                "options": {"type": "object", "additionalProperties": {"type": "string"}},
                "price_upper": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["product_type", "attributes", "options", "price_upper"],
            "additionalProperties": False,
        }
        return candidate_object({"instruction": INSTRUCTION_PROPERTY, "goal": goal}, ["instruction", "goal"])

    def fingerprint(self, task: Task) -> str:
        """The goal (type, attributes, options, price), however the instruction words it."""
        try:
            goal = Goal.of_task(task)
        except ConfigurationError:
            return super().fingerprint(task)
        attributes = ",".join(sorted(a.lower() for a in goal.attributes))
        options = ",".join(sorted(f"{k.lower()}={v.lower()}" for k, v in goal.options.items()))
        return f"goal|{goal.product_type}|{attributes}|{options}|{goal.price_upper:.2f}|{_catalog_of(task)}"

    # -- building ------------------------------------------------------------------------------
    def build(self, candidate: Mapping[str, Any], parent: Task) -> Task | Rejection:
        instruction = self.instruction_of(candidate, parent)
        if isinstance(instruction, Rejection):
            return instruction
        goal = self._parse_goal(candidate.get("goal"), parent)
        if isinstance(goal, Rejection):
            return goal
        unstated = self._unstated(instruction, goal)
        if unstated:
            return Rejection(
                "malformed",
                f"the instruction does not state {', '.join(unstated)}",
                parent.id,
                excerpt(instruction),
            )
        seed, size = _catalog_of(parent)
        witness = self._witness(goal, seed, size)
        if isinstance(witness, str):
            return Rejection("infeasible", witness, parent.id, excerpt(instruction))
        goal = Goal.of_product(witness, goal.attributes, goal.options, goal.price_upper)
        metadata = {"goal": goal.to_dict(), "catalog_seed": seed, "num_products": size}
        return self.new_task(parent, instruction, search_page(instruction), metadata)

    def _parse_goal(self, data: Any, parent: Task) -> Goal | Rejection:
        def malformed(reason: str) -> Rejection:
            return Rejection("malformed", reason, parent.id, excerpt(str(data)))

        def infeasible(reason: str) -> Rejection:
            return Rejection("infeasible", reason, parent.id, excerpt(str(data)))

        if not isinstance(data, Mapping):
            return malformed("no goal object")
        product_type, attributes = data.get("product_type"), data.get("attributes")
        options, price = data.get("options", {}), data.get("price_upper")
        if not isinstance(product_type, str) or not product_type.strip():
            return malformed("goal.product_type is not a string")
        if not isinstance(attributes, list) or not all(isinstance(a, str) and a.strip() for a in attributes):
            return malformed("goal.attributes is not a list of strings")
        if not 1 <= len(attributes) <= MAX_GOAL_ATTRIBUTES:
            return malformed(f"goal has {len(attributes)} attributes (1 to {MAX_GOAL_ATTRIBUTES} allowed)")
        if not isinstance(options, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in options.items()
        ):
            return malformed("goal.options is not an object of strings")
        if isinstance(price, bool) or not isinstance(price, (int, float)) or not price > 0:
            return malformed("goal.price_upper is not a positive number")
        name = _canonical(product_type, list(_TYPES))
        if name is None:
            return infeasible(f"the shop sells no product type {product_type!r}")
        kind = _TYPES[name]
        canonical_attributes: list[str] = []
        for attribute in attributes:
            found = _canonical(attribute, kind.attributes)
            if found is None:
                return infeasible(f"no {name!r} has the attribute {attribute!r}")
            if found not in canonical_attributes:
                canonical_attributes.append(found)
        groups = _labels(kind)
        canonical_options: dict[str, str] = {}
        for label, value in options.items():
            group = groups.get(label.strip().lower())
            if group is None:
                return infeasible(f"{name!r} has no option {label!r} (it has {', '.join(groups) or 'none'})")
            found = _canonical(value, group.values)
            if found is None:
                return infeasible(f"{name!r} offers no {group.label} {value!r}")
            canonical_options[group.label] = found
        return Goal.from_dict(
            {
                "product_type": name,
                "category": kind.category,
                "attributes": canonical_attributes,
                "options": canonical_options,
                "price_upper": round(float(price), 2),
            }
        )

    @staticmethod
    def _unstated(instruction: str, goal: Goal) -> list[str]:
        missing = [
            repr(phrase)
            for phrase in (goal.product_type, *goal.attributes, *goal.options.values())
            if not phrase_in_text(phrase, instruction)
        ]
        numbers = [float(n) for n in _NUMBER.findall(instruction)]
        if not any(abs(n - goal.price_upper) < 0.005 for n in numbers):
            missing.append(f"the price bound {goal.price_upper:.2f}")
        return missing

    def _products(self, seed: int, size: int, product_type: str) -> list[Product]:
        key = (seed, size, product_type)
        if key not in self._by_type:
            catalog = load_catalog(seed, size)
            for product in catalog.products:
                self._by_type.setdefault((seed, size, product.product_type), []).append(product)
            for kind in V.PRODUCT_TYPES:
                self._by_type.setdefault((seed, size, kind.name), [])
        return self._by_type[key]

    def _witness(self, goal: Goal, seed: int, size: int) -> Product | str:
        """The first catalog product that wins ``goal``, or why none does."""
        candidates = self._products(seed, size, goal.product_type)
        best, best_value = None, -1.0
        for product in candidates:
            selection = winning_selection(product, goal)
            score = score_purchase(product, selection or {}, goal)
            if selection is not None and score.won:
                return product
            if score.value > best_value:
                best, best_value = product, score.value
        detail = f"; the closest, {best.id}, scores {best_value:.2f}" if best is not None else ""
        return f"no product of the catalog wins this goal ({len(candidates)} {goal.product_type!r} products{detail})"
