"""A browser over the sites of a :class:`~dreamgym_env.envs.webarena.world.World`.

It keeps tabs with their history, what was typed into the current page and where it is
scrolled; it numbers a page's elements in depth-first order from 1 (so an element keeps its id
while the page stays the same), shows the part in the viewport, and carries out WebArena's
actions. Typing replaces a field's text (WebArena's agents clear a field before typing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from dreamgym_env.envs.webarena.grammar import Command
from dreamgym_env.envs.webarena.sites.base import TEXT_ROLES, Node, NotFound, Outcome, Page, Value, split_url
from dreamgym_env.envs.webarena.state import SCROLL_STEP, VIEWPORT, ObservationMode, render_elements
from dreamgym_env.envs.webarena.world import World

BLANK = "about:blank"


@dataclass(slots=True)
class Element:
    """A numbered element of the current page (the ``ElementLike`` the renderer takes)."""

    id: int
    role: str
    name: str
    depth: int
    properties: dict[str, Value]
    node: Node


@dataclass
class Tab:
    history: list[str]
    index: int = 0
    values: dict[str, str] = field(default_factory=dict)
    focus: str | None = None
    expanded: set[str] = field(default_factory=set)
    scroll: int = 0
    message: str = ""

    @property
    def url(self) -> str:
        return self.history[self.index]

    def clear(self, message: str = "") -> None:
        """Forget what was typed, focused, expanded and scrolled (a page was opened), showing ``message``."""
        self.values, self.focus, self.expanded, self.scroll, self.message = {}, None, set(), 0, message


def _lower_host(url: str) -> str:
    """``url`` with its scheme and host in lower case, as Chromium shows a URL it navigated to."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()))


class ActionFailed(Exception):
    """The action cannot be carried out here (the env reports it as an invalid action)."""


