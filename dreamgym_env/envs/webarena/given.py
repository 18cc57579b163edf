"""What the sites' data fixes for a request of the synthetic env: the next page, the evaluator's checks.

A page's state carries what the episode changed in the sites' data (``changes``, as
:meth:`World.changes <dreamgym_env.envs.webarena.world.World.changes>` writes it), so the sites
as the episode left them can be rebuilt: the seeded data with those changes made again. It also
carries each tab's history (``history``), so the browser's tabs can be rebuilt too. When the
state's page is exactly the page those sites show at its URL (:func:`browser_at`), every action
but ``stop`` opens what the programmatic sites open: a link, a scroll, a ``goto``, typing or a
button, with the changes a form makes, and the history's and the tabs' actions (``go_back``,
``go_forward``, ``new_tab``, ``tab_focus``, ``close_tab``) (:func:`next_page_fields`). The reward
and the episode's end stay the model's.

At ``stop [answer]`` :func:`stop_line` shows what WebArena's evaluators find: the answer against
the reference answers, the URL against the reference URL, the page's text against the required
contents and the sites' data against a ``program_state`` check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dreamgym_env.domain import ActionError
from dreamgym_env.envs.webarena.browser import ActionFailed, Browser
from dreamgym_env.envs.webarena.evaluators import OR, check_state, exact_match, must_include, url_match
from dreamgym_env.envs.webarena.grammar import NOT_APPLICABLE, parse_command
from dreamgym_env.envs.webarena.sites.base import NotFound
from dreamgym_env.envs.webarena.state import Element, TabHistory, WebArenaState
from dreamgym_env.envs.webarena.world import DEFAULT_DATA_SEED, World, load_data
from dreamgym_env.types import Task


def page_state(browser: Browser, *, message: str = "") -> WebArenaState:
    """The state of ``browser``'s page, of its tabs and their history, and of its sites' data."""
    return WebArenaState(
        url=browser.url,
        title=browser.elements()[0].name,
        tabs=browser.tab_titles(),
        active_tab=browser.active,
        history=[TabHistory(urls=list(tab.history), index=tab.index) for tab in browser.tabs],
        elements=_shown(browser),
        more_above=browser.more_above,
        more_below=browser.more_below,
        message=message,
        changes=browser.world.changes(),
    )


def _shown(browser: Browser) -> list[Element]:
    return [
        Element(id=e.id, role=e.role, name=e.name, depth=e.depth, properties=dict(e.properties))
        for e in browser.visible()
    ]


def _field_of(browser: Browser, element_id: int) -> str | None:
    return next((e.node.field for e in browser.elements() if e.id == element_id and e.role != "option"), None)


def world_of(task: Task, state: WebArenaState) -> World | None:
    """The sites as ``state``'s episode left them: the task's seeded data with the state's changes, or ``None`` for unreadable changes."""
    world = World(load_data(task.metadata.get("data_seed", DEFAULT_DATA_SEED)))
    try:
        world.apply(state.changes)
    except ValueError:
        return None
    return world


def browser_at(task: Task, state: WebArenaState) -> Browser | None:
    """A browser on the sites of ``state``'s episode showing exactly its page, or ``None`` when no such page is there.

    The sites are the seeded data with the state's changes (:func:`world_of`), the tabs those of
    the state's history, the active one at the state's URL. The tab's message, scroll, typed
    values, focus and open comboboxes are read back from the visible elements; the page must then
    show the same elements with the same properties, and the tabs the same titles. The other
    tabs' scroll and typed text are not in the state: they show their pages as opened.
    """
    # an invalid action's failure line (``message``) is no part of the page: the next action drops it
    world = world_of(task, state)
    if world is None:
        return None
    histories = [(h.urls, h.index) for h in state.history]
    try:
        browser = Browser.with_tabs(world, histories, state.active_tab)
        titles = browser.tab_titles()
    except (NotFound, ValueError):
        return None
    if browser.url != state.url or titles != state.tabs:
        return None
    shown = state.elements
    if len(shown) < 1 or shown[0].role != "RootWebArea":
        return None
    top = shown[1:3]
    alert = len(top) == 2 and top[0].id == 2 and top[0].role == "alert" and top[1].role == "StaticText"
    message = top[1].name if alert else ""
    expanded: set[str] = set()
    browser.set_view(message=message)
    # an open combobox lists its options after it, so each one opened renumbers what follows
    for element in shown[1:]:
        if element.role == "combobox" and element.properties.get("expanded") is True:
            field = _field_of(browser, element.id)
            if field is None:
                return None
            expanded.add(field)
            browser.set_view(message=message, expanded=expanded)
    fields = {
        e.id: e.node.field for e in browser.elements() if e.node.field is not None and e.role != "option"
    }
    values = {
        fields[e.id]: str(e.properties["value"]) for e in shown if "value" in e.properties and e.id in fields
    }
    focus = next((fields.get(e.id) for e in shown[1:] if e.properties.get("focused") is True), None)
    scroll = shown[1].id - 2 if len(shown) > 1 else 0
    browser.set_view(message=message, scroll=scroll, values=values, focus=focus, expanded=expanded)
    same = (
        _shown(browser) == shown
        and browser.more_above == state.more_above
        and browser.more_below == state.more_below
    )
    return browser if same else None


