"""Task templates: WebArena's intents, instantiated over the seeded site data.

A :class:`Template` has an intent with ``{slot}`` s, the slot values it may take
(``candidates``) and ``resolve``, which checks slot values against the data and builds the
evaluator (:mod:`~dreamgym_env.envs.webarena.evaluators`). ``resolve`` also checks the
curriculum's generated variations (:mod:`~dreamgym_env.envs.webarena.task_variations`): an
unknown product, forum, project, user or place is a reason string, never an exception.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from dreamgym_env.envs.webarena.grammar import NOT_APPLICABLE
from dreamgym_env.envs.webarena.sites.admin import MONTHS
from dreamgym_env.envs.webarena.sites.base import collapse_spaces, make_url, named
from dreamgym_env.envs.webarena.sites.gitlab import ME as GITLAB_ME
from dreamgym_env.envs.webarena.sites.gitlab import ROLES, Project
from dreamgym_env.envs.webarena.sites.map import Place, Route
from dreamgym_env.envs.webarena.sites.reddit import Forum, Post
from dreamgym_env.envs.webarena.sites.store import ME as SHOP_ME
from dreamgym_env.envs.webarena.sites.store import STATUSES, YEARS, Order, Product, bestsellers, slug
from dreamgym_env.envs.webarena.world import SiteData

Kind = Literal["info", "state", "navigation"]
Slots = dict[str, str]
Resolved = tuple[Slots, dict[str, Any]]
Resolver = Callable[[SiteData, Slots], Resolved | str]
"""A template's ``resolve``: canonical slots and the evaluator, or why the slots do not fit the data."""
T = TypeVar("T")
COMMENTS = (
    "Thanks for sharing!",
    "Great post, I learned a lot.",
    "I disagree with this.",
    "Can you add a source?",
    "This is exactly what I needed.",
    "Interesting point of view.",
    "Following this thread.",
    "Welcome to the forum!",
)
NEW_TITLES = (
    "Weekly discussion thread",
    "What are you working on?",
    "Recommendations wanted",
    "Ask me anything",
    "My favourite finds this month",
    "A question for the experts",
)
ISSUE_TITLES = (
    "Broken link in the footer",
    "Add a dark theme",
    "Typo in the installation guide",
    "Support Python 3.12",
    "Flaky test on CI",
    "Improve startup time",
    "Crash when the config is empty",
    "Update the license year",
)


@dataclass(frozen=True)
class Template:
    """An intent with slots; ``resolve(data, slots)`` gives canonical slots and the evaluator, or why not."""

    id: str
    kind: Kind
    intent: str
    limit: int
    candidates: Callable[[SiteData, random.Random], Iterable[Slots]]
    resolve: Resolver

    @property
    def site(self) -> str:
        """The site the task is on: the id's part before the dot."""
        return self.id.partition(".")[0]

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.intent) if name)

    def instruction(self, slots: Slots) -> str:
        return self.intent.format(**slots)


def must_include(*refs: str) -> dict[str, Any]:
    return {"eval_types": ["string_match"], "reference_answers": {"must_include": list(refs)}}


def program(check: str, **args: Any) -> dict[str, Any]:
    return {"eval_types": ["program_state"], "program": {"check": check, **args}}


def at_url(spec: dict[str, Any], url: str) -> dict[str, Any]:
    """``spec`` with a ``url_match`` first, as WebArena's ``["url_match", "program_html"]`` tasks."""
    return {**spec, "eval_types": ["url_match", *spec["eval_types"]], "reference_url": url}


def url_match(url: str) -> dict[str, Any]:
    return {"eval_types": ["url_match"], "reference_url": url}


def page_includes(*texts: str, url: str = "last") -> dict[str, Any]:
    """A ``program_html`` check: the page at ``url`` (``"last"``: the page at stop) shows every text."""
    target = {"url": url, "locator": "", "required_contents": {"must_include": list(texts)}}
    return {"eval_types": ["program_html"], "program_html": [target]}


def not_applicable(note: str) -> dict[str, Any]:
    """An unachievable task's evaluator, as WebArena's configs write it."""
    return {
        "eval_types": ["string_match"],
        "reference_answers": {"fuzzy_match": NOT_APPLICABLE},
        "string_note": note,
    }