class Browser:
    """Tabs over one world's sites; :meth:`act` runs one parsed action."""

    def __init__(self, world: World, url: str) -> None:
        self.world = world
        self.tabs = [Tab([url])]
        self.active = 0
        self.version = 0
        self._view: tuple[str, list[Element]] | None = None
        self._titles: dict[tuple[str, int], str] = {}
        self._pages: tuple[int, dict[str, Page]] = (0, {})
        self.load(url)

    @classmethod
    def with_tabs(cls, world: World, histories: list[tuple[list[str], int]], active: int) -> Browser:
        """A browser whose tabs have these histories (URLs, position), showing tab ``active``'s page.

        Raises :class:`NotFound` when the active tab's page is no site's, :class:`ValueError`
        for a position or tab outside the lists.
        """
        if not 0 <= active < len(histories) or not all(0 <= i < len(urls) for urls, i in histories):
            raise ValueError("a tab's position or the active tab is outside the history")
        urls, index = histories[active]
        browser = cls(world, urls[index])
        browser.tabs = [Tab(list(urls), index) for urls, index in histories]
        browser.active = active
        return browser

    @property
    def tab(self) -> Tab:
        return self.tabs[self.active]

    @property
    def url(self) -> str:
        return self.tab.url

    # -- pages ---------------------------------------------------------------------------------
    def load(self, url: str) -> Page:
        """The page at ``url`` now; raises :class:`NotFound` for a URL no site has."""
        if url == BLANK:
            return Page("", [])  # Chromium's about:blank has an empty title
        # the sites change only through a form (which bumps the version): until then a URL's page
        # is the same, and navigating builds it once, not once to check it and once to number it
        version, pages = self._pages
        if version != self.version:
            pages = {}
            self._pages = (self.version, pages)
        if url not in pages:
            try:
                host, request = split_url(url)
            except ValueError as exc:  # urllib refuses it ("http://[x/": an invalid IPv6 host)
                raise NotFound(url) from exc
            site = self.world.by_host.get(host)
            if site is None:
                raise NotFound(url)
            pages[url] = site.page(request)
        return pages[url]

    def title(self, url: str) -> str:
        key = (url, self.version)
        if key not in self._titles:
            self._titles[key] = self.load(url).title
        return self._titles[key]

    def elements(self) -> list[Element]:
        """Every element of the current page, numbered, with what was typed and focused."""
        if self._view is None or self._view[0] != self.url:
            self._view = (self.url, self._number(self.load(self.url)))
        return self._view[1]

    def _number(self, page: Page) -> list[Element]:
        tab = self.tab
        out = [Element(1, "RootWebArea", page.title, 0, {"focused": tab.focus is None}, Node("RootWebArea"))]
        body = (
            [Node("alert", children=[Node("StaticText", tab.message)])] if tab.message else []
        ) + page.body

        def visit(node: Node, depth: int) -> None:
            props = node.props
            if node.field is not None:
                props = dict(props)
                if node.field in tab.values:
                    props["value"] = tab.values[node.field]
                if tab.focus == node.field:
                    props = {"focused": True, **props}
                if node.role == "combobox":
                    props["expanded"] = node.field in tab.expanded
            out.append(Element(len(out) + 1, node.role, node.name, depth, props, node))
            for child in node.children:
                visit(child, depth + 1)
            if node.role == "combobox" and node.field in tab.expanded:
                chosen = props.get("value")
                for option in node.options:
                    out.append(
                        Element(
                            len(out) + 1,
                            "option",
                            option,
                            depth + 1,
                            {"selected": option == chosen},
                            Node("option", option, field=node.field),
                        )
                    )

        for node in body:
            visit(node, 1)
        return out

    def visible(self) -> list[Element]:
        """The root and the elements in the viewport."""
        everything = self.elements()
        return [everything[0], *everything[1 + self.tab.scroll : 1 + self.tab.scroll + VIEWPORT]]

    @property
    def more_above(self) -> bool:
        return self.tab.scroll > 0

    @property
    def more_below(self) -> bool:
        return self.tab.scroll + VIEWPORT < len(self.elements()) - 1

    def tab_titles(self) -> list[str]:
        """Each tab's page title (the current page's from its numbered root, without a reload)."""
        return [
            self.elements()[0].name if i == self.active else self.title(tab.url)
            for i, tab in enumerate(self.tabs)
        ]

    def render(self, mode: ObservationMode = "axtree") -> str:
        return render_elements(
            self.url, self.tab_titles(), self.active, self.visible(), mode, self.more_above, self.more_below
        )

    def _changed(self) -> None:
        self._view = None

    def set_view(
        self,
        *,
        message: str = "",
        scroll: int = 0,
        values: dict[str, str] | None = None,
        focus: str | None = None,
        expanded: set[str] | None = None,
    ) -> None:
        """Show the current page as a tab left it: its message, scroll, typed values, focus and open comboboxes."""
        tab = self.tab
        tab.message, tab.scroll, tab.focus = message, scroll, focus
        tab.values, tab.expanded = dict(values or {}), set(expanded or ())
        self._changed()

    # -- navigation ----------------------------------------------------------------------------
    def navigate(self, url: str, message: str = "") -> None:
        """Open ``url`` in the current tab (a new history entry unless it is the current URL)."""
        self.load(url)
        tab = self.tab
        if url != tab.url:
            del tab.history[tab.index + 1 :]
            tab.history.append(url)
            tab.index += 1
        tab.clear(message)
        self._changed()

    def _perform(self, host_url: str, op: str, args: tuple[str, ...]) -> None:
        host, _ = split_url(host_url)
        site = self.world.by_host[host]
        values = {
            e.node.field: str(e.properties.get("value", ""))
            for e in self.elements()
            if e.node.field is not None and e.role != "option"
        }
        outcome: Outcome = site.perform(op, args, values)
        self.version += 1
        self.navigate(outcome.url, outcome.message)

    def _element(self, element_id: int | None) -> Element:
        shown = self.visible()
        match = next((e for e in shown if e.id == element_id), None)
        if match is None:
            raise ActionFailed(f"there is no element [{element_id}] on the page")
        return match

    # -- actions -------------------------------------------------------------------------------
    def act(self, command: Command) -> None:
        """Carry out ``command`` (not ``stop``); raises :class:`ActionFailed` when it cannot be."""
        try:
            self._act(command)
        except NotFound as exc:
            raise ActionFailed(f"the page {exc} could not be found") from exc

    def _act(self, command: Command) -> None:
        verb, tab = command.verb, self.tab
        if verb in ("click", "hover", "type"):
            element = self._element(command.element)
            if verb == "click":
                self._click(element)
            elif verb == "type":
                self._type(element, command.text, command.enter)
        elif verb == "press":
            key = command.text.lower()
            if key == "enter" and tab.focus is not None:
                self._enter(tab.focus)
            elif key in ("pagedown", "pageup"):
                self._scroll("down" if key == "pagedown" else "up")
        elif verb == "scroll":
            self._scroll(command.text)
        elif verb == "goto":
            url = command.text if "://" in command.text or command.text == BLANK else f"http://{command.text}"
            try:
                self.navigate(_lower_host(url))
            except (NotFound, ValueError) as exc:  # ValueError: urllib refuses the URL ("http://[x/")
                raise ActionFailed(f"no page at {command.text[:200]}") from exc
        elif verb in ("go_back", "go_forward"):
            step = -1 if verb == "go_back" else 1
            if not 0 <= tab.index + step < len(tab.history):
                return  # WebArena's execute_action calls Playwright's page.go_back(), a no-op there
            tab.index += step
            tab.clear()
            self._changed()
        elif verb == "new_tab":
            self.tabs.append(Tab([BLANK]))
            self.active = len(self.tabs) - 1
            self._changed()
        elif verb == "tab_focus":
            if command.index is None or command.index >= len(self.tabs):
                raise ActionFailed(f"there is no tab {command.index} (tabs: 0 to {len(self.tabs) - 1})")
            self.active = command.index
            self._changed()
        elif verb == "close_tab":
            del self.tabs[self.active]
            if not self.tabs:
                self.tabs.append(Tab([BLANK]))
            self.active = len(self.tabs) - 1
            self._changed()

    def _click(self, element: Element) -> None:
        node, tab = element.node, self.tab
        if node.href is not None:
            self.navigate(node.href)
        elif node.op is not None:
            self._perform(self.url, node.op, node.args)
        elif node.role == "option" and node.field is not None:
            tab.values[node.field] = node.name
            tab.expanded.discard(node.field)
            self._changed()
        elif node.role == "combobox" and node.field is not None:
            tab.expanded ^= {node.field}
            tab.focus = node.field
            self._changed()
        elif node.role in TEXT_ROLES and node.field is not None:
            tab.focus = node.field
            self._changed()

    def _type(self, element: Element, text: str, enter: bool) -> None:
        node = element.node
        if node.role not in TEXT_ROLES or node.field is None:
            raise ActionFailed(f"element [{element.id}] is a {element.role}, not a text field")
        self.tab.values[node.field] = text
        self.tab.focus = node.field
        self._changed()
        if enter:
            self._enter(node.field)

    def _enter(self, field_name: str) -> None:
        node = next((e.node for e in self.elements() if e.node.field == field_name), None)
        if node is not None and node.submit is not None:
            self._perform(self.url, node.submit, node.args)

    def _scroll(self, direction: str) -> None:
        total = len(self.elements()) - 1
        top = max(0, total - VIEWPORT)
        tab = self.tab
        tab.scroll = (
            min(top, tab.scroll + SCROLL_STEP) if direction == "down" else max(0, tab.scroll - SCROLL_STEP)
        )
