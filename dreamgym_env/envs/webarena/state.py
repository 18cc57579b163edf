r"""The abstract state of a WebArena page and its two text renderings.

``axtree`` is WebArena's observation as ``TextObervationProcessor`` prints it
(``browser_env/processors.py`` of web-arena-x/webarena at commit
``f62e0b99bc7d9e0cd996d0cf5ebb2225780ec279``), followed by the URL line that WebArena's prompt
template puts after the observation (``agent/prompts/raw/p_cot_id_actree_2s.py``:
``OBSERVATION:\n{observation}\nURL: {url}``)::

    Tab 0 (current): One Stop Market | Tab 1: Projects · GitLab

    [1] RootWebArea 'One Stop Market' focused: True
    \t[3] link 'One Stop Market'
    \t[6] textbox 'Search entire store here...' required: False
    \t[9] StaticText "Editor's picks"
    URL: http://shopping.local/
    (more below: scroll [down])

The tabs are joined with `` | `` and a blank line follows (``process``). A node reads
``[id] role repr(name)`` and its properties as ``name: value`` with the value unquoted
(``parse_accessibility_tree``). A node without a name or properties whose role is a layout one
(:data:`PRUNED_ROLES`), and a nameless ``listitem`` with properties, is left out and its children
move up a level; a ``StaticText`` whose text is empty or already in one of the three lines before
it is left out (``clean_accesibility_tree``). Element ids stay those of the whole page, so a
pruned node leaves a gap, as the real node ids do.

Beyond the real text, additively: the typed text of a field as a ``value`` property (the real
tree shows it in the field's node, not as a property), a last line saying when ``scroll [up]`` or
``scroll [down]`` would show more, and after an invalid action a line ``Invalid action: ...``.

``compact`` is the paper's abstract state: the interactive and content elements only, one a
line as ``[id] role: name (properties)``, without the layout nodes. :func:`parse_state` reads
either back into a :class:`WebArenaState`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

ObservationMode = Literal["axtree", "compact"]
OBSERVATION_MODES: tuple[ObservationMode, ...] = ("axtree", "compact")
VIEWPORT = 40
"""Elements a page shows at once after its root (a few dozen, as in WebArena's viewport-only
accessibility tree); ``scroll [down]`` moves the view by :data:`SCROLL_STEP`, less than a
viewport so no element is skipped."""
SCROLL_STEP = 30
ERROR_PREFIX = "Invalid action: "
MORE_ABOVE = "(more above: scroll [up])"
MORE_BELOW = "(more below: scroll [down])"
COMPACT_ROLES = frozenset(
    {
        "link",
        "button",
        "textbox",
        "searchbox",
        "combobox",
        "option",
        "checkbox",
        "heading",
        "StaticText",
        "alert",
    }
)
PRUNED_ROLES = frozenset(
    {
        "generic",
        "img",
        "list",
        "strong",
        "paragraph",
        "banner",
        "navigation",
        "Section",
        "LabelText",
        "Legend",
        "listitem",
    }
)
"""Roles whose nameless, property-less nodes ``parse_accessibility_tree`` leaves out."""
TAB_SEPARATOR = " | "
_TAB = re.compile(r"Tab (\d+)( \(current\))?: ?(.*?)(?= \| Tab \d+(?: \(current\))?:|$)")
_PROPERTY_NAMES = "focused|required|value|expanded|selected|checked|hasPopup"
_NAME = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_AXTREE = re.compile(rf"^(\t*)\[(\d+)\] (\S+) ({_NAME})((?: (?:{_PROPERTY_NAMES}): .*)?)$")
_PROP = re.compile(rf" ({_PROPERTY_NAMES}): (.*?)(?= (?:{_PROPERTY_NAMES}): |$)")
_COMPACT = re.compile(rf"^\[(\d+)\] (\S+): (.*?)(?: \(((?:{_PROPERTY_NAMES})\b.*)\))?$")
_COMPACT_SPLIT = re.compile(rf", (?=(?:{_PROPERTY_NAMES})(?::|,|$))")
_STATIC_TEXT = re.compile(r"\[\d+\] StaticText (.+)", re.DOTALL)


# Bounds for the schema the experience model answers in (not checks on the reference env's
# states): without them a small model can copy a list or a name until max_tokens cuts it off,
# and each re-ask costs as much again. The seeded sites stay well inside them.
_NAME_CHARS = 200
_LINE_CHARS = 300
_MAX_TABS = 10
_MAX_HISTORY = 32  # a page a step: the start page and WebArena's 30 steps fit
_MAX_PROPERTIES = 6
_MAX_CHANGES = 20


def _element_schema(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    properties["role"]["maxLength"] = 40
    properties["name"]["maxLength"] = _NAME_CHARS
    properties["properties"]["maxProperties"] = _MAX_PROPERTIES
    for choice in properties["properties"]["additionalProperties"]["anyOf"]:
        if choice["type"] == "string":
            choice["maxLength"] = _NAME_CHARS


def _tab_history_schema(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    properties["urls"]["maxItems"] = _MAX_HISTORY
    properties["urls"]["items"]["maxLength"] = _NAME_CHARS
    properties["index"].update(minimum=0, maximum=_MAX_HISTORY - 1)


def _state_schema(schema: dict[str, Any]) -> None:
    properties = schema["properties"]
    properties["elements"]["maxItems"] = VIEWPORT + 1  # the root and the viewport
    properties["tabs"]["maxItems"] = _MAX_TABS
    properties["history"]["maxItems"] = _MAX_TABS
    properties["tabs"]["items"]["maxLength"] = _NAME_CHARS
    for name in ("url", "title"):
        properties[name]["maxLength"] = _NAME_CHARS
    properties["message"]["maxLength"] = _LINE_CHARS
    properties["changes"]["maxItems"] = _MAX_CHANGES
    properties["changes"]["items"]["maxLength"] = _LINE_CHARS


def _without_empty(data: dict[str, object], fields: tuple[str, ...]) -> dict[str, object]:
    return {k: v for k, v in data.items() if k not in fields or v not in ("", 0, {}, [])}


class Element(BaseModel):
    """One element of the page: its id (the number actions name), role, name and properties."""

    model_config = ConfigDict(json_schema_extra=_element_schema)

    # The JSON leaves out an empty name, depth 0 and no properties (the defaults read them back):
    # they are a fifth of a page's JSON, tokens the experience model would read and write.

    id: int
    role: str
    name: str = Field(default="", description="left out when empty")
    depth: int = Field(default=0, description="left out when 0")
    properties: dict[str, str | bool] = Field(default_factory=dict, description="left out when none")

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        return _without_empty(handler(self), ("name", "depth", "properties"))


class TabHistory(BaseModel):
    """One tab's history as the browser keeps it: the URLs it went to, in order, and the position of its page."""

    model_config = ConfigDict(json_schema_extra=_tab_history_schema)

    urls: list[str]
    index: int = Field(default=0, description="the position of the tab's page in urls; left out when 0")

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        return _without_empty(handler(self), ("index",))