def _shuffled(rng: random.Random, items: Iterable[Any]) -> list[Any]:
    out = list(items)
    rng.shuffle(out)
    return out


# -- lookups: the object a slot names, or why there is none ---------------------------------------
def _number(raw: str) -> int | None:
    raw = raw.strip().lstrip("#")
    return int(raw) if raw.isdigit() and len(raw) < 9 else None


def _product(data: SiteData, slots: Slots) -> Product | str:
    found = data.store.product_named(slots.get("product", ""))
    return found if found is not None else f"the shop has no product {slots.get('product')!r}"


def _order(data: SiteData, slots: Slots) -> Order | None:
    number = _number(slots.get("order", ""))
    return next((o for o in data.store.orders if o.number == number), None)


def _forum(data: SiteData, slots: Slots) -> Forum | str:
    found = data.reddit.forum(slots.get("forum", ""))
    return found if found is not None else f"there is no forum {slots.get('forum')!r}"


def _post(data: SiteData, slots: Slots) -> Post | str:
    forum = _forum(data, slots)
    if isinstance(forum, str):
        return forum
    post = data.reddit.post_titled(forum.name, slots.get("post", ""))
    return post if post is not None else f"/f/{forum.name} has no post titled {slots.get('post')!r}"


def _project(data: SiteData, slots: Slots) -> Project | str:
    found = data.gitlab.project(slots.get("project", ""))
    return found if found is not None else f"there is no project {slots.get('project')!r}"


def _places(data: SiteData, slots: Slots) -> tuple[Place, Place] | str:
    names = [slots.get("start", ""), slots.get("end", "")]
    places = [named(data.map.places, n, lambda p: p.name) for n in names]
    if places[0] is None or places[1] is None:
        return f"the map has no place {names[0] if places[0] is None else names[1]!r}"
    if places[0] == places[1]:
        return "the start and the end are the same place"
    return places[0], places[1]


def _text(slots: Slots, key: str) -> str | None:
    """The slot's text with its spaces collapsed; ``None`` when empty or with a single quote."""
    text = collapse_spaces(slots.get(key, ""))
    return text if text and "'" not in text else None


# -- resolvers --------------------------------------------------------------------------------------
def _given(
    lookup: Callable[[SiteData, Slots], T | str],
) -> Callable[[Callable[[SiteData, Slots, T], Resolved | str]], Resolver]:
    """A resolver of what ``lookup`` finds: it gets the object a slot names, or returns why none."""

    def decorate(resolve_found: Callable[[SiteData, Slots, T], Resolved | str]) -> Resolver:
        def resolve(data: SiteData, slots: Slots) -> Resolved | str:
            found = lookup(data, slots)
            return found if isinstance(found, str) else resolve_found(data, slots, found)

        return resolve

    return decorate


def _r_product_fact(fact: str) -> Resolver:
    @_given(_product)
    def resolve(data: SiteData, slots: Slots, p: Product) -> Resolved | str:
        if fact == "price":
            return {"product": p.name}, must_include(f"{p.price:.2f}")
        if fact == "reviews":
            return {"product": p.name}, must_include(str(len(p.reviews)))
        if not p.reviews:
            return f"{p.name} has no reviews"
        return {"product": p.name}, must_include(f"{p.rating_percent}")

    return resolve


def _r_missing_price(data: SiteData, slots: Slots) -> Resolved | str:
    name = collapse_spaces(slots.get("product", ""))
    if not name or data.store.product_named(name) is not None:
        return f"the shop sells {name!r}: the task would be achievable"
    return {"product": name}, not_applicable(f"the shop has no product {name}")


@_given(_product)
def _r_cart(data: SiteData, slots: Slots, p: Product) -> Resolved | str:
    qty = _number(slots.get("qty", "1"))
    if qty is None or not 1 <= qty <= 99:
        return "the quantity must be from 1 to 99"
    out = {"product": p.name, **({"qty": str(qty)} if "qty" in slots else {})}
    return out, program("cart_contains", product_id=p.id, qty=qty if "qty" in slots else 0)


@_given(_product)
def _r_buy(data: SiteData, slots: Slots, p: Product) -> Resolved | str:
    return {"product": p.name}, program("order_placed", product_id=p.id)


