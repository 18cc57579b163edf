"""``shopping``: a OneStopShop-like store front at ``http://shopping.local``.

URLs: ``/`` (search box and categories), ``/category/<slug>?p=N``, ``/search?q=...&p=N``,
``/product/<id>``, ``/cart``, ``/checkout``, ``/orders`` (the signed-in customer's orders) and
``/orders/<number>``.
"""

from __future__ import annotations

from collections.abc import Mapping

from dreamgym_env.envs.webarena.sites.base import (
    Node,
    NotFound,
    Outcome,
    Page,
    Request,
    Site,
    button,
    group,
    heading,
    link,
    listing,
    pager,
    paginate,
    text,
    textbox,
)
from dreamgym_env.envs.webarena.sites.store import ME, TODAY, Order, OrderLine, Product, StoreState, slug

PAGE_SIZE = 12
SEARCH_LABEL = "Search entire store here..."


def money(value: float) -> str:
    return f"${value:.2f}"


def search_products(products: tuple[Product, ...], query: str) -> list[Product]:
    """Products whose name or category has every query word; else those with any, most words first."""
    words = query.lower().split()
    if not words:
        return []
    scored = []
    for product in products:
        haystack = f"{product.name} {product.category}".lower().split()
        hits = sum(word in haystack for word in words)
        if hits:
            scored.append((-hits, product.id, product))
    return [product for _, _, product in sorted(scored, key=lambda item: item[:2])]