def start_page_state(task: Task) -> WebArenaState | None:
    """The task's start page on the seeded sites (its ``start_url``, else its site's home), or ``None``."""
    world = World(load_data(task.metadata.get("data_seed", DEFAULT_DATA_SEED)))
    site = task.metadata.get("site")
    url = task.metadata.get("start_url") or (world.home(site) if site in world.sites else None)
    if not url:
        return None
    try:
        return page_state(Browser(world, url))
    except NotFound:
        return None


def next_page_fields(task: Task, state: WebArenaState, action: str) -> dict[str, Any]:
    """The whole next page of ``action`` on ``state``'s page, and the episode's changes after it, as the sites show them; or ``{}``.

    Empty when the current page is not the sites' (:func:`browser_at`) and for an action the
    sites or the browser refuse (a tab that is not there). ``go_back`` on a tab's first page
    keeps it, as Playwright's ``page.go_back()`` does. ``stop`` keeps any page as it is.
    """
    command = parse_command(action)
    if isinstance(command, ActionError):
        return {}
    if command.verb == "stop":  # WebArena's stop leaves the page as it is, whatever the sites' state
        return state.model_copy(update={"message": ""}).model_dump()
    browser = browser_at(task, state)
    if browser is None:
        return {}
    try:
        browser.act(command)
        page = page_state(browser)
    except (ActionFailed, NotFound):  # NotFound: another tab's page, retitled after a form
        return {}
    # as the state's JSON has it: a false flag and an empty message left out (the model leaves them out too)
    return page.model_dump()


def _page_text(task: Task, state: WebArenaState, world: World) -> Callable[[str], str]:
    """The text ``program_html`` reads: the whole page when the sites show ``state``'s, else the state's own elements."""
    browser = browser_at(task, state)
    elements = browser.elements() if browser is not None else state.elements

    def text(url: str) -> str:
        return text_of(elements if url == "last" else Browser(world, url).elements())

    return text


def text_of(elements: Any) -> str:
    """A page's content as a locator ``""`` reads it: each element's name, with its typed value."""
    return "\n".join(
        " ".join([e.name, str(e.properties["value"])]) if "value" in e.properties else e.name
        for e in elements
    )


def stop_line(task: Task, state: WebArenaState, answer: str) -> tuple[str, ...]:
    """What WebArena's evaluators find at ``stop [answer]`` on ``state``, check by check, or nothing without an evaluator.

    For example ``At stop, WebArena's evaluator checks: the answer must include '20.35': no;
    short of the goal: answer``. Each check reads ``yes`` or ``no``, a check of the sites' data
    against the state's changes. The checks short of the goal close the line, next to where the
    answer's verdict starts (as WebShop's purchase line). Nothing for changes that do not read.
    """
    spec = task.metadata.get("eval")
    world = world_of(task, state)
    if not isinstance(spec, dict) or not spec.get("eval_types") or world is None:
        return ()
    checks: list[str] = []
    short: list[str] = []

    def check(what: str, score: float, part: str) -> None:
        checks.append(f"{what}: {'yes' if score == 1.0 else 'no'}")
        short.extend(() if score == 1.0 else (part,))

    for kind in spec["eval_types"]:
        if kind == "string_match":
            for approach, value in spec.get("reference_answers", {}).items():
                if approach == "exact_match" or (approach == "fuzzy_match" and value == NOT_APPLICABLE):
                    check(f"the answer must be {str(value)!r}", exact_match(str(value), answer), "answer")
                    continue
                for reference in value:  # StringEvaluator tokenizes a lone one-character reference
                    lone = approach == "must_include" and len(value) == 1
                    found = must_include(str(reference), answer, tokenize=lone)
                    check(f"the answer must include {str(reference)!r}", found, "answer")
        elif kind == "url_match":
            reference = str(spec.get("reference_url", ""))
            check(
                f"the page must be at {reference.replace(OR, ' or ')}",
                url_match(reference, state.url),
                "page",
            )
        elif kind == "program_html":
            page_text = _page_text(task, state, world)
            for target in spec.get("program_html", ()):
                content = page_text(str(target["url"]))
                where = "the page" if target["url"] == "last" else f"the page {target['url']}"
                required = target["required_contents"]
                if "exact_match" in required:
                    wanted = str(required["exact_match"])
                    check(f"{where} must read {wanted!r}", exact_match(wanted, content), "content")
                    continue
                for alternatives in required["must_include"]:
                    found = any(must_include(alt, content) for alt in str(alternatives).split(OR))
                    check(
                        f"{where} must show {str(alternatives).replace(OR, ' or ')!r}",
                        float(found),
                        "content",
                    )
        elif kind == "program_state":
            program = dict(spec["program"])
            name = str(program.pop("check")).replace("_", " ")
            arguments = ", ".join(f"{k} {v}" for k, v in program.items())
            check(f"the sites' data must show {name} ({arguments})", float(check_state(spec, world)), "data")
    summary = ", ".join(dict.fromkeys(short)) or "none"
    return (f"At stop, WebArena's evaluator checks: {'; '.join(checks)}; short of the goal: {summary}",)