def _r_my_order(fact: str) -> Resolver:
    def resolve(data: SiteData, slots: Slots) -> Resolved | str:
        order = _order(data, slots)
        if order is None or order.customer_id != SHOP_ME:
            return f"the signed-in customer has no order #{slots.get('order')}"
        answer = f"{order.total:.2f}" if fact == "total" else order.status
        return {"order": str(order.number)}, must_include(answer)

    return resolve


def _r_category(data: SiteData, slots: Slots) -> Resolved | str:
    category = named(data.store.categories, slots.get("category", ""))
    if category is None:
        return f"the shop has no category {slots.get('category')!r}"
    return {"category": category}, url_match(make_url("shopping.local", f"/category/{slug(category)}"))


def _r_set_status(data: SiteData, slots: Slots) -> Resolved | str:
    order, status = _order(data, slots), named(STATUSES, slots.get("status", ""))
    if order is None or status is None:
        return (
            f"no order #{slots.get('order')}" if order is None else f"no order status {slots.get('status')!r}"
        )
    if order.status == status:
        return f"order #{order.number} is already {status}"
    spec = program("order_status", number=order.number, status=status)
    return {"order": str(order.number), "status": status}, at_url(
        spec, make_url("admin.local", f"/sales/order/{order.number}")
    )


def _r_customer(fact: str) -> Resolver:
    def resolve(data: SiteData, slots: Slots) -> Resolved | str:
        customer = data.store.customer_named(slots.get("customer", ""))
        if customer is None:
            return f"there is no customer {slots.get('customer')!r}"
        if fact == "email":
            return {"customer": customer.name}, {
                "eval_types": ["string_match"],
                "reference_answers": {"exact_match": customer.email},
            }
        count = sum(o.customer_id == customer.id for o in data.store.orders)
        return {"customer": customer.name}, must_include(str(count))

    return resolve


def _r_order_total(data: SiteData, slots: Slots) -> Resolved | str:
    order = _order(data, slots)
    if order is None:
        return f"no order #{slots.get('order')}"
    return {"order": str(order.number)}, must_include(f"{order.total:.2f}")


def _r_best_month(data: SiteData, slots: Slots) -> Resolved | str:
    month, year = named(MONTHS, slots.get("month", "")), _number(slots.get("year", ""))
    if month is None or year not in YEARS:
        return f"the report covers the months of {YEARS[0]} to {YEARS[-1]}"
    ranked = bestsellers(data.store, year, MONTHS.index(month) + 1)
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return "no single best selling product in that month"
    return {"month": month, "year": str(year)}, must_include(ranked[0][0].name)


def _r_best_year(data: SiteData, slots: Slots) -> Resolved | str:
    n, year = _number(slots.get("n", "")), _number(slots.get("year", ""))
    if n is None or not 1 <= n <= 5 or year not in YEARS:
        return f"n must be from 1 to 5 and the year from {YEARS[0]} to {YEARS[-1]}"
    ranked = bestsellers(data.store, year)
    if len(ranked) <= n or ranked[n - 1][1] == ranked[n][1]:
        return f"no clear top-{n} in {year}"
    return {"n": str(n), "year": str(year)}, must_include(*(p.name for p, _ in ranked[:n]))


def _r_set_price(data: SiteData, slots: Slots) -> Resolved | str:
    p = _product(data, slots)
    try:
        price = round(float(slots.get("price", "").replace(",", "").lstrip("$")), 2)
    except ValueError:
        return f"not a price: {slots.get('price')!r}"
    if isinstance(p, str) or not 0 < price < 100_000 or abs(price - p.price) < 0.005:
        return p if isinstance(p, str) else "the new price must differ from the current one and be positive"
    return {"product": p.name, "price": f"{price:.2f}"}, program(
        "product_price", product_id=p.id, price=price
    )


