"""WebShop tasks: instructions generated from catalog products, with a fixed train/test split."""

from __future__ import annotations

import math
import random
from functools import cache

from dreamgym_env.envs.tasksets import TaskSet
from dreamgym_env.envs.webshop import vocabulary as V
from dreamgym_env.envs.webshop.catalog import (
    DEFAULT_CATALOG_SEED,
    DEFAULT_NUM_PRODUCTS,
    Catalog,
    Product,
    load_catalog,
)
from dreamgym_env.envs.webshop.goal import Goal
from dreamgym_env.envs.webshop.pages import search_page
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

TASKS_PER_PRODUCT = 3
"""Default number of tasks: this many per product (6,000 for the default 2,000 products)."""
TEST_SHARE = 6
"""One task in this many goes to the test split (1,000 of the default 6,000)."""
_TYPES = {t.name: t for t in V.PRODUCT_TYPES}


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _price_bound(price: float, rng: random.Random) -> float:
    raw = price * rng.uniform(1.1, 1.6)
    step = 5 if raw < 30 else 10 if raw < 200 else 50
    return float(math.ceil(raw / step) * step)


def make_goal(product: Product, rng: random.Random) -> Goal:
    """A goal that ``product`` satisfies: some of its attributes, one value per option group."""
    attributes = tuple(rng.sample(product.attributes, rng.randint(1, min(3, len(product.attributes)))))
    options = {o.label: rng.choice(o.values) for o in product.options}
    return Goal.of_product(product, attributes, options, _price_bound(product.price, rng))


def instruction_text(product: Product, goal: Goal, rng: random.Random) -> str:
    """A WebShop-style instruction for ``goal`` (lower case, one sentence)."""
    kind = _TYPES[product.product_type]
    attributes = list(goal.attributes)
    name = kind.name
    article = "some" if kind.plural else ("an" if name[0] in "aeiou" else "a")
    prepositional = any(a.split()[0] in ("with", "for") for a in attributes)
    form = rng.randrange(3)
    if form == 0 and not prepositional:
        core = f"{', '.join(attributes)} {name}"
    elif form == 1 and not prepositional:
        joiner = rng.choice(V.PLURAL_ATTRIBUTE_JOINERS if kind.plural else V.ATTRIBUTE_JOINERS)
        core = f"{name} {joiner.format(a=_join(attributes))}"
    else:
        core = f"{name}, {_join(attributes)}"
    parts = [f"{rng.choice(V.INSTRUCTION_OPENERS)} {article} {core}"]
    for option in product.options:
        group = V.OPTION_GROUPS[option.key]
        parts.append(rng.choice(group.phrases).format(v=goal.options[option.label]))
    parts.append(rng.choice(V.PRICE_PHRASES).format(p=f"{goal.price_upper:.2f}"))
    return ", ".join(parts)


def generate_tasks(catalog: Catalog, num_tasks: int | None = None) -> TaskSet:
    """``num_tasks`` distinct tasks of ``catalog`` (default :data:`TASKS_PER_PRODUCT` per product).

    Deterministic for a catalog: products are visited in a seeded order, round after round, and
    an instruction already made is drawn again. One task in :data:`TEST_SHARE` is a test task.
    """
    count = TASKS_PER_PRODUCT * catalog.num_products if num_tasks is None else num_tasks
    if count < TEST_SHARE:
        raise ConfigurationError(f"num_tasks must be >= {TEST_SHARE}, got {count}")
    rng = random.Random(f"webshop-tasks-{catalog.seed}-{catalog.num_products}")
    order = list(catalog.products)
    seen: set[str] = set()
    made: list[tuple[str, Goal]] = []
    for _ in range(20 * max(1, count // len(order) + 1)):
        rng.shuffle(order)
        for product in order:
            goal = make_goal(product, rng)
            text = instruction_text(product, goal, rng)
            if text not in seen:
                seen.add(text)
                made.append((text, goal))
            if len(made) == count:
                break
        if len(made) == count:
            break
    if len(made) < count:
        raise ConfigurationError(f"could only make {len(made)} distinct tasks of {count} from this catalog")
    default = (catalog.seed, catalog.num_products) == (DEFAULT_CATALOG_SEED, DEFAULT_NUM_PRODUCTS)
    prefix = "webshop" if default else f"webshop-c{catalog.seed}n{catalog.num_products}"
    splits: dict[str, list[Task]] = {"train": [], "test": []}
    for i, (text, goal) in enumerate(made):
        split = "test" if i % TEST_SHARE == TEST_SHARE - 1 else "train"
        number = len(splits[split])
        splits[split].append(
            Task(
                id=f"{prefix}-{split}-{number:05d}",
                domain="webshop",
                instruction=text,
                initial_state=search_page(text),
                metadata={
                    "goal": goal.to_dict(),
                    "catalog_seed": catalog.seed,
                    "num_products": catalog.num_products,
                },
            )
        )
    return TaskSet(tuple(splits["train"]), tuple(splits["test"]))


def load_tasks(seed: int = DEFAULT_CATALOG_SEED, num_products: int = DEFAULT_NUM_PRODUCTS) -> TaskSet:
    """The tasks of the catalog ``(seed, num_products)``, built once per process."""
    return _cached_tasks(int(seed), int(num_products))


@cache
def _cached_tasks(seed: int, num_products: int) -> TaskSet:
    return generate_tasks(load_catalog(seed, num_products))
