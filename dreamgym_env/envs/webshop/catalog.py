"""The seeded, procedurally generated product catalog of the WebShop reference env."""

from __future__ import annotations

import random
import string
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache, cached_property

from dreamgym_env.envs.webshop import vocabulary as V
from dreamgym_env.envs.webshop.matching import tokens
from dreamgym_env.envs.webshop.search import BM25Index
from dreamgym_env.errors import ConfigurationError

DEFAULT_CATALOG_SEED = 0
DEFAULT_NUM_PRODUCTS = 2_000
MAX_RESULTS = 50
"""A search returns at most this many products (5 pages of 10), as WebShop does."""
SEARCH_CACHE_SIZE = 4_096
TITLE_ATTRIBUTES = 3
"""A title names at most this many of a product's attributes (the first ones); the rest are only in
its features and description, as a real WebShop goal's attributes often are."""
_ID_CHARS = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class OptionChoice:
    """One option group of a product: the values it offers, in vocabulary order."""

    key: str
    label: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Product:
    """A catalog product."""

    index: int
    id: str
    title: str
    brand: str
    category: str
    product_type: str
    price: float
    rating: float
    attributes: tuple[str, ...]
    options: tuple[OptionChoice, ...]

    @cached_property
    def title_tokens(self) -> tuple[str, ...]:
        return tokens(self.title)

    @property
    def query(self) -> str:
        """The search term the product is listed under (WebShop's ``product['query']``)."""
        return query_of(self.product_type)

    @property
    def product_category(self) -> str:
        """The product's breadcrumb, parts joined by ``' › '`` (WebShop's ``product['product_category']``)."""
        return product_category_of(self.category, self.product_type)

    @cached_property
    def bullet_points(self) -> tuple[str, ...]:
        """The features page's points (WebShop's ``product['BulletPoints']``)."""
        return bullet_points_of(self.brand, self.category, self.attributes)

    @cached_property
    def description(self) -> str:
        """The description page's paragraph (WebShop's ``product['Description']``)."""
        return description_of(self.id, self.product_type, self.brand, self.category, self.attributes)

    def option(self, label: str) -> OptionChoice | None:
        """The option group shown as ``label`` on the item page, if the product has it."""
        return next((o for o in self.options if o.label == label), None)


def _capitalize(phrase: str) -> str:
    return " ".join(word[:1].upper() + word[1:] for word in phrase.split())


def query_of(product_type: str) -> str:
    """The search term of a product type: its name (real WebShop products keep the lower-case query they were scraped under)."""
    return product_type


def product_category_of(category: str, product_type: str) -> str:
    """A two-part breadcrumb, ``"Fashion › Men's Shirt"``: WebShop's category match needs two common parts, so only the same type matches."""
    return f"{_capitalize(category)} › {_capitalize(product_type)}"


def bullet_points_of(brand: str, category: str, attributes: tuple[str, ...]) -> tuple[str, ...]:
    """The features page's points of a product with these facts."""
    return (f"brand: {brand}", f"category: {category}", *attributes)


def description_of(
    product_id: str, product_type: str, brand: str, category: str, attributes: tuple[str, ...]
) -> str:
    """The description paragraph of a product with these facts.

    Seeded by the product id alone, so a page state (which carries these facts) determines it:
    the purchase score reads it without the catalog. Catalog products have two attributes or
    more; an invented item with fewer gets no middle sentence.
    """
    rng = random.Random(f"webshop-{product_id}-description")
    sentences = [rng.choice(V.DESCRIPTION_OPENERS).format(type=product_type, brand=brand, category=category)]
    if len(attributes) >= 2:
        a1, a2 = rng.sample(attributes, 2)
        sentences.append(rng.choice(V.DESCRIPTION_MIDDLES).format(a1=a1, a2=a2))
    sentences.append(rng.choice(V.DESCRIPTION_CLOSERS))
    return " ".join(sentences)