class WebArenaState(BaseModel):
    """What the agent sees (the tabs, the active tab's URL, title and visible elements), each tab's history, the sites' changes."""

    model_config = ConfigDict(json_schema_extra=_state_schema)

    url: str
    title: str = ""
    tabs: list[str] = Field(default_factory=list)
    active_tab: int = 0
    history: list[TabHistory] = Field(
        default_factory=list,
        description="each tab's history (go_back, go_forward and the tabs' actions read it); left out when unknown",
    )
    """Each tab's URLs and position (``Tab.history``, ``Tab.index``): not shown to the agent, but
    what the history's and the tabs' actions open; empty for a state read from a page's text."""
    elements: list[Element] = Field(default_factory=list)
    more_above: bool = Field(default=False, description="scroll [up] shows more; left out when false")
    more_below: bool = Field(default=False, description="scroll [down] shows more; left out when false")
    message: str = Field(default="", description="a failure line after an invalid action, left out when none")
    """A failure line after an invalid action (``Invalid action: ...``), else empty (and left out of the JSON)."""
    changes: list[str] = Field(
        default_factory=list,
        description="what the episode changed in the sites' data (cart, orders, prices, posts, votes, "
        "issues, members, ...), one a line; not on the page; left out when none",
    )
    """The sites' data the episode changed, as :meth:`World.changes <dreamgym_env.envs.webarena.world.World.changes>`
    writes it: not shown to the agent (WebArena's observation is the page), but what makes the
    state whole, so a page and a check of the sites' data can be rebuilt from it."""

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        return _without_empty(handler(self), ("history", "more_above", "more_below", "message", "changes"))


class ElementLike(Protocol):
    id: int
    role: str
    name: str
    depth: int
    properties: dict[str, str | bool]


def _value(value: str | bool) -> str:
    return str(value) if isinstance(value, bool) else f"'{value}'"


def render_tabs(tabs: Sequence[str], active: int) -> str:
    """The tab line of ``TextObervationProcessor.process``: ``Tab i (current): title`` joined by `` | ``."""
    return TAB_SEPARATOR.join(
        f"Tab {i} (current): {title}" if i == active else f"Tab {i}: {title}" for i, title in enumerate(tabs)
    )


