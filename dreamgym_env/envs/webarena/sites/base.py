"""What every site is made of: page nodes, pages, URLs and the site interface.

A site builds a page from a URL path and query as a tree of :class:`Node` s (roles and names of
an accessibility tree, plus what a click or a submission does), and runs the operations its
buttons and forms name. The browser (:mod:`~dreamgym_env.envs.webarena.browser`) numbers the
nodes, adds what the user typed, and renders the tree.

The sites import this module as ``ui`` and write pages in its vocabulary (``ui.text``,
``ui.button``, ...); their links, all to their own pages, come from :meth:`Site.link`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Generic, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

Value = str | bool
TEXT_ROLES = frozenset({"textbox", "searchbox"})
T = TypeVar("T")
StateT = TypeVar("StateT")


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


def search_box(label: str, op: str = "search", value: str = "") -> Node:
    """A keyword box whose Enter runs the search ``op`` with its text as ``q`` (:meth:`Site.perform`)."""
    return textbox(label, "q", submit=op, value=value)


def combobox(name: str, field_name: str, options: tuple[str, ...], value: str) -> Node:
    return Node("combobox", name, {"hasPopup": "menu", "value": value}, field=field_name, options=options)


def text(value: str) -> Node:
    return Node("StaticText", value)


def heading(value: str) -> Node:
    return Node("heading", value)


def group(role: str, *children: Node, name: str = "") -> Node:
    return Node(role, name, children=list(children))


def listing(items: list[list[Node]], empty: str | None = None) -> Node:
    """A ``list`` of ``listitem`` s, one per item; without items, the text ``empty`` if given."""
    if not items and empty is not None:
        return text(empty)
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

    # before :meth:`int`, which would shadow the type in the annotations below it
    def number(self, prefix: str) -> int | None:
        """The number a path ``prefix<number>`` ends in (``/orders/7``: 7), else ``None``."""
        rest = self.path[len(prefix) :]
        return int(rest) if self.path.startswith(prefix) and rest.isdigit() else None

    def item(self, prefix: str, items: Sequence[T]) -> T | None:
        """The item a path ``prefix<index>`` names (``/place/3``: ``items[3]``), else ``None``."""
        index = self.number(prefix)
        return items[index] if index is not None and index < len(items) else None

    def int(self, key: str, default: int = 1) -> int:
        raw = self.query.get(key, "")
        return int(raw) if raw.isdigit() and len(raw) < 6 else default


def collapse_spaces(value: str) -> str:
    """``value`` without outer whitespace and with each inner run of it made one space."""
    return " ".join(value.split())


def named(options: Iterable[T], raw: str, name: Callable[[T], str] = str) -> T | None:
    """The first option whose ``name`` is ``raw`` in any case (outer spaces ignored), else ``None``."""
    folded = raw.strip().lower()
    return next((option for option in options if name(option).lower() == folded), None)


def with_all_words(items: Iterable[T], query: str, text_of: Callable[[T], str]) -> list[T]:
    """The items whose text has every word of ``query`` in it (any case); none for a query without words."""
    words = query.lower().split()
    return [item for item in items if words and all(w in text_of(item).lower() for w in words)]


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


class Site(ABC, Generic[StateT]):
    """One web site: pages built from its data and state, operations that change the state.

    Every page is a :meth:`frame`: the site's :meth:`navigation` above a ``main`` landmark.
    """

    host: str
    title: str
    """The home page's title."""
    title_template: str
    """Any other page's title, ``{}`` standing for what the page is about."""

    searches: Mapping[str, str] = {"search": "/search"}
    """The keyword searches: each operation's results path (its ``q`` is the typed ``q``).

    Most sites' search box runs ``search``; a site with other searches names them all.
    """

    def __init__(self, state: StateT) -> None:
        self.state = state

    @abstractmethod
    def navigation(self) -> Node:
        """The bar above the ``main`` landmark of every page."""

    @abstractmethod
    def page(self, request: Request) -> Page:
        """The page at ``request``; raises :class:`NotFound` for a URL the site does not have."""

    def perform(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        """Run a button's or form's operation with the values of the page's fields."""
        if op in self.searches:
            return Outcome(self.url(self.searches[op], q=collapse_spaces(values.get("q", ""))))
        return self.operate(op, args, values)

    @abstractmethod
    def operate(self, op: str, args: tuple[str, ...], values: Mapping[str, str]) -> Outcome:
        """Run an operation other than a search (:attr:`searches`); raises :class:`NotFound` for an unknown one."""

    def url(self, path: str = "/", **query: object) -> str:
        return make_url(self.host, path, **query)

    def link(self, name: str, path: str = "/", **query: object) -> Node:
        """A link to this site's page at ``path`` (the home page by default) with ``query``."""
        return Node("link", name, href=self.url(path, **query))

    def frame(self, title: str, *body: Node) -> Page:
        """A page titled after ``title`` (``""``: the home page) with ``body`` in its ``main`` landmark."""
        page_title = self.title_template.format(title) if title else self.title
        return Page(page_title, [self.navigation(), group("main", *body)])

    def headed(self, title: str, *body: Node) -> Page:
        """A :meth:`frame` whose ``main`` landmark opens with ``title`` as its heading."""
        return self.frame(title, heading(title), *body)

    def paginate(
        self, items: list[T], request: Request, size: int, **query: object
    ) -> tuple[list[T], list[Node]]:
        """The items of the page ``?p=`` asks for (1-based, clamped) and its pager nodes.

        The pager reads ``Previous`` / ``Page p of n`` / ``Next``; its links keep ``query``.
        """
        pages = max(1, -(-len(items) // size))
        page = min(max(request.int("p"), 1), pages)
        nodes: list[Node] = []
        if page > 1:
            nodes.append(self.link("Previous", request.path, **query, p=page - 1))
        if pages > 1:
            nodes.append(text(f"Page {page} of {pages}"))
        if page < pages:
            nodes.append(self.link("Next", request.path, **query, p=page + 1))
        return items[(page - 1) * size : page * size], nodes
