"""A Griffe extension for the docs site: the package's docstrings as mkdocstrings' Markdown.

The package's docstrings are Markdown with a little reStructuredText: roles such as
``:class:`~dreamgym_env.types.Task``` and paragraphs ending in ``::`` before an indented
block. mkdocstrings renders Markdown only, so this extension, run by Griffe while it loads the
package (``mkdocs.yml``: ``plugins.mkdocstrings.handlers.python.options.extensions``), turns

- a role into an *optional* cross-reference: a link where the site renders the target, plain
  code otherwise (never a warning, so ``mkdocs build --strict`` stays quiet). ``~`` shows the
  last part of the path only, as in Sphinx; a relative name (``Domain.make_reference_env``,
  ``SyntheticFirst``) is resolved in the scope of the object whose docstring holds it;
- ``text::`` at the end of a paragraph into ``text:`` (the indented block after it is already
  a Markdown code block), and a lone ``::`` line into nothing;
- an ``Example:`` section into ``Examples:``, which Griffe's Google parser reads as doctest
  blocks (rendered as Python console code) rather than as an admonition of Markdown text;
- a doctest line's ``# doctest: +SKIP`` flags into nothing (Griffe trims them only in an
  ``Examples:`` section);
- an ``Args:`` entry that names several parameters (``explore, min_episodes: see ...``,
  ``format_prompt / format_observation: ...``) into one entry a parameter, each with the
  description, so that Griffe matches every one to the signature.

The docstrings themselves are left as they are in the source.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|data|attr|exc|obj|const|type):`(?P<target>[^`]+)`")
TITLED = re.compile(r"^(?P<title>.+?)\s*<(?P<path>[^<>]+)>$")
EXAMPLE_HEADER = re.compile(r"(?m)^(?P<indent>[ \t]*)Example:[ \t]*$")
ARGS_HEADER = re.compile(
    r"^(?P<indent>[ \t]*)(?:Args|Arguments|Parameters|Keyword Args|Keyword Arguments):[ \t]*$"
)
MULTI_NAME = re.compile(
    r"^(?P<indent>[ \t]*)(?P<names>\*{0,2}\w+(?:[ \t]*[,/][ \t]*\*{0,2}\w+)+)(?P<rest>[ \t]*(?:\([^)]*\))?:.*)$"
)
DOCTEST_FLAGS = re.compile(r"(?m)^(?P<code>[ \t]*(?:>>>|\.\.\.) .*?)[ \t]*# doctest:.*$")
# A line ending in ``::``, not one of a doctest (``>>>``, ``...``).
LITERAL_MARKER = re.compile(r"(?m)^(?P<indent>[ \t]*)(?![ \t>]|\.\.\.)(?P<text>.*?)::[ \t]*$")


def _resolve(obj: griffe.Object, path: str) -> str:
    """The full dotted path of ``path`` as written in ``obj``'s docstring (as written if unknown)."""
    if path.startswith("dreamgym_env."):
        return path
    head, _, rest = path.partition(".")
    try:
        full = obj.resolve(head)  # this object's scope, then its parents' (imports included)
    except (griffe.NameResolutionError, AttributeError, KeyError):
        return path
    return f"{full}.{rest}" if rest else full


def rewrite_roles(text: str, obj: griffe.Object) -> str:
    """``text`` with every Sphinx role made an optional autorefs cross-reference."""

    def replace(match: re.Match[str]) -> str:
        target = match["target"].strip()
        titled = TITLED.match(target)
        if titled:
            title, path = titled["title"], titled["path"].lstrip("~")
        else:
            shorten = target.startswith("~")
            path = target.lstrip("~").rstrip("()")
            title = path.rsplit(".", 1)[-1] if shorten else path
            if target.endswith("()"):
                title += "()"
        identifier = _resolve(obj, path)
        return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'

    return ROLE.sub(replace, text)


def rewrite_literal_markers(text: str) -> str:
    """The ``::`` of reST before a literal block, as Markdown reads it."""

    def replace(match: re.Match[str]) -> str:
        body = match["text"]
        if not body.strip():
            return ""
        return f"{match['indent']}{body}:"

    return LITERAL_MARKER.sub(replace, text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def split_multi_name_args(text: str) -> str:
    """Each ``a, b: description`` entry of an ``Args:`` section as one entry a name."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        header = ARGS_HEADER.match(lines[i])
        out.append(lines[i])
        i += 1
        if header is None:
            continue
        base = len(header["indent"])
        entry_level: int | None = None  # the indent of the section's entries (deeper: their descriptions)
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
            if entry_level is None and lines[i].strip():
                entry_level = _indent(lines[i])
            entry = MULTI_NAME.match(lines[i]) if _indent(lines[i]) == entry_level else None
            if entry is None:
                out.append(lines[i])
                i += 1
                continue
            level = len(entry["indent"])
            j = i + 1
            while j < len(lines) and lines[j].strip() and _indent(lines[j]) > level:
                j += 1
            continuation = lines[i + 1 : j]
            for name in re.split(r"[ \t]*[,/][ \t]*", entry["names"]):
                out.append(f"{entry['indent']}{name}{entry['rest']}")
                out.extend(continuation)
            i = j
    trailing = "\n" if text.endswith("\n") else ""
    return "\n".join(out) + trailing


def rewrite_docstring(text: str, obj: griffe.Object) -> str:
    """``text`` with every rewrite this module's docstring lists, in that order."""
    text = rewrite_roles(text, obj)
    text = rewrite_literal_markers(text)
    text = EXAMPLE_HEADER.sub(lambda m: f"{m['indent']}Examples:", text)
    text = DOCTEST_FLAGS.sub(lambda m: m["code"], text)
    return split_multi_name_args(text)


class MarkdownDocstrings(griffe.Extension):
    """Rewrites every loaded object's docstring for Markdown (see the module docstring)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.is_alias or obj.docstring is None:
            return
        value = obj.docstring.value
        new = rewrite_docstring(value, obj)
        if new != value:
            obj.docstring.value = new
