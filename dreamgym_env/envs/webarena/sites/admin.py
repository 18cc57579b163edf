"""``shopping_admin``: the store's admin panel at ``http://admin.local``.

URLs: ``/`` (dashboard), ``/sales/order?q=...&p=N`` (orders grid; the search matches an order
number or a customer name), ``/sales/order/<number>`` (with the status form),
``/customer?q=...``, ``/customer/<id>``, ``/catalog/product?q=...``, ``/catalog/product/<id>``
(with the price form) and ``/reports/bestsellers?year=Y&month=M``.
"""

from __future__ import annotations

from collections.abc import Mapping

from dreamgym_env.envs.webarena.sites import base as ui
from dreamgym_env.envs.webarena.sites.base import NotFound, Outcome, Request, collapse_spaces
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

    def navigation(self) -> ui.Node:
        return ui.group("navigation", *(self.link(name, path) for name, path in MENU))

    def page(self, request: Request) -> ui.Page:
        path = request.path
        if path == "/":
            orders = self.state.orders()
            return self.headed(
                "Dashboard",
                ui.text(f"Lifetime Sales: {money(sum(o.total for o in orders))}"),
                ui.text(f"Orders: {len(orders)}"),
                ui.text(f"Customers: {len(self.store.customers)}"),
            )
        if path == "/sales/order":
            return self._orders(request)
        number = request.number("/sales/order/")
        if number is not None and (order := self.state.order(number)) is not None:
            return self._order(order)
        if path == "/customer":
            query = request.get("q").lower()
            found = [c for c in self.store.customers if query in f"{c.name} {c.email}".lower()]
            rows = [[self.link(c.name, f"/customer/{c.id}"), ui.text(c.email)] for c in found]
            return self._grid("Customers", "find_customers", request, len(found), rows[:PAGE_SIZE])
        if (c := request.item("/customer/", self.store.customers)) is not None:
            return self.headed(
                c.name,
                ui.text(f"Email: {c.email}"),
                ui.text(f"Phone: {c.phone}"),
                ui.text(f"City: {c.city}"),
                ui.text(f"Customer Since: {c.since}"),
                self.link("Orders", "/sales/order", q=c.name),
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
                    self.link(p.name, f"/catalog/product/{p.id}"),
                    ui.text(p.sku),
                    self.price_text(p),
                    ui.text(f"Quantity: {p.stock}"),
                ]
                for p in shown
            ]
            return self._grid("Products", "find_products", request, len(products), rows, *pager)
        if (p := request.item("/catalog/product/", self.store.products)) is not None:
            return self.headed(
                p.name,
                ui.text(f"SKU: {p.sku}"),
                ui.text(f"Category: {p.category}"),
                ui.textbox("Price", "price", value=f"{self.state.price(p):.2f}", required=True),
                ui.button("Save", "save_product", str(p.id)),
            )
        if path == "/reports/bestsellers":
            return self._bestsellers(request)
        raise NotFound(path)

    def _grid(
        self, title: str, op: str, request: Request, found: int, rows: list[list[ui.Node]], *pager: ui.Node
    ) -> ui.Page:
        """A searchable grid: the keyword box (Enter runs ``op``), the records found and their rows."""
        return self.headed(
            title,
            ui.search_box("Search by keyword", op, request.get("q")),
            ui.text(f"{found} records found"),
            ui.listing(rows),
            *pager,
        )

    def _orders(self, request: Request) -> ui.Page:
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
                self.link(f"Order #{o.number}", f"/sales/order/{o.number}"),
                ui.text(f"Purchase Date: {o.date}"),
                ui.text(f"Bill-to Name: {self.store.customers[o.customer_id].name}"),
                ui.text(f"Grand Total: {money(o.total)}"),
                ui.text(f"Status: {o.status}"),
            ]
            for o in shown
        ]
        return self._grid("Orders", "find_orders", request, len(orders), rows, *pager)

    def _order(self, order: Order) -> ui.Page:
        customer = self.store.customers[order.customer_id]
        return self.headed(
            f"Order #{order.number}",
            ui.text(f"Order Date: {order.date}"),
            ui.text(f"Order Status: {order.status}"),
            self.link(customer.name, f"/customer/{customer.id}"),
            *self.order_contents(order, product_links=False),
            ui.combobox("Status", "status", STATUSES, order.status),
            ui.button("Update Status", "set_status", str(order.number)),
        )

    def _bestsellers(self, request: Request) -> ui.Page:
        year = request.int("year", YEARS[-1])
        month = request.int("month", 0)
        if year not in YEARS or not 0 <= month <= 12:
            raise NotFound(request.path)
        periods = [self.link(str(y), "/reports/bestsellers", year=y) for y in YEARS]
        months = [self.link(MONTHS[m - 1], "/reports/bestsellers", year=year, month=m) for m in range(1, 13)]
        period = f"{MONTHS[month - 1]} {year}" if month else str(year)
        ranked = bestsellers(self.store, year, month or None)[:10]
        rows = [
            [ui.text(f"Rank {i}"), ui.text(product.name), ui.text(f"Quantity: {qty}")]
            for i, (product, qty) in enumerate(ranked, 1)
        ]
        return self.headed(
            "Bestsellers Report",
            ui.group("navigation", *periods, name="Year"),
            ui.group("navigation", *months, name="Month"),
            ui.heading(f"Bestsellers in {period}"),
            ui.listing(rows),
        )

    def operate(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        if op == "set_status":
            number = int(args[0])
            status = values.get("status", "")
            order_url = self.url(f"/sales/order/{number}")
            if status not in STATUSES:
                return Outcome(order_url, f"Unknown status {status!r}.")
            self.state.statuses[number] = status
            return Outcome(order_url, "You updated the order status.")
        if op == "save_product":
            pid = int(args[0])
            product_url = self.url(f"/catalog/product/{pid}")
            raw = values.get("price", "").strip().lstrip("$").replace(",", "")
            try:
                price = round(float(raw), 2)
            except ValueError:
                price = -1.0
            if not 0 < price < 100_000:
                return Outcome(product_url, "Please enter a valid price.")
            self.state.prices[pid] = price
            return Outcome(product_url, "You saved the product.")
        raise NotFound(op)