def _r_toggle(
    check: str,
    slot: str,
    lookup: Callable[[SiteData, Slots], T | str],
    name: Callable[[T], str],
    seeded: Callable[[SiteData], frozenset[str]],
    moot: str,
) -> Callable[[bool], Resolver]:
    """The resolvers of tasks that turn a seeded on/off flag (subscribed, starred) to a value.

    ``lookup``: the slot's object or why none; ``name``: its name in the slot and in ``seeded``,
    the names whose flag is on; ``moot``: why a task is moot, ``{name}`` standing for the name
    and ``{not_}`` for ``"not "`` when the value is off.
    """

    def resolver(value: bool) -> Resolver:
        @_given(lookup)
        def resolve(data: SiteData, slots: Slots, found: T) -> Resolved | str:
            key = name(found)
            if (key in seeded(data)) == value:
                return moot.format(name=key, not_="" if value else "not ")
            return {slot: key}, program(check, **{slot: key}, value=value)

        return resolve

    return resolver


_r_subscribe = _r_toggle(
    "subscribed",
    "forum",
    _forum,
    lambda forum: forum.name,
    lambda data: data.reddit.subscribed,
    "already {not_}subscribed to /f/{name}",
)
_r_star = _r_toggle(
    "starred",
    "project",
    _project,
    lambda project: project.path,
    lambda data: data.gitlab.starred,
    "{name} is already {not_}starred",
)


def _r_vote(direction: int) -> Resolver:
    @_given(_post)
    def resolve(data: SiteData, slots: Slots, post: Post) -> Resolved | str:
        return {"post": post.title, "forum": post.forum}, program(
            "voted", post_id=post.id, direction=direction
        )

    return resolve


@_given(_post)
def _r_comment(data: SiteData, slots: Slots, post: Post) -> Resolved | str:
    text = _text(slots, "comment")
    if text is None:
        return "the comment must be non-empty, without single quotes"
    spec = program("commented", post_id=post.id, text=text)
    return {"comment": text, "post": post.title, "forum": post.forum}, at_url(
        spec, make_url("reddit.local", post.path)
    )


def _new_titled(slots: Slots, owner: Slots, titles: Iterable[str], taken: str, url: str) -> Resolved | str:
    """A task creating something titled by the ``title`` slot in ``owner`` (its slot), shown at ``url``.

    ``titles``: those already there; none may contain the new title, or the page would show it
    before the task is done (``taken``: the reason, which the title ends).
    """
    title = _text(slots, "title")
    if title is None:
        return "the title must be non-empty, without single quotes"
    if any(title.lower() in t.lower() for t in titles):
        return f"{taken} {title!r}"
    return {"title": title, **owner}, at_url(page_includes(title), url)


@_given(_forum)
def _r_new_post(data: SiteData, slots: Slots, forum: Forum) -> Resolved | str:
    titles = (p.title for p in data.reddit.posts if p.forum == forum.name)
    taken = f"/f/{forum.name} already shows a post titled"
    # the new post's page (where the site lands) shows its title; WebArena checks the page content
    url = make_url("reddit.local", f"/f/{forum.name}")
    return _new_titled(slots, {"forum": forum.name}, titles, taken, url)


def _r_post_fact(fact: str) -> Resolver:
    @_given(_post)
    def resolve(data: SiteData, slots: Slots, post: Post) -> Resolved | str:
        answer = str(len(post.comments)) if fact == "comments" else post.author
        return {"post": post.title, "forum": post.forum}, must_include(answer)

    return resolve


@_given(_project)
def _r_new_issue(data: SiteData, slots: Slots, project: Project) -> Resolved | str:
    titles = (i.title for i in project.issues)
    taken = f"{project.path} already has an issue titled"
    return _new_titled(slots, {"project": project.path}, titles, taken, _issues_url(project))


@_given(_project)
def _r_member(data: SiteData, slots: Slots, project: Project) -> Resolved | str:
    user, role = data.gitlab.user(slots.get("user", "")), named(ROLES, slots.get("role", ""))
    if user is None:
        return f"there is no user {slots.get('user')!r}"
    if role is None:
        return f"roles are {', '.join(ROLES)}"
    if dict(project.members).get(user) in ("Owner", role):
        return f"{user} is already {dict(project.members)[user]} of {project.path}"
    spec = program("member", project=project.path, user=user, role=role)
    return {"user": user, "role": role, "project": project.path}, at_url(
        spec, make_url("gitlab.local", f"/{project.path}/-/project_members")
    )


