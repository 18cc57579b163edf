"""The current page as a standalone HTML document (``render_mode="html"``), for a person to look at.

Each element is drawn by its role (links, buttons, text fields, headings, lists) with its id
as a small badge, under a bar of the tabs and the URL. Links are not followed (the page is a
picture of the environment, not a way to act in it).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from dreamgym_env.envs.webarena.browser import Element

STYLE = """body{font-family:sans-serif;margin:0;background:#f4f5f7}
.bar{background:#2b3a55;color:#fff;padding:6px 12px}.tab{display:inline-block;padding:4px 10px;margin-right:4px;
background:#40507a;border-radius:4px 4px 0 0}.tab.current{background:#fff;color:#222}.url{background:#fff;color:#222;
padding:4px 8px;margin-top:4px;border-radius:4px;font-family:monospace}main{background:#fff;margin:12px;padding:12px;
border-radius:6px}.id{font-size:10px;color:#888;margin-right:3px}.node{margin-left:14px}.alert{background:#fff3cd;
padding:6px}button{margin:2px}.error{color:#a00;margin:12px}"""


_INPUT = '<label>{name} <input type="text" placeholder="{name}" value="{value}"></label>'
_BY_ROLE = {
    "link": '<a href="#" title="{name}">{name}</a>',
    "button": "<button>{name}</button>",
    "textbox": _INPUT,
    "searchbox": _INPUT,
    "combobox": "<label>{name} <select><option selected>{value}</option></select></label>",
    "option": "<span>&#9702; {name}</span>",
    "heading": "<h2>{name}</h2>",
    "StaticText": "<span>{name}</span>",
}
"""How an element of each role is drawn (``name`` and ``value`` HTML-escaped)."""


def _element(element: Element) -> str:
    badge = f'<span class="id">[{element.id}]</span>'
    name = escape(element.name)
    drawing = _BY_ROLE.get(element.role)
    if drawing is None:
        return f"{badge}<em>{escape(element.role)}</em> {name}" if name else ""
    return badge + drawing.format(name=name, value=escape(str(element.properties.get("value", ""))))


def page_html(
    url: str, tabs: Sequence[str], active: int, elements: Sequence[Element], message: str = ""
) -> str:
    """A standalone HTML document of the visible elements (the root's name is the title)."""
    title = escape(elements[0].name if elements else "")
    bar = "".join(
        f'<span class="tab{" current" if i == active else ""}">{escape(t)}</span>' for i, t in enumerate(tabs)
    )
    rows = []
    for element in elements[1:]:
        content = _element(element)
        if content:
            css = "node alert" if element.role == "alert" else "node"
            rows.append(
                f'<div class="{css}" data-id="{element.id}" style="margin-left:{14 * element.depth}px">{content}</div>'
            )
    error = f'<p class="error">{escape(message)}</p>' if message else ""
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title><style>{STYLE}</style></head>'
        f'<body><div class="bar">{bar}<div class="url">{escape(url)}</div></div><main>{"".join(rows)}</main>'
        f"{error}</body></html>\n"
    )
