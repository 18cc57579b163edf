"""What every site is made of: page nodes, pages, URLs and the site interface.

A site builds a page from a URL path and query as a tree of :class:`Node` s (roles and names of
an accessibility tree, plus what a click or a submission does), and runs the operations its
buttons and forms name. The browser (:mod:`~dreamgym_env.envs.webarena.browser`) numbers the
nodes, adds what the user typed, and renders the tree.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

Value = str | bool
TEXT_ROLES = frozenset({"textbox", "searchbox"})


@dataclass(slots=True)
class Node:
    """One accessibility-tree node and what it does.

    ``href``: a link's target. ``op``/``args``: the site operation a button runs. ``field``: the
    form field a textbox or combobox edits; ``submit``: the operation Enter in that textbox
    runs (with ``args``); ``options``: a combobox's choices (its ``value`` property is the default choice).
    """

    role: str
    name: str = ""
    props: dict[str, Value] = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)
    href: str | None = None
    op: str | None = None
    args: tuple[str, ...] = ()
    field: str | None = None
    submit: str | None = None
    options: tuple[str, ...] = ()


def link(name: str, href: str) -> Node:
    return Node("link", name, href=href)


def button(name: str, op: str, *args: str) -> Node:
    return Node("button", name, op=op, args=args)


def textbox(
    name: str,
    field_name: str,
    *,
    submit: str | None = None,
    args: tuple[str, ...] = (),
    value: str = "",
    required: bool = False,
) -> Node:
    """A text field; Enter runs ``submit(*args)``; ``value`` is its initial content."""
    props: dict[str, Value] = {"required": required}
    if value:
        props["value"] = value
    return Node("textbox", name, props, args=args, field=field_name, submit=submit)


def combobox(name: str, field_name: str, options: tuple[str, ...], value: str) -> Node:
    return Node("combobox", name, {"hasPopup": "menu", "value": value}, field=field_name, options=options)


def text(value: str) -> Node:
    return Node("StaticText", value)


def heading(value: str) -> Node:
    return Node("heading", value)


def group(role: str, *children: Node, name: str = "") -> Node:
    return Node(role, name, children=list(children))


def listing(items: list[list[Node]]) -> Node:
    """A ``list`` of ``listitem`` s, one per item."""
    return Node("list", children=[Node("listitem", children=item) for item in items])


@dataclass(frozen=True)
class Page:
    """A page a site built: its title and the tree under the root (``RootWebArea``)."""

    title: str
    body: list[Node]


@dataclass(frozen=True)
class Outcome:
    """What an operation did: the URL to show next and a message the page shows once."""

    url: str
    message: str = ""


class NotFound(Exception):
    """The site has no page at this URL (the browser reports it as an invalid ``goto``)."""


@dataclass(frozen=True)
class Request:
    """A parsed URL of a site: its path and query."""

    path: str
    query: Mapping[str, str]

    def get(self, key: str, default: str = "") -> str:
        return self.query.get(key, default)

    def int(self, key: str, default: int = 1) -> int:
        raw = self.query.get(key, "")
        return int(raw) if raw.isdigit() and len(raw) < 6 else default


def split_url(url: str) -> tuple[str, Request]:
    """``(host, request)`` of a URL (scheme optional, path normalised without its trailing slash)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    path = "/" + "/".join(segment for segment in parts.path.split("/") if segment)
    return parts.netloc.lower(), Request(path, dict(parse_qsl(parts.query)))


def make_url(host: str, path: str, **query: object) -> str:
    """``http://host/path?query`` with empty query values left out."""
    params = tuple((k, str(v)) for k, v in query.items() if v not in ("", None))
    return _url(host, path, params)


@lru_cache(maxsize=65_536)
def _url(host: str, path: str, params: tuple[tuple[str, str], ...]) -> str:
    # pages link the same few thousand URLs over and over: quoting them once saves a fifth of a step
    suffix = f"?{urlencode(params)}" if params else ""
    return f"http://{host}{quote(path, safe='/:-_.~')}{suffix}"


def paginate(items: list, page: int, size: int) -> tuple[list, int]:
    """The items of page ``page`` (1-based, clamped) and the number of pages."""
    pages = max(1, -(-len(items) // size))
    page = min(max(page, 1), pages)
    return items[(page - 1) * size : page * size], pages


def pager(host: str, path: str, page: int, pages: int, **query: object) -> list[Node]:
    """``Previous`` / ``Page p of n`` / ``Next`` nodes of a paginated list."""
    nodes: list[Node] = []
    if page > 1:
        nodes.append(link("Previous", make_url(host, path, **query, p=page - 1)))
    if pages > 1:
        nodes.append(text(f"Page {page} of {pages}"))
    if page < pages:
        nodes.append(link("Next", make_url(host, path, **query, p=page + 1)))
    return nodes


def unique_names(
    rng: random.Random, first: list[str], second: list[str], count: int, sep: str = " "
) -> list[str]:
    """``count`` distinct ``first + sep + second`` combinations in a seeded order."""
    pairs = [f"{a}{sep}{b}" for a in first for b in second]
    if count > len(pairs):
        raise ValueError(f"only {len(pairs)} combinations for {count} names")
    return rng.sample(pairs, count)


class Site(ABC):
    """One web site: pages built from its data and state, operations that change the state."""

    host: str
    title: str

    @abstractmethod
    def page(self, request: Request) -> Page:
        """The page at ``request``; raises :class:`NotFound` for a URL the site does not have."""

    @abstractmethod
    def perform(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        """Run a button's or form's operation with the values of the page's fields."""

    def url(self, path: str = "/", **query: object) -> str:
        return make_url(self.host, path, **query)