class Catalog:
    """The products of one seed, with their BM25 search index and sub-page texts.

    Build one with :func:`load_catalog`, which caches catalogs per ``(seed, num_products)``:
    a process builds each catalog once, and envs that share it are cheap to construct.
    """

    def __init__(self, seed: int = DEFAULT_CATALOG_SEED, num_products: int = DEFAULT_NUM_PRODUCTS) -> None:
        if num_products < len(V.PRODUCT_TYPES):
            raise ConfigurationError(f"num_products must be >= {len(V.PRODUCT_TYPES)}, got {num_products}")
        self.seed, self.num_products = seed, num_products
        rng = random.Random(f"webshop-catalog-{seed}")
        kinds = [V.PRODUCT_TYPES[i % len(V.PRODUCT_TYPES)] for i in range(num_products)]
        rng.shuffle(kinds)
        ids: set[str] = set()
        products = []
        for index, kind in enumerate(kinds):
            product_id = self._new_id(rng, ids)
            products.append(self._new_product(rng, index, product_id, kind))
        self.products: tuple[Product, ...] = tuple(products)
        self.by_id: dict[str, Product] = {p.id: p for p in self.products}
        self.index = BM25Index([self._document(p) for p in self.products])
        self._search_cache: OrderedDict[tuple[str, ...], tuple[int, ...]] = OrderedDict()
        self._texts: dict[tuple[str, str], tuple[str, ...]] = {}

    @staticmethod
    def _new_id(rng: random.Random, taken: set[str]) -> str:
        while True:
            product_id = "B0" + "".join(rng.choices(_ID_CHARS, k=8))
            if product_id not in taken:
                taken.add(product_id)
                return product_id

    @staticmethod
    def _new_product(rng: random.Random, index: int, product_id: str, kind: V.ProductType) -> Product:
        attributes = tuple(rng.sample(kind.attributes, rng.randint(2, min(5, len(kind.attributes)))))
        options = []
        for key in kind.groups:
            group = V.OPTION_GROUPS[key]
            chosen = set(rng.sample(group.values, rng.randint(2, min(6, len(group.values)))))
            options.append(OptionChoice(key, group.label, tuple(v for v in group.values if v in chosen)))
        brand = rng.choice(V.BRANDS[kind.category])
        head = [brand]
        if rng.random() < 0.6:
            head.append(rng.choice(V.DESCRIPTORS))
        head.append(_capitalize(kind.name))
        title = " ".join(head) + " - " + ", ".join(_capitalize(a) for a in attributes[:TITLE_ATTRIBUTES])
        low, high = kind.price
        price = round(int(rng.uniform(low, high)) + rng.choice((0.99, 0.49, 0.95, 0.5)), 2)
        rating = round(min(5.0, max(1.0, rng.gauss(4.2, 0.5))), 1)
        return Product(
            index,
            product_id,
            title,
            brand,
            kind.category,
            kind.name,
            price,
            rating,
            attributes,
            tuple(options),
        )

    @staticmethod
    def _document(product: Product) -> tuple[str, ...]:
        """The words a search matches: title, the attributes it leaves out, type, category, option values."""
        values = " ".join(v for option in product.options for v in option.values)
        hidden = " ".join(product.attributes[TITLE_ATTRIBUTES:])
        return tokens(f"{product.title} {hidden} {product.product_type} {product.category} {values}")

    # -- search ------------------------------------------------------------------------------
    def search(self, query: str) -> tuple[int, ...]:
        """Indices of the products that match ``query``, best first (at most :data:`MAX_RESULTS`)."""
        key = tokens(query)
        hit = self._search_cache.get(key)
        if hit is not None:
            self._search_cache.move_to_end(key)
            return hit
        result = tuple(self.index.search(key, MAX_RESULTS).tolist())
        self._search_cache[key] = result
        if len(self._search_cache) > SEARCH_CACHE_SIZE:
            self._search_cache.popitem(last=False)
        return result

    # -- sub-page texts ----------------------------------------------------------------------
    def text(self, product: Product, page: str) -> tuple[str, ...]:
        """The lines of an item's ``description``, ``features`` or ``reviews`` sub-page."""
        key = (product.id, page)
        lines = self._texts.get(key)
        if lines is None:
            rng = random.Random(f"webshop-{self.seed}-{product.id}-{page}")
            lines = getattr(self, f"_{page}")(rng, product)
            self._texts[key] = lines
        return lines

    @staticmethod
    def _description(rng: random.Random, p: Product) -> tuple[str, ...]:
        return (p.description,)

    @staticmethod
    def _features(rng: random.Random, p: Product) -> tuple[str, ...]:
        return tuple(f"- {point}" for point in p.bullet_points)

    @staticmethod
    def _reviews(rng: random.Random, p: Product) -> tuple[str, ...]:
        lines = []
        for _ in range(rng.randint(2, 4)):
            stars = max(1, min(5, round(rng.gauss(p.rating, 0.8))))
            lines.append(f"{rng.choice(V.REVIEWERS)} ({stars} stars): {rng.choice(V.REVIEW_TEXTS[stars])}")
        return tuple(lines)


def load_catalog(seed: int = DEFAULT_CATALOG_SEED, num_products: int = DEFAULT_NUM_PRODUCTS) -> Catalog:
    """The catalog of ``seed`` with ``num_products`` products, built once per process."""
    return _cached_catalog(int(seed), int(num_products))


@cache
def _cached_catalog(seed: int, num_products: int) -> Catalog:
    return Catalog(seed, num_products)
