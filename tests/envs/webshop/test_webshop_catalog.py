from __future__ import annotations

import itertools
import re

import pytest

from dreamgym_env.envs.webshop import vocabulary as V
from dreamgym_env.envs.webshop.catalog import TITLE_ATTRIBUTES, Catalog, load_catalog
from dreamgym_env.envs.webshop.matching import phrase_in_text, phrases_match
from dreamgym_env.errors import ConfigurationError


def test_default_catalog_size_categories_and_ids():
    catalog = load_catalog()
    assert len(catalog.products) >= 2000
    assert len({p.category for p in catalog.products}) >= 5
    assert all(re.fullmatch(r"B0[A-Z0-9]{8}", p.id) for p in catalog.products)
    assert len(catalog.by_id) == len(catalog.products)
    assert all(catalog.products[i].index == i for i in range(len(catalog.products)))


def test_same_seed_same_catalog_other_seed_other_catalog():
    a, b, c = Catalog(3, 200), Catalog(3, 200), Catalog(4, 200)
    assert a.products == b.products
    assert [p.id for p in a.products] != [p.id for p in c.products]
    product = a.products[7]
    assert a.text(product, "reviews") == b.text(b.products[7], "reviews")


def test_load_catalog_is_cached():
    assert load_catalog(0, 2000) is load_catalog()


def test_too_small_catalog_refused():
    with pytest.raises(ConfigurationError):
        Catalog(0, 10)


def test_products_are_consistent():
    for product in load_catalog().products:
        labels = [v for option in product.options for v in option.values]
        assert len(labels) == len(set(labels)), product.id
        assert len({o.label for o in product.options}) == len(product.options)
        assert phrase_in_text(product.product_type, product.title)
        assert all(phrase_in_text(a, product.title) for a in product.attributes[:TITLE_ATTRIBUTES])
        assert not any(c in product.title for c in "[]|")
        assert product.price > 0 and 1.0 <= product.rating <= 5.0


def test_titles_name_only_their_own_type():
    names = [t.name for t in V.PRODUCT_TYPES]
    for product in load_catalog().products:
        assert [n for n in names if phrase_in_text(n, product.title)] == [product.product_type], product.title


def test_vocabulary_entries_never_match_each_other():
    for group in V.OPTION_GROUPS.values():
        for a, b in itertools.combinations(group.values, 2):
            assert not phrases_match(a, b), (group.key, a, b)
        assert not any("," in v or "=" in v for v in group.values)
    attributes = sorted({a for t in V.PRODUCT_TYPES for a in t.attributes})
    for a, b in itertools.combinations(attributes, 2):
        assert not phrases_match(a, b), (a, b)
    for kind in V.PRODUCT_TYPES:  # an attribute of a type never hides inside another of that type
        for a, b in itertools.permutations(kind.attributes, 2):
            assert not phrase_in_text(a, b), (kind.name, a, b)


def test_sub_page_texts():
    catalog = load_catalog()
    product = catalog.products[0]
    features = catalog.text(product, "features")
    assert features[:2] == (f"- brand: {product.brand}", f"- category: {product.category}")
    assert features[2:] == tuple(f"- {a}" for a in product.attributes)
    assert catalog.text(product, "description")[0]
    assert all(re.fullmatch(r"\w+ \([1-5] stars\): .+", line) for line in catalog.text(product, "reviews"))