@_given(_project)
def _r_close_issue(data: SiteData, slots: Slots, project: Project) -> Resolved | str:
    issue = named(project.issues, slots.get("issue", ""), lambda i: i.title)
    if issue is None or issue.state != "opened":
        return f"{project.path} has no open issue titled {slots.get('issue')!r}"
    return {"issue": issue.title, "project": project.path}, program(
        "issue_state", project=project.path, iid=issue.iid, state="closed"
    )


def _r_project_fact(fact: str) -> Resolver:
    @_given(_project)
    def resolve(data: SiteData, slots: Slots, project: Project) -> Resolved | str:
        if fact == "open":
            count = sum(i.state == "opened" for i in project.issues)
            return {"project": project.path}, at_url(must_include(str(count)), _issues_url(project))
        return {"project": project.path}, must_include(str(project.stars))

    return resolve


@_given(_project)
def _r_mr_author(data: SiteData, slots: Slots, project: Project) -> Resolved | str:
    mr = named(project.merge_requests, slots.get("mr", ""), lambda m: m.title)
    if mr is None:
        return f"{project.path} has no merge request titled {slots.get('mr')!r}"
    return {"mr": mr.title, "project": project.path}, must_include(mr.author)


def _r_route(mode: str, fact: str) -> Resolver:
    @_given(_places)
    def resolve(data: SiteData, slots: Slots, places: tuple[Place, Place]) -> Resolved | str:
        route = Route(places[0], places[1], mode)
        ends = {"start": places[0].name, "end": places[1].name}
        if fact == "directions":
            query = {"from": places[0].name, "to": places[1].name, "mode": mode}
            return ends, url_match(make_url("map.local", "/directions", **query))
        return ends, must_include(f"{route.km}" if fact == "distance" else route.time)

    return resolve


def _r_address(data: SiteData, slots: Slots) -> Resolved | str:
    place = named(data.map.places, slots.get("place", ""), lambda p: p.name)
    if place is None:
        return f"the map has no place {slots.get('place')!r}"
    return {"place": place.name}, {
        "eval_types": ["string_match"],
        "reference_answers": {"fuzzy_match": [place.address]},
    }


@_given(_forum)
def _r_forum_page(data: SiteData, slots: Slots, forum: Forum) -> Resolved | str:
    return {"forum": forum.name}, url_match(make_url("reddit.local", f"/f/{forum.name}"))


@_given(_project)
def _r_issues_page(data: SiteData, slots: Slots, project: Project) -> Resolved | str:
    return {"project": project.path}, url_match(_issues_url(project))


def _issues_url(project: Project) -> str:
    return make_url("gitlab.local", f"/{project.path}/-/issues")


# -- candidates ---------------------------------------------------------------------------------------
def _products(data: SiteData, rng: random.Random) -> list[Slots]:
    return [{"product": p.name} for p in _shuffled(rng, data.store.products)]


def _routes(data: SiteData, rng: random.Random) -> list[Slots]:
    pairs = [(a.name, b.name) for a in data.map.places for b in data.map.places if a != b]
    return [{"start": a, "end": b} for a, b in _shuffled(rng, pairs)]


def _posts(data: SiteData, rng: random.Random) -> list[Slots]:
    return [{"post": p.title, "forum": p.forum} for p in _shuffled(rng, data.reddit.posts)]


def _projects(data: SiteData, rng: random.Random) -> list[Slots]:
    return [{"project": p.path} for p in _shuffled(rng, data.gitlab.projects)]


def _missing_products(data: SiteData, rng: random.Random) -> list[Slots]:
    """Names of the store's pattern (brand, line, noun) that it does not sell."""
    nouns = sorted({p.name.split()[-1] for p in data.store.products})
    names = [f"{p.name.rsplit(' ', 1)[0]} {noun}" for p in data.store.products for noun in nouns]
    return [{"product": n} for n in _shuffled(rng, names) if data.store.product_named(n) is None]


def _customers(data: SiteData, rng: random.Random) -> list[Slots]:
    return [{"customer": c.name} for c in _shuffled(rng, data.store.customers)]


def _forums(data: SiteData, rng: random.Random) -> list[Slots]:
    return [{"forum": f.name} for f in data.reddit.forums]


def _mine(data: SiteData, rng: random.Random) -> list[Slots]:
    return [{"order": str(o.number)} for o in data.store.orders if o.customer_id == SHOP_ME]