class ShoppingSite(Site):
    """The store front; the signed-in customer is the store's customer 0."""

    host = "shopping.local"
    title = "One Stop Market"

    def __init__(self, state: StoreState) -> None:
        self.state = state
        self.store = state.store

    def _frame(self, title: str, *body: Node) -> Page:
        items = sum(self.state.cart.values())
        banner = group(
            "banner",
            link("One Stop Market", self.url()),
            link("My Orders", self.url("/orders")),
            link(f"My Cart ({items})", self.url("/cart")),
            textbox(SEARCH_LABEL, "q", submit="search"),
        )
        return Page(
            f"{title} | One Stop Market" if title else "One Stop Market", [banner, group("main", *body)]
        )

    def page(self, request: Request) -> Page:
        parts = request.path.strip("/").split("/") if request.path != "/" else []
        if not parts:
            categories = [[link(c, self.url(f"/category/{slug(c)}"))] for c in self.store.categories]
            return self._frame("", heading("Shop by category"), listing(categories))
        head, rest = parts[0], parts[1:]
        if head == "category" and len(rest) == 1:
            category = next((c for c in self.store.categories if slug(c) == rest[0]), None)
            if category is None:
                raise NotFound(request.path)
            products = [p for p in self.store.products if p.category == category]
            return self._list(category, products, request, f"/category/{rest[0]}")
        if head == "search" and not rest:
            query = request.get("q")
            return self._list(
                f"Search results for: '{query}'",
                search_products(self.store.products, query),
                request,
                "/search",
                q=query,
            )
        if (
            head == "product"
            and len(rest) == 1
            and rest[0].isdigit()
            and int(rest[0]) < len(self.store.products)
        ):
            return self._product(self.store.products[int(rest[0])])
        if head == "cart" and not rest:
            return self._cart()
        if head == "checkout" and not rest:
            return self._checkout()
        if head == "orders" and not rest:
            return self._orders()
        if head == "orders" and len(rest) == 1 and rest[0].isdigit():
            order = self.state.order(int(rest[0]))
            if order is not None and order.customer_id == ME:
                return self._order(order)
        raise NotFound(request.path)

    def _list(self, title: str, products: list[Product], request: Request, path: str, **query: str) -> Page:
        shown, pages = paginate(products, request.int("p"), PAGE_SIZE)
        items = [
            [link(p.name, self.url(f"/product/{p.id}")), text(f"Price: {money(self.state.price(p))}")]
            for p in shown
        ]
        body = [heading(title), text(f"{len(products)} items")]
        body.append(listing(items) if items else text("Your search returned no results."))
        return self._frame(
            title, *body, *pager(self.host, path, min(max(request.int("p"), 1), pages), pages, **query)
        )

    def _product(self, product: Product) -> Page:
        reviews = self.state.reviews(product)
        rating = round(20 * sum(r.rating for r in reviews) / len(reviews)) if reviews else 0
        body = [
            heading(product.name),
            text(f"Price: {money(self.state.price(product))}"),
            text(f"Rating: {rating}%"),
            text(f"{len(reviews)} Reviews"),
            text(f"SKU: {product.sku}"),
            text("In stock" if product.stock else "Out of stock"),
            link(product.category, self.url(f"/category/{slug(product.category)}")),
            textbox("Qty", "qty", submit="add_to_cart", args=(str(product.id),), value="1"),
            button("Add to Cart", "add_to_cart", str(product.id)),
            heading("Customer Reviews"),
        ]
        body.append(
            listing(
                [
                    [
                        text(r.title),
                        text(f"Rating: {r.rating}/5"),
                        text(f"Review by {r.author}"),
                        text(r.text),
                    ]
                    for r in reviews
                ]
            )
            if reviews
            else text("There are no reviews yet.")
        )
        return self._frame(product.name, *body)

    def _cart(self) -> Page:
        if not self.state.cart:
            return self._frame(
                "Shopping Cart", heading("Shopping Cart"), text("You have no items in your shopping cart.")
            )
        items = []
        total = 0.0
        for pid, qty in self.state.cart.items():
            product = self.store.products[pid]
            subtotal = qty * self.state.price(product)
            total += subtotal
            items.append(
                [
                    link(product.name, self.url(f"/product/{pid}")),
                    text(f"Qty: {qty}"),
                    text(f"Subtotal: {money(subtotal)}"),
                    button("Remove item", "remove_from_cart", str(pid)),
                ]
            )
        return self._frame(
            "Shopping Cart",
            heading("Shopping Cart"),
            listing(items),
            text(f"Order Total: {money(total)}"),
            link("Proceed to Checkout", self.url("/checkout")),
        )

    def _checkout(self) -> Page:
        if not self.state.cart:
            return self._frame(
                "Checkout", heading("Checkout"), text("You have no items in your shopping cart.")
            )
        customer = self.store.customers[ME]
        lines = [text(f"{self.store.products[pid].name} x {qty}") for pid, qty in self.state.cart.items()]
        return self._frame(
            "Checkout",
            heading("Checkout"),
            text(f"Ship to: {customer.name}, {customer.city}"),
            *lines,
            button("Place Order", "place_order"),
        )

    def _orders(self) -> Page:
        mine = [o for o in self.state.orders() if o.customer_id == ME]
        rows = [
            [
                text(f"Order # {o.number}"),
                text(f"Date: {o.date}"),
                text(f"Order Total: {money(o.total)}"),
                text(f"Status: {o.status}"),
                link("View Order", self.url(f"/orders/{o.number}")),
            ]
            for o in reversed(mine)
        ]
        return self._frame("My Orders", heading("My Orders"), listing(rows))

    def _order(self, order: Order) -> Page:
        lines = [
            [
                link(self.store.products[line.product_id].name, self.url(f"/product/{line.product_id}")),
                text(f"Qty: {line.qty}"),
                text(f"Price: {money(line.price)}"),
            ]
            for line in order.lines
        ]
        return self._frame(
            f"Order # {order.number}",
            heading(f"Order # {order.number}"),
            text(f"Status: {order.status}"),
            text(f"Order Date: {order.date}"),
            listing(lines),
            text(f"Grand Total: {money(order.total)}"),
        )

    def perform(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        if op == "search":
            return Outcome(self.url("/search", q=" ".join(values.get("q", "").split())))
        if op == "add_to_cart":
            pid = int(args[0]) if args else -1
            raw = values.get("qty", "1").strip()
            if not raw.isdigit() or not 1 <= int(raw) <= 99:
                return Outcome(self.url(f"/product/{pid}"), "Please enter a quantity from 1 to 99.")
            self.state.cart[pid] = self.state.cart.get(pid, 0) + int(raw)
            name = self.store.products[pid].name
            return Outcome(self.url(f"/product/{pid}"), f"You added {name} to your shopping cart.")
        if op == "remove_from_cart":
            self.state.cart.pop(int(args[0]), None)
            return Outcome(self.url("/cart"))
        if op == "place_order":
            number = 101 + len(self.store.orders) + len(self.state.placed)
            lines = tuple(
                OrderLine(pid, qty, self.state.price(self.store.products[pid]))
                for pid, qty in self.state.cart.items()
            )
            self.state.placed.append(Order(number, ME, TODAY, lines, "Pending"))
            self.state.cart.clear()
            return Outcome(
                self.url(f"/orders/{number}"), f"Thank you for your purchase! Your order number is {number}."
            )
        raise NotFound(op)
