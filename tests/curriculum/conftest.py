from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.catalog import load_catalog
from dreamgym_env.envs.webshop.task_variations import WebShopTaskVariations
from dreamgym_env.types import Task


@pytest.fixture(scope="session")
def webshop_variations() -> WebShopTaskVariations:
    return WebShopTaskVariations(get_domain("webshop"))


@pytest.fixture(scope="session")
def known_fingerprints(webshop_variations: WebShopTaskVariations) -> set[str]:
    domain = get_domain("webshop")
    return {webshop_variations.fingerprint(t) for split in ("train", "test") for t in domain.tasks(split)}


def _candidates(parent: Task, known: set[str], variations: WebShopTaskVariations) -> Iterator[dict[str, Any]]:
    kind = parent.metadata["goal"]["product_type"]
    for product in load_catalog().products:
        if product.product_type != kind:
            continue
        options = {o.label: o.values[-1] for o in product.options}
        attributes = list(product.attributes[-2:])
        price = float(int(product.price) + 3)
        instruction = (
            f"i want a {kind} that is {' and '.join(attributes)}, "
            + ", ".join(f"{label} {value}" for label, value in options.items())
            + f", price lower than {price:.2f} dollars"
        )
        goal = {"product_type": kind, "attributes": attributes, "options": options, "price_upper": price}
        candidate = {"parent_id": parent.id, "instruction": instruction, "goal": goal}
        built = variations.build(candidate, parent)
        if isinstance(built, Task) and variations.fingerprint(built) not in known:
            yield candidate


@pytest.fixture
def parent() -> Task:
    return get_domain("webshop").tasks("train")[0]


@pytest.fixture
def fresh_candidates(
    known_fingerprints: set[str], webshop_variations: WebShopTaskVariations
) -> Callable[[Task, int], list[dict[str, Any]]]:
    """``fresh_candidates(parent, n)``: valid, new WebShop candidates varying ``parent``.

    Each comes from a catalog product of the parent's product type (so it is feasible) and asks
    for a goal no task of the domain's splits has.
    """

    def make(parent: Task, n: int) -> list[dict[str, Any]]:
        return list(itertools.islice(_candidates(parent, known_fingerprints, webshop_variations), n))

    return make
