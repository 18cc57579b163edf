"""WebShop goals and WebShop's reward of a purchase against one.

The reward reimplements ``get_reward`` of WebShop's ``web_agent_site/engine/goal.py``
(princeton-nlp/WebShop at commit 64fa2a5), quirks included:

* **type** (``get_type_reward``): ``query_match`` (same search query), ``category_match`` (at
  least two common parts of the ``' › '`` breadcrumb) and ``title_score``, the share of the
  target title's nouns that the bought title's nouns contain (0.2 when the target has none).
  ``r_type`` is 1, or 0.5 when none of ``query_match``, ``category_match``, ``title_score > 0.2``
  holds; then 0.1 when ``title_score < 0.1`` and 0 when it is 0.
* **attributes** (``get_attribute_reward``): a goal attribute counts when thefuzz's
  ``token_set_ratio`` with one of the product's attributes is above 85, or it is a substring
  of the lower-cased title, bullet points (joined by spaces) or description.
* **options** (``get_option_reward``): every value is reduced to the first name of WebShop's
  colour list it contains (``normalize_color``: "navy blue" and "sky blue" both become "blue"),
  then a goal option counts when ``token_set_ratio`` with a bought option value is above 85
  (so "large" matches "x-large" and "pack of 2" matches "pack of 12").
* **price**: 1 when the product's price is at most ``price_upper``.
* ``reward = r_type x (attributes matched + options matched + price) / (attributes + options + 1)``.

One approximation: WebShop finds nouns with spaCy's ``en_core_web_sm`` tagger (tokens tagged
``NOUN`` or ``PROPN``), whose model is not shipped here. Our titles are title-cased product
names ("Northfield Classic Men's Shirt - Long Sleeve, Slim Fit"), which that tagger marks
almost word for word as nouns or proper nouns, so :func:`title_nouns` keeps every lower-cased
word except function words, the possessive ``'s`` and numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rapidfuzz.fuzz import token_set_ratio
from rapidfuzz.utils import default_process

from dreamgym_env.envs.webshop.catalog import Product, product_category_of, query_of
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

FUZZY_THRESHOLD = 85
"""A fuzzy match needs ``token_set_ratio`` (0-100, rounded as thefuzz rounds it) above this."""
CATEGORY_SEPARATOR = "\u203a"
_COLOR_SET = (
    "alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze "
    "brown burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate "
    "christmas coffee cognac copper coral cranberry cream crystal dark denim eggplant "
    "elephant espresso fuchsia gold granite grape graphite grass gray green grey heather "
    "indigo ivory ivy khaki lavender lemon leopard light lilac lime magenta maroon mauve "
    "merlot midnight mint mocha multicolor mushroom mustard natural navy nude olive orange "
    "peach pewter pink plum purple rainbow red rose royal rust sand sapphire seashell silver "
    "skull slate steel stone stonewash sunflower tan taupe teal tiger turquoise violet "
    "walnut wheat white wine yellow"
)
COLOR_NAMES: tuple[str, ...] = tuple(_COLOR_SET.split())
"""WebShop's ``COLOR_SET`` (``web_agent_site/engine/normalize.py``), in its order: the first one found wins."""
_FUNCTION_WORDS = (
    "a an the and or nor but of for with without in on at to by from into onto over under "
    "up out off as per via vs s"
)
FUNCTION_WORDS: frozenset[str] = frozenset(_FUNCTION_WORDS.split())
"""Words :func:`title_nouns` never counts (determiners, conjunctions, prepositions, the ``'s`` of a possessive)."""
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Goal:
    """What a task asks for; kept in ``Task.metadata["goal"]`` for scoring.

    ``options`` maps an option group's label (``size``, ``color`` ...) to the wanted value.
    ``target_id`` is the product the task was generated from (one product that satisfies it);
    ``name``, ``query`` and ``product_category`` are that product's title, search term and
    breadcrumb, which WebShop's type reward compares with the bought product's (``name`` empty
    when no target is known: then the title score is WebShop's 0.2 for a title without nouns).
    """

    product_type: str
    category: str
    attributes: tuple[str, ...]
    options: Mapping[str, str]
    price_upper: float
    target_id: str = ""
    name: str = ""
    query: str = ""
    product_category: str = ""

    @classmethod
    def of_product(
        cls,
        product: Product,
        attributes: tuple[str, ...],
        options: Mapping[str, str],
        price_upper: float,
    ) -> Goal:
        """A goal whose target is ``product`` (WebShop's goals copy the target's name, query and breadcrumb)."""
        return cls(
            product.product_type,
            product.category,
            attributes,
            options,
            price_upper,
            product.id,
            product.title,
            product.query,
            product.product_category,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "product_type": self.product_type,
            "category": self.category,
            "attributes": list(self.attributes),
            "options": dict(self.options),
            "price_upper": self.price_upper,
            "target_id": self.target_id,
            "name": self.name,
            "query": self.query,
            "product_category": self.product_category,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Goal:
        """The goal of ``data``; a missing query or breadcrumb is the product type's."""
        product_type, category = str(data["product_type"]), str(data["category"])
        return cls(
            product_type=product_type,
            category=category,
            attributes=tuple(data.get("attributes", ())),
            options=dict(data.get("options", {})),
            price_upper=float(data["price_upper"]),
            target_id=str(data.get("target_id", "")),
            name=str(data.get("name", "")),
            query=str(data.get("query") or query_of(product_type)),
            product_category=str(data.get("product_category") or product_category_of(category, product_type)),
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
class Purchase:
    """The facts of a bought product that WebShop's reward reads, and the option values bought."""

    title: str
    query: str
    product_category: str
    attributes: tuple[str, ...]
    bullet_points: tuple[str, ...]
    description: str
    price: float
    options: tuple[str, ...]

    @classmethod
    def of_product(cls, product: Product, selection: Mapping[str, str]) -> Purchase:
        return cls(
            product.title,
            product.query,
            product.product_category,
            product.attributes,
            product.bullet_points,
            product.description,
            product.price,
            tuple(selection.values()),
        )


@dataclass(frozen=True)
class Score:
    """WebShop's reward of a purchase (``value``), with the parts ``get_reward`` computes."""

    value: float
    type_factor: float
    title_score: float
    query_match: bool
    category_match: bool
    matched_attributes: tuple[str, ...]
    matched_options: tuple[str, ...]
    price_ok: bool

    @property
    def won(self) -> bool:
        return self.value >= 1.0 - 1e-9


def title_nouns(title: str) -> list[str]:
    """The words of ``title`` that count as nouns (the module docstring says why this rule)."""
    return [w for w in _WORD.findall(title.lower()) if w not in FUNCTION_WORDS and not w.isdigit()]


@lru_cache(maxsize=262_144)
def fuzzy_score(a: str, b: str) -> int:
    """The ``token_set_ratio`` of thefuzz: lower case, non-alphanumerics as spaces, rounded to an integer."""
    return round(token_set_ratio(a, b, processor=default_process))


def normalize_color(value: str) -> str:
    """WebShop's ``normalize_color``: the first colour name contained in ``value``, else ``value``."""
    return next((color for color in COLOR_NAMES if color in value), value)


def _breadcrumb(text: str) -> set[str]:
    return {part.strip() for part in text.split(CATEGORY_SEPARATOR)}


def type_reward(purchase: Purchase, goal: Goal) -> tuple[float, float, bool, bool]:
    """``get_type_reward``: ``(r_type, title_score, query_match, category_match)``."""
    query_match = purchase.query == goal.query
    category_match = len(_breadcrumb(purchase.product_category) & _breadcrumb(goal.product_category)) >= 2
    wanted = title_nouns(goal.name)
    title_score = len(set(title_nouns(purchase.title)) & set(wanted)) / len(wanted) if wanted else 0.2
    r_type = 1.0 if query_match or category_match or title_score > 0.2 else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type, title_score, query_match, category_match


def has_attribute(purchase: Purchase, attribute: str) -> bool:
    """``get_attribute_reward``'s test of one goal attribute."""
    if any(fuzzy_score(own, attribute) > FUZZY_THRESHOLD for own in purchase.attributes):
        return True
    return (
        attribute in purchase.title.lower()
        or attribute in " ".join(purchase.bullet_points).lower()
        or attribute in purchase.description.lower()
    )


def matched_options(bought: Sequence[str], wanted: Sequence[str]) -> tuple[str, ...]:
    """``get_option_reward``: the wanted values that a bought value matches after colour normalisation."""
    bought_norm = [normalize_color(v) for v in bought]
    return tuple(
        value
        for value in wanted
        if any(fuzzy_score(b, normalize_color(value)) > FUZZY_THRESHOLD for b in bought_norm)
    )


def score(purchase: Purchase, goal: Goal) -> Score:
    """WebShop's ``get_reward`` of ``purchase`` against ``goal`` (see the module docstring)."""
    r_type, title_score, query_match, category_match = type_reward(purchase, goal)
    attributes = tuple(a for a in goal.attributes if has_attribute(purchase, a))
    options = matched_options(purchase.options, tuple(goal.options.values()))
    price_ok = purchase.price <= goal.price_upper
    total = len(goal.attributes) + len(goal.options) + 1
    value = r_type * (len(attributes) + len(options) + int(price_ok)) / total
    return Score(value, r_type, title_score, query_match, category_match, attributes, options, price_ok)


def score_purchase(product: Product, selection: Mapping[str, str], goal: Goal) -> Score:
    """WebShop's reward for buying ``product`` with the ``selection`` of options (group label -> value)."""
    return score(Purchase.of_product(product, selection), goal)