def tree_lines(elements: Iterable[ElementLike]) -> list[str]:
    """The accessibility-tree lines of a page's elements (depth-first, with their depths).

    ``parse_accessibility_tree``: ``[id] role repr(name)`` and ``name: value`` properties, one
    tab of indent per printed ancestor, pruned nodes left out; ``clean_accesibility_tree``: a
    ``StaticText`` whose text is empty or in one of the three lines before is left out.
    """
    lines: list[str] = []
    # the open nodes above: (depth, printed ancestors up to and including this node)
    ancestors: list[tuple[int, int]] = []
    for e in elements:
        while ancestors and ancestors[-1][0] >= e.depth:
            ancestors.pop()
        above = ancestors[-1][1] if ancestors else 0
        props = e.properties
        if not e.name.strip() and (
            (not props and e.role in PRUNED_ROLES) or (props and e.role == "listitem")
        ):
            ancestors.append((e.depth, above))
            continue
        indent = "\t" * above
        ancestors.append((e.depth, above + 1))
        line = f"{indent}[{e.id}] {e.role} {e.name!r}"
        if props:
            line += " " + " ".join(f"{k}: {v}" for k, v in props.items())
        if "statictext" in line.lower():
            match = _STATIC_TEXT.search(line)
            text = match.group(1)[1:-1] if match else ""
            if not text or any(text in previous for previous in lines[-3:]):
                continue
        lines.append(line)
    return lines


def render_elements(
    url: str,
    tabs: Sequence[str],
    active: int,
    elements: Iterable[ElementLike],
    mode: ObservationMode = "axtree",
    more_above: bool = False,
    more_below: bool = False,
) -> str:
    """The text of a page in ``mode`` (see the module docstring)."""
    scroll_lines = [line for line, shown in ((MORE_ABOVE, more_above), (MORE_BELOW, more_below)) if shown]
    if mode == "compact":
        lines = [
            f"URL: {url}",
            "Tabs: "
            + " | ".join(f"[{i}] {t}{' (current)' if i == active else ''}" for i, t in enumerate(tabs)),
        ]
        for e in elements:
            if e.role in COMPACT_ROLES and (e.name or e.properties):
                shown = [
                    k if v is True else f"{k}: {_value(v)}"
                    for k, v in e.properties.items()
                    if v is not False and k != "required"
                ]
                suffix = f" ({', '.join(shown)})" if shown else ""
                lines.append(f"[{e.id}] {e.role}: {e.name}{suffix}")
        return "\n".join([*lines, *scroll_lines])
    return "\n".join([render_tabs(tabs, active), "", *tree_lines(elements), f"URL: {url}", *scroll_lines])


def render(state: WebArenaState, mode: ObservationMode = "axtree") -> str:
    """The observation text of ``state`` (with its failure line, if any)."""
    text = render_elements(
        state.url, state.tabs, state.active_tab, state.elements, mode, state.more_above, state.more_below
    )
    return f"{text}\n{state.message}" if state.message else text


def _parse_value(raw: str) -> str | bool:
    return raw == "True" if raw in ("True", "False") else raw


def _parse_compact_value(raw: str) -> str | bool:
    return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == "'" else _parse_value(raw)


def parse_state(text: str) -> WebArenaState:
    """Read an ``axtree`` or ``compact`` observation back into a state (unreadable lines are skipped)."""
    lines = text.split("\n")
    url, tabs, active, elements, message = "", [], 0, [], ""
    more_above = more_below = False
    for line in lines:
        if line == MORE_ABOVE:
            more_above = True
        elif line == MORE_BELOW:
            more_below = True
        elif line.startswith("URL: "):
            url = line[5:]
        elif line.startswith(ERROR_PREFIX):
            message = line
        elif not line:
            continue
        elif line.startswith("Tab "):
            for i, match in enumerate(_TAB.finditer(line)):
                tabs.append(match.group(3))
                active = i if match.group(2) else active
        elif line.startswith("Tabs: "):
            for i, part in enumerate(line[6:].split(" | ")):
                title = re.sub(r"^\[\d+\] ", "", part)
                if title.endswith(" (current)"):
                    title, active = title[:-10], i
                tabs.append(title)
        elif (m := _AXTREE.match(line)) is not None:
            props = {k: _parse_value(v) for k, v in _PROP.findall(m.group(5))}
            elements.append(
                Element(
                    id=int(m.group(2)),
                    role=m.group(3),
                    name=ast.literal_eval(m.group(4)),
                    depth=len(m.group(1)),
                    properties=props,
                )
            )
        elif (m := _COMPACT.match(line)) is not None:
            props = {}
            for part in _COMPACT_SPLIT.split(m.group(4) or ""):
                key, sep, value = part.partition(": ")
                if key:
                    props[key] = _parse_compact_value(value) if sep else True
            elements.append(Element(id=int(m.group(1)), role=m.group(2), name=m.group(3), properties=props))
    title = next((e.name for e in elements if e.role == "RootWebArea"), tabs[active] if tabs else "")
    return WebArenaState(
        url=url,
        title=title,
        tabs=tabs,
        active_tab=active,
        elements=elements,
        more_above=more_above,
        more_below=more_below,
        message=message,
    )
