"""``shopping``: a OneStopShop-like store front at ``http://shopping.local``.

URLs: ``/`` (search box and categories), ``/category/<slug>?p=N``, ``/search?q=...&p=N``,
``/product/<id>``, ``/cart``, ``/checkout``, ``/orders`` (the signed-in customer's orders) and
``/orders/<number>``.
"""

from __future__ import annotations

from collections.abc import Mapping

from dreamgym_env.envs.webarena.sites import base as ui
from dreamgym_env.envs.webarena.sites.base import NotFound, Outcome, Request
from dreamgym_env.envs.webarena.sites.store import (
    ME,
    TODAY,
    Order,
    OrderLine,
    Product,
    StoreSite,
    money,
    slug,
)

PAGE_SIZE = 12
SEARCH_LABEL = "Search entire store here..."


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


class ShoppingSite(StoreSite):
    """The store front; the signed-in customer is the store's customer 0."""

    host = "shopping.local"
    title = "One Stop Market"
    title_template = "{} | One Stop Market"

    def navigation(self) -> ui.Node:
        return ui.group(
            "banner",
            self.link(self.title),
            self.link("My Orders", "/orders"),
            self.link(f"My Cart ({sum(self.state.cart.values())})", "/cart"),
            ui.search_box(SEARCH_LABEL),
        )

    def page(self, request: Request) -> ui.Page:
        path = request.path
        if path == "/":
            categories = [[self.link(c, f"/category/{slug(c)}")] for c in self.store.categories]
            return self.frame("", ui.heading("Shop by category"), ui.listing(categories))
        if path.startswith("/category/"):
            category = next((c for c in self.store.categories if path == f"/category/{slug(c)}"), None)
            if category is None:
                raise NotFound(path)
            return self._list(category, [p for p in self.store.products if p.category == category], request)
        if path == "/search":
            query = request.get("q")
            results = search_products(self.store.products, query)
            return self._list(f"Search results for: '{query}'", results, request, q=query)
        if (product := request.item("/product/", self.store.products)) is not None:
            return self._product(product)
        if path == "/cart":
            return self._cart()
        if path == "/checkout":
            return self._checkout()
        if path == "/orders":
            return self._orders()
        number = request.number("/orders/")
        order = self.state.order(number) if number is not None else None
        if order is not None and order.customer_id == ME:
            return self._order(order)
        raise NotFound(path)

    def _list(self, title: str, products: list[Product], request: Request, **query: str) -> ui.Page:
        shown, pager = self.paginate(products, request, PAGE_SIZE, **query)
        items = [[self.link(p.name, f"/product/{p.id}"), self.price_text(p)] for p in shown]
        return self.headed(
            title,
            ui.text(f"{len(products)} items"),
            ui.listing(items, empty="Your search returned no results."),
            *pager,
        )

    def _product(self, product: Product) -> ui.Page:
        reviews = [
            [
                ui.text(r.title),
                ui.text(f"Rating: {r.rating}/5"),
                ui.text(f"Review by {r.author}"),
                ui.text(r.text),
            ]
            for r in product.reviews
        ]
        return self.headed(
            product.name,
            self.price_text(product),
            ui.text(f"Rating: {product.rating_percent}%"),
            ui.text(f"{len(product.reviews)} Reviews"),
            ui.text(f"SKU: {product.sku}"),
            ui.text("In stock" if product.stock else "Out of stock"),
            self.link(product.category, f"/category/{slug(product.category)}"),
            ui.textbox("Qty", "qty", submit="add_to_cart", args=(str(product.id),), value="1"),
            ui.button("Add to Cart", "add_to_cart", str(product.id)),
            ui.heading("Customer Reviews"),
            ui.listing(reviews, empty="There are no reviews yet."),
        )

    def _cart(self) -> ui.Page:
        if not self.state.cart:
            return self.headed("Shopping Cart", ui.text("You have no items in your shopping cart."))
        items = []
        total = 0.0
        for pid, qty in self.state.cart.items():
            product = self.store.products[pid]
            subtotal = qty * self.state.price(product)
            total += subtotal
            items.append(
                [
                    self.link(product.name, f"/product/{pid}"),
                    ui.text(f"Qty: {qty}"),
                    ui.text(f"Subtotal: {money(subtotal)}"),
                    ui.button("Remove item", "remove_from_cart", str(pid)),
                ]
            )
        return self.headed(
            "Shopping Cart",
            ui.listing(items),
            ui.text(f"Order Total: {money(total)}"),
            self.link("Proceed to Checkout", "/checkout"),
        )

    def _checkout(self) -> ui.Page:
        if not self.state.cart:
            return self.headed("Checkout", ui.text("You have no items in your shopping cart."))
        customer = self.store.customers[ME]
        lines = [ui.text(f"{self.store.products[pid].name} x {qty}") for pid, qty in self.state.cart.items()]
        return self.headed(
            "Checkout",
            ui.text(f"Ship to: {customer.name}, {customer.city}"),
            *lines,
            ui.button("Place Order", "place_order"),
        )

    def _orders(self) -> ui.Page:
        mine = [o for o in self.state.orders() if o.customer_id == ME]
        rows = [
            [
                ui.text(f"Order # {o.number}"),
                ui.text(f"Date: {o.date}"),
                ui.text(f"Order Total: {money(o.total)}"),
                ui.text(f"Status: {o.status}"),
                self.link("View Order", f"/orders/{o.number}"),
            ]
            for o in reversed(mine)
        ]
        return self.headed("My Orders", ui.listing(rows))

    def _order(self, order: Order) -> ui.Page:
        return self.headed(
            f"Order # {order.number}",
            ui.text(f"Status: {order.status}"),
            ui.text(f"Order Date: {order.date}"),
            *self.order_contents(order, product_links=True),
        )

    def operate(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        if op == "add_to_cart":
            pid = int(args[0]) if args else -1
            raw = values.get("qty", "1").strip()
            product_url = self.url(f"/product/{pid}")
            if not raw.isdigit() or not 1 <= int(raw) <= 99:
                return Outcome(product_url, "Please enter a quantity from 1 to 99.")
            self.state.cart[pid] = self.state.cart.get(pid, 0) + int(raw)
            return Outcome(product_url, f"You added {self.store.products[pid].name} to your shopping cart.")
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
