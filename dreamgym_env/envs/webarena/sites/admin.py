"""``shopping_admin``: the store's admin panel at ``http://admin.local``.

URLs: ``/`` (dashboard), ``/sales/order?q=...&p=N`` (orders grid; the search matches an order
number or a customer name), ``/sales/order/<number>`` (with the status form),
``/customer?q=...``, ``/customer/<id>``, ``/catalog/product?q=...``, ``/catalog/product/<id>``
(with the price form) and ``/reports/bestsellers?year=Y&month=M``.
"""

from __future__ import annotations

from collections.abc import Mapping

from dreamgym_env.envs.webarena.sites.base import (
    Node,
    NotFound,
    Outcome,
    Page,
    Request,
    button,
    collapse_spaces,
    combobox,
    group,
    heading,
    link,
    listing,
    search_box,
    text,
    textbox,
)
from dreamgym_env.envs.webarena.sites.shopping import search_products
from dreamgym_env.envs.webarena.sites.store import STATUSES, YEARS, Order, StoreSite, bestsellers, money

PAGE_SIZE = 20
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
MENU = (
    ("Dashboard", "/"),
    ("Orders", "/sales/order"),
    ("Customers", "/customer"),
    ("Products", "/catalog/product"),
    ("Reports", "/reports/bestsellers"),
)
"""The navigation bar's links: label and path."""


class AdminSite(StoreSite):
    """The admin panel over the same :class:`StoreState` as the store front."""

    host = "admin.local"
    title = "Magento Admin"
    title_template = "{} / Magento Admin"
    searches = {
        "find_orders": "/sales/order",
        "find_customers": "/customer",
        "find_products": "/catalog/product",
    }

    def navigation(self) -> Node:
        return group("navigation", *(link(name, self.url(path)) for name, path in MENU))

    def page(self, request: Request) -> Page:
        path = request.path
        if path == "/":
            orders = self.state.orders()
            return self.headed(
                "Dashboard",
                text(f"Lifetime Sales: {money(sum(o.total for o in orders))}"),
                text(f"Orders: {len(orders)}"),
                text(f"Customers: {len(self.store.customers)}"),
            )
        if path == "/sales/order":
            return self._orders(request)
        number = request.number("/sales/order/")
        if number is not None and (order := self.state.order(number)) is not None:
            return self._order(order)
        if path == "/customer":
            query = request.get("q").lower()
            found = [c for c in self.store.customers if query in f"{c.name} {c.email}".lower()]
            rows = [[link(c.name, self.url(f"/customer/{c.id}")), text(c.email)] for c in found]
            return self._grid("Customers", "find_customers", request, len(found), rows[:PAGE_SIZE])
        if (c := request.item("/customer/", self.store.customers)) is not None:
            return self.headed(
                c.name,
                text(f"Email: {c.email}"),
                text(f"Phone: {c.phone}"),
                text(f"City: {c.city}"),
                text(f"Customer Since: {c.since}"),
                link("Orders", self.url("/sales/order", q=c.name)),
            )
        if path == "/catalog/product":
            products = (
                search_products(self.store.products, request.get("q"))
                if request.get("q")
                else list(self.store.products)
            )
            shown, pager = self.paginate(products, request, PAGE_SIZE, q=request.get("q"))
            rows = [
                [
                    link(p.name, self.url(f"/catalog/product/{p.id}")),
                    text(p.sku),
                    self.price_text(p),
                    text(f"Quantity: {p.stock}"),
                ]
                for p in shown
            ]
            return self._grid("Products", "find_products", request, len(products), rows, *pager)
        if (p := request.item("/catalog/product/", self.store.products)) is not None:
            return self.headed(
                p.name,
                text(f"SKU: {p.sku}"),
                text(f"Category: {p.category}"),
                textbox("Price", "price", value=f"{self.state.price(p):.2f}", required=True),
                button("Save", "save_product", str(p.id)),
            )
        if path == "/reports/bestsellers":
            return self._bestsellers(request)
        raise NotFound(path)

    def _grid(
        self, title: str, op: str, request: Request, found: int, rows: list[list[Node]], *pager: Node
    ) -> Page:
        """A searchable grid: the keyword box (Enter runs ``op``), the records found and their rows."""
        return self.headed(
            title,
            search_box("Search by keyword", op, request.get("q")),
            text(f"{found} records found"),
            listing(rows),
            *pager,
        )

    def _orders(self, request: Request) -> Page:
        query = collapse_spaces(request.get("q").lower())
        orders = self.state.orders()
        if query:
            orders = [
                o
                for o in orders
                if query in (str(o.number), self.store.customers[o.customer_id].name.lower())
            ]
        orders.sort(key=lambda o: -o.number)
        shown, pager = self.paginate(orders, request, PAGE_SIZE, q=request.get("q"))
        rows = [
            [
                link(f"Order #{o.number}", self.url(f"/sales/order/{o.number}")),
                text(f"Purchase Date: {o.date}"),
                text(f"Bill-to Name: {self.store.customers[o.customer_id].name}"),
                text(f"Grand Total: {money(o.total)}"),
                text(f"Status: {o.status}"),
            ]
            for o in shown
        ]
        return self._grid("Orders", "find_orders", request, len(orders), rows, *pager)

    def _order(self, order: Order) -> Page:
        customer = self.store.customers[order.customer_id]
        return self.headed(
            f"Order #{order.number}",
            text(f"Order Date: {order.date}"),
            text(f"Order Status: {order.status}"),
            link(customer.name, self.url(f"/customer/{customer.id}")),
            *self.order_contents(order, product_links=False),
            combobox("Status", "status", STATUSES, order.status),
            button("Update Status", "set_status", str(order.number)),
        )

    def _bestsellers(self, request: Request) -> Page:
        year = request.int("year", YEARS[-1])
        month = request.int("month", 0)
        if year not in YEARS or not 0 <= month <= 12:
            raise NotFound(request.path)
        periods = [link(str(y), self.url("/reports/bestsellers", year=y)) for y in YEARS]
        months = [
            link(MONTHS[m - 1], self.url("/reports/bestsellers", year=year, month=m)) for m in range(1, 13)
        ]
        period = f"{MONTHS[month - 1]} {year}" if month else str(year)
        ranked = bestsellers(self.store, year, month or None)[:10]
        rows = [
            [text(f"Rank {i}"), text(product.name), text(f"Quantity: {qty}")]
            for i, (product, qty) in enumerate(ranked, 1)
        ]
        return self.headed(
            "Bestsellers Report",
            group("navigation", *periods, name="Year"),
            group("navigation", *months, name="Month"),
            heading(f"Bestsellers in {period}"),
            listing(rows),
        )

    def operate(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        if op == "set_status":
            number = int(args[0])
            status = values.get("status", "")
            if status not in STATUSES:
                return Outcome(self.url(f"/sales/order/{number}"), f"Unknown status {status!r}.")
            self.state.statuses[number] = status
            return Outcome(self.url(f"/sales/order/{number}"), "You updated the order status.")
        if op == "save_product":
            pid = int(args[0])
            raw = values.get("price", "").strip().lstrip("$").replace(",", "")
            try:
                price = round(float(raw), 2)
            except ValueError:
                price = -1.0
            if not 0 < price < 100_000:
                return Outcome(self.url(f"/catalog/product/{pid}"), "Please enter a valid price.")
            self.state.prices[pid] = price
            return Outcome(self.url(f"/catalog/product/{pid}"), "You saved the product.")
        raise NotFound(op)