TEMPLATES: tuple[Template, ...] = (
    Template(
        "shopping.price", "info", "What is the price of {product}?", 50, _products, _r_product_fact("price")
    ),
    Template(
        "shopping.review_count",
        "info",
        "How many reviews does {product} have?",
        50,
        _products,
        _r_product_fact("reviews"),
    ),
    Template(
        "shopping.rating",
        "info",
        "What is the rating of {product}, in percent?",
        40,
        _products,
        _r_product_fact("rating"),
    ),
    Template(
        "shopping.price_unavailable",
        "info",
        "What is the price of {product}?",
        70,
        _missing_products,
        _r_missing_price,
    ),
    Template("shopping.add_to_cart", "state", "Add {product} to my cart.", 70, _products, _r_cart),
    Template(
        "shopping.add_qty",
        "state",
        "Add {qty} units of {product} to my cart.",
        50,
        lambda d, r: [{**s, "qty": str(r.randint(2, 5))} for s in _products(d, r)],
        _r_cart,
    ),
    Template("shopping.buy", "state", "Buy {product}.", 60, _products, _r_buy),
    Template(
        "shopping.order_total",
        "info",
        "What was the order total of my order #{order}?",
        30,
        _mine,
        _r_my_order("total"),
    ),
    Template(
        "shopping.order_status",
        "info",
        "What is the status of my order #{order}?",
        30,
        _mine,
        _r_my_order("status"),
    ),
    Template(
        "shopping.category",
        "navigation",
        "Show me the products of the {category} category.",
        10,
        lambda d, r: [{"category": c} for c in d.store.categories],
        _r_category,
    ),
    Template(
        "shopping_admin.set_status",
        "state",
        "Change the status of order #{order} to {status}.",
        80,
        lambda d, r: [
            {"order": str(o.number), "status": r.choice(STATUSES)} for o in _shuffled(r, d.store.orders)
        ],
        _r_set_status,
    ),
    Template(
        "shopping_admin.customer_orders",
        "info",
        "How many orders did customer {customer} place?",
        40,
        _customers,
        _r_customer("orders"),
    ),
    Template(
        "shopping_admin.customer_email",
        "info",
        "What is the email address of customer {customer}?",
        40,
        _customers,
        _r_customer("email"),
    ),
    Template(
        "shopping_admin.order_total",
        "info",
        "What is the grand total of order #{order}?",
        40,
        lambda d, r: [{"order": str(o.number)} for o in _shuffled(r, d.store.orders)],
        _r_order_total,
    ),
    Template(
        "shopping_admin.bestseller_month",
        "info",
        "What is the top-1 best selling product in {month} {year}?",
        36,
        lambda d, r: [{"month": m, "year": str(y)} for y in YEARS for m in MONTHS],
        _r_best_month,
    ),
    Template(
        "shopping_admin.bestsellers_year",
        "info",
        "What are the top-{n} best selling products in {year}?",
        15,
        lambda d, r: [{"n": str(n), "year": str(y)} for y in YEARS for n in range(1, 6)],
        _r_best_year,
    ),
    Template(
        "shopping_admin.set_price",
        "state",
        "Update the price of {product} to ${price}.",
        60,
        lambda d, r: [
            {**s, "price": f"{r.randint(5, 150)}.{r.choice(('00', '49', '99'))}"} for s in _products(d, r)
        ],
        _r_set_price,
    ),
    Template(
        "reddit.subscribe", "state", "Subscribe to the forum /f/{forum}.", 12, _forums, _r_subscribe(True)
    ),
    Template(
        "reddit.unsubscribe",
        "state",
        "Unsubscribe from the forum /f/{forum}.",
        12,
        _forums,
        _r_subscribe(False),
    ),
    Template("reddit.upvote", "state", "Upvote the post '{post}' in /f/{forum}.", 40, _posts, _r_vote(1)),
    Template(
        "reddit.downvote", "state", "Downvote the post '{post}' in /f/{forum}.", 40, _posts, _r_vote(-1)
    ),
    Template(
        "reddit.comment",
        "state",
        "Post a comment '{comment}' on the post '{post}' in /f/{forum}.",
        50,
        lambda d, r: [{**s, "comment": r.choice(COMMENTS)} for s in _posts(d, r)],
        _r_comment,
    ),
    Template(
        "reddit.new_post",
        "state",
        "Create a post titled '{title}' in /f/{forum}.",
        30,
        lambda d, r: [
            {"title": t, "forum": f.name}
            for f in _shuffled(r, d.reddit.forums)
            for t in _shuffled(r, NEW_TITLES)
        ],
        _r_new_post,
    ),
    Template(
        "reddit.forum_page",
        "navigation",
        "Show me the forum /f/{forum}.",
        20,
        lambda d, r: [{"forum": f.name} for f in _shuffled(r, d.reddit.forums)],
        _r_forum_page,
    ),
    Template(
        "reddit.comment_count",
        "info",
        "How many comments does the post '{post}' in /f/{forum} have?",
        40,
        _posts,
        _r_post_fact("comments"),
    ),
    Template(
        "reddit.author", "info", "Who posted '{post}' in /f/{forum}?", 40, _posts, _r_post_fact("author")
    ),
    Template("gitlab.star", "state", "Star the project {project}.", 24, _projects, _r_star(True)),
    Template("gitlab.unstar", "state", "Unstar the project {project}.", 24, _projects, _r_star(False)),
    Template(
        "gitlab.new_issue",
        "state",
        "Create an issue titled '{title}' in the project {project}.",
        40,
        lambda d, r: [{**s, "title": r.choice(ISSUE_TITLES)} for s in _projects(d, r) * 2],
        _r_new_issue,
    ),
    Template(
        "gitlab.add_member",
        "state",
        "Add {user} as a {role} of the project {project}.",
        50,
        lambda d, r: [
            {**s, "user": u, "role": r.choice(ROLES)}
            for s in _projects(d, r)
            for u in r.sample([u for u, _ in d.gitlab.users if u != GITLAB_ME], 3)
        ],
        _r_member,
    ),
    Template(
        "gitlab.close_issue",
        "state",
        "Close the issue '{issue}' in the project {project}.",
        60,
        lambda d, r: _shuffled(
            r, [{"issue": i.title, "project": p.path} for p in d.gitlab.projects for i in p.issues]
        ),
        _r_close_issue,
    ),
    Template(
        "gitlab.open_issues",
        "info",
        "How many open issues does the project {project} have?",
        24,
        _projects,
        _r_project_fact("open"),
    ),
    Template(
        "gitlab.issues_page",
        "navigation",
        "Show me the issues of the project {project}.",
        24,
        _projects,
        _r_issues_page,
    ),
    Template(
        "gitlab.stars",
        "info",
        "How many stars does the project {project} have?",
        24,
        _projects,
        _r_project_fact("stars"),
    ),
    Template(
        "gitlab.mr_author",
        "info",
        "Who created the merge request '{mr}' in the project {project}?",
        40,
        lambda d, r: _shuffled(
            r, [{"mr": m.title, "project": p.path} for p in d.gitlab.projects for m in p.merge_requests]
        ),
        _r_mr_author,
    ),
    Template(
        "map.drive_time",
        "info",
        "How long does it take to drive from {start} to {end}?",
        35,
        _routes,
        _r_route("car", "time"),
    ),
    Template(
        "map.walk_time",
        "info",
        "How long does it take to walk from {start} to {end}?",
        30,
        _routes,
        _r_route("foot", "time"),
    ),
    Template(
        "map.bike_time",
        "info",
        "How long does it take to bike from {start} to {end}?",
        20,
        _routes,
        _r_route("bicycle", "time"),
    ),
    Template(
        "map.distance",
        "info",
        "What is the driving distance in km from {start} to {end}?",
        30,
        _routes,
        _r_route("car", "distance"),
    ),
    Template(
        "map.directions",
        "navigation",
        "Show me the driving directions from {start} to {end}.",
        50,
        _routes,
        _r_route("car", "directions"),
    ),
    Template(
        "map.address",
        "info",
        "What is the address of {place}?",
        30,
        lambda d, r: [{"place": p.name} for p in _shuffled(r, d.map.places)],
        _r_address,
    ),
)
TEMPLATES_BY_ID = {t.id: t for t in TEMPLATES}
