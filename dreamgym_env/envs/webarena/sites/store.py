"""The store behind ``shopping`` and ``shopping_admin``: products, customers, orders, reviews.

:class:`Store` is the seeded data, built once per seed and never changed; :class:`StoreState` is
what an episode changes (cart, placed orders, order statuses, prices), fresh at each reset.
Both sites of the store (:class:`StoreSite` s) share one state, as WebArena's shop and its
admin panel share one database.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from functools import cache, cached_property

from dreamgym_env.envs.webarena.sites import base as ui
from dreamgym_env.envs.webarena.sites.base import Site, named

CATEGORIES: dict[str, tuple[str, ...]] = {
    "Grocery & Gourmet Food": (
        "Green Tea",
        "Coffee Beans",
        "Dark Chocolate",
        "Olive Oil",
        "Honey",
        "Granola",
    ),
    "Beauty & Personal Care": ("Face Cream", "Shampoo", "Lip Balm", "Body Lotion", "Hair Serum", "Sunscreen"),
    "Home & Kitchen": ("Chef Knife", "Frying Pan", "Tea Kettle", "Cutting Board", "Mixing Bowl", "Blender"),
    "Electronics": (
        "Headphones",
        "Phone Charger",
        "Bluetooth Speaker",
        "USB Cable",
        "Smart Watch",
        "Keyboard",
    ),
    "Sports & Outdoors": ("Yoga Mat", "Water Bottle", "Tent", "Running Shoes", "Backpack", "Jump Rope"),
    "Health & Household": (
        "Vitamin C",
        "Hand Soap",
        "Dish Sponge",
        "Face Masks",
        "Protein Powder",
        "Fish Oil",
    ),
    "Office Products": ("Notebook", "Gel Pens", "Desk Lamp", "Stapler", "Sticky Notes", "File Folder"),
    "Toys & Games": ("Puzzle", "Building Blocks", "Board Game", "Plush Bear", "Kite", "Card Game"),
}
BRANDS = (
    "Lumina",
    "Verde",
    "Northwind",
    "Acorn",
    "Bluebird",
    "Cascade",
    "Solstice",
    "Harbor",
    "Maple",
    "Zephyr",
)
ADJECTIVES = ("Organic", "Classic", "Deluxe", "Compact", "Premium", "Everyday", "Ultra", "Natural")
FIRST_NAMES = (
    "Emma",
    "Liam",
    "Olivia",
    "Noah",
    "Ava",
    "Ethan",
    "Sophia",
    "Mason",
    "Mia",
    "Lucas",
    "Grace",
    "Jacob",
    "Chloe",
    "Daniel",
    "Nora",
    "Adam",
    "Julia",
    "Samuel",
    "Alex",
    "Bob",
)
LAST_NAMES = (
    "Lopes",
    "Smith",
    "Garcia",
    "Chen",
    "Patel",
    "Kim",
    "Johnson",
    "Nguyen",
    "Brown",
    "Martinez",
    "Davis",
    "Wilson",
    "Clark",
    "Lewis",
    "Walker",
    "Young",
)
CITIES = ("Boston", "Austin", "Denver", "Seattle", "Chicago", "Miami", "Portland", "Phoenix")
REVIEW_TITLES = ("Great value", "Works as described", "Not bad", "Disappointed", "Love it", "Would buy again")
STATUSES = ("Pending", "Processing", "Complete", "Canceled", "On Hold")
YEARS = (2021, 2022, 2023)
TODAY = "2024-01-15"
NUM_PRODUCTS = 160
NUM_CUSTOMERS = 60
NUM_ORDERS = 420
ME = 0
"""The customer signed in on the shopping site (WebArena's shop account is Emma Lopes)."""


def slug(name: str) -> str:
    """A URL segment of a name: lower case words joined by hyphens."""
    return "-".join("".join(c if c.isalnum() else " " for c in name.lower()).split())


@dataclass(frozen=True)
class Review:
    author: str
    rating: int
    title: str
    text: str


@dataclass(frozen=True)
class Product:
    id: int
    name: str
    sku: str
    category: str
    price: float
    stock: int
    reviews: tuple[Review, ...]

    @property
    def rating_percent(self) -> int:
        """The average review rating as Magento shows it (percent of 5 stars; 0 without reviews)."""
        if not self.reviews:
            return 0
        return round(20 * sum(r.rating for r in self.reviews) / len(self.reviews))


@dataclass(frozen=True)
class Customer:
    id: int
    name: str
    email: str
    phone: str
    city: str
    since: str


@dataclass(frozen=True)
class OrderLine:
    product_id: int
    qty: int
    price: float


@dataclass(frozen=True)
class Order:
    number: int
    customer_id: int
    date: str
    lines: tuple[OrderLine, ...]
    status: str

    @cached_property
    def total(self) -> float:
        # cached: the admin dashboard sums every order's total on each view
        return round(sum(line.qty * line.price for line in self.lines), 2)


@dataclass(frozen=True)
class Store:
    """The seeded data of the store (never changed; episodes change a :class:`StoreState`)."""

    seed: int
    products: tuple[Product, ...]
    customers: tuple[Customer, ...]
    orders: tuple[Order, ...]

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(CATEGORIES)

    def product_named(self, name: str) -> Product | None:
        return named(self.products, name, lambda p: p.name)

    def customer_named(self, name: str) -> Customer | None:
        return named(self.customers, name, lambda c: c.name)


@dataclass
class StoreState:
    """What an episode changes in the store: overlays over the seeded :class:`Store`."""

    store: Store
    cart: dict[int, int] = field(default_factory=dict)
    placed: list[Order] = field(default_factory=list)
    statuses: dict[int, str] = field(default_factory=dict)
    prices: dict[int, float] = field(default_factory=dict)

    def orders(self) -> list[Order]:
        """All orders, newest number last, with their current status."""
        everything = [*self.store.orders, *self.placed]
        if not self.statuses:  # the common case: nothing to overlay, no order rebuilt
            return everything
        return [
            replace(o, status=self.statuses[o.number]) if o.number in self.statuses else o for o in everything
        ]

    def order(self, number: int) -> Order | None:
        return next((o for o in self.orders() if o.number == number), None)

    def price(self, product: Product) -> float:
        return self.prices.get(product.id, product.price)


def money(value: float) -> str:
    return f"${value:.2f}"


class StoreSite(Site[StoreState]):
    """A site over the store's episode state (the shop and its admin panel)."""

    @property
    def store(self) -> Store:
        return self.state.store

    def price_text(self, product: Product) -> ui.Node:
        """A product's price as the pages show it: the current one, which the admin may have changed."""
        return ui.text(f"Price: {money(self.state.price(product))}")

    def order_contents(self, order: Order, product_links: bool) -> list[ui.Node]:
        """What both order pages show of an order: its lines and grand total.

        A line shows its product (a link to its page with ``product_links``), quantity and price.
        """
        rows = []
        for line in order.lines:
            name = self.store.products[line.product_id].name
            product = self.link(name, f"/product/{line.product_id}") if product_links else ui.text(name)
            rows.append([product, ui.text(f"Qty: {line.qty}"), ui.text(f"Price: {money(line.price)}")])
        return [ui.listing(rows), ui.text(f"Grand Total: {money(order.total)}")]


def bestsellers(store: Store, year: int, month: int | None = None) -> list[tuple[Product, int]]:
    """Products by quantity ordered in a period (canceled orders excluded), best first, ties by name."""
    prefix = f"{year}-{month:02d}" if month else f"{year}"
    sold: dict[int, int] = {}
    for order in store.orders:
        if order.date.startswith(prefix) and order.status != "Canceled":
            for line in order.lines:
                sold[line.product_id] = sold.get(line.product_id, 0) + line.qty
    ranked = sorted(sold.items(), key=lambda item: (-item[1], store.products[item[0]].name))
    return [(store.products[pid], qty) for pid, qty in ranked]


def _unique_names(
    rng: random.Random, first: tuple[str, ...], second: tuple[str, ...], count: int
) -> list[str]:
    """``count`` distinct ``first second`` combinations in a seeded order."""
    pairs = [f"{a} {b}" for a in first for b in second]
    if count > len(pairs):
        raise ValueError(f"only {len(pairs)} combinations for {count} names")
    return rng.sample(pairs, count)


def _date(rng: random.Random) -> str:
    return f"{rng.choice(YEARS)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


@cache
def load_store(seed: int) -> Store:
    """The store of ``seed``, built once per process."""
    rng = random.Random(f"webarena-store-{seed}")
    reviewers = _unique_names(rng, FIRST_NAMES, LAST_NAMES, 40)
    names = _unique_names(rng, BRANDS, ADJECTIVES, NUM_PRODUCTS // len(CATEGORIES) * 2)
    products: list[Product] = []
    for i in range(NUM_PRODUCTS):
        category = list(CATEGORIES)[i % len(CATEGORIES)]
        noun = CATEGORIES[category][(i // len(CATEGORIES)) % len(CATEGORIES[category])]
        name = f"{names[i // len(CATEGORIES)]} {noun}"
        reviews = tuple(
            Review(author, rating, rng.choice(REVIEW_TITLES), f"The {noun.lower()} is {word}.")
            for author, rating, word in (
                (rng.choice(reviewers), rating, ("awful", "poor", "fine", "good", "excellent")[rating - 1])
                for rating in (rng.randint(1, 5) for _ in range(rng.randint(0, 6)))
            )
        )
        price = round(rng.uniform(3, 120), 2)
        products.append(Product(i, name, f"SKU-{1000 + i}", category, price, rng.randint(0, 200), reviews))
    people = _unique_names(rng, FIRST_NAMES[1:], LAST_NAMES, NUM_CUSTOMERS - 1)
    customers = [
        Customer(
            i,
            name,
            f"{name.lower().replace(' ', '.')}@example.com",
            f"555-{rng.randint(1000, 9999)}",
            rng.choice(CITIES),
            f"{rng.choice(YEARS[:2])}-{rng.randint(1, 12):02d}-01",
        )
        for i, name in enumerate(["Emma Lopes", *people])
    ]
    orders: list[Order] = []
    for i in range(NUM_ORDERS):
        customer = ME if i % 25 == 0 else rng.randrange(1, NUM_CUSTOMERS)
        picked = rng.sample(range(NUM_PRODUCTS), rng.randint(1, 3))
        lines = tuple(OrderLine(p, rng.randint(1, 3), products[p].price) for p in picked)
        status = rng.choices(STATUSES, weights=(3, 3, 8, 1, 1))[0]
        orders.append(Order(0, customer, _date(rng), lines, status))
    orders.sort(key=lambda o: o.date)
    numbered = tuple(replace(o, number=101 + i) for i, o in enumerate(orders))
    return Store(seed, tuple(products), tuple(customers), numbered)
