"""Tolerant text matching for WebShop scoring: wording may vary, meaning may not.

Two phrases match when their normalised tokens match one by one: equal, equal after a
synonym table or a plural ``s``, or (words of 5+ letters) a fuzzy ratio of at least
:data:`FUZZY_TOKEN_RATIO`. Tokens with digits and short tokens must be equal, so "pack of 2"
never matches "pack of 12" and "x-large" never matches "xx-large". Phrases whose tokens,
glued together, are equal also match ("light weight" and "lightweight").
"""

from __future__ import annotations

import re
from functools import lru_cache

from rapidfuzz.fuzz import ratio

FUZZY_TOKEN_RATIO = 88.0
"""Minimum rapidfuzz ratio (0-100) for two long words to count as the same word."""
_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
SYNONYMS: dict[str, str] = {"gray": "grey", "colour": "color", "xl": "x large"}


@lru_cache(maxsize=65_536)
def tokens(text: str) -> tuple[str, ...]:
    """Lower-case word tokens of ``text``: apostrophes dropped, hyphens and slashes split words."""
    words = _TOKEN.findall(text.lower().replace("'", "").replace("\u2019", ""))
    out: list[str] = []
    for word in words:
        out.extend(SYNONYMS.get(word, word).split())
    return tuple(out)


@lru_cache(maxsize=262_144)
def _token_match(a: str, b: str) -> bool:
    if a == b:
        return True
    if len(a) < 4 or len(b) < 4 or not (a.isalpha() and b.isalpha()):  # short words, numbers: exact
        return False
    if a.rstrip("s") == b.rstrip("s"):
        return True
    shorter, total = min(len(a), len(b)), len(a) + len(b)
    # ratio() is at most 200 * shorter / total: skip the call when that bound is already too low
    return shorter >= 5 and 200 * shorter >= FUZZY_TOKEN_RATIO * total and ratio(a, b) >= FUZZY_TOKEN_RATIO


def _tokens_match(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return len(a) == len(b) and all(_token_match(x, y) for x, y in zip(a, b, strict=True))


@lru_cache(maxsize=65_536)
def phrases_match(a: str, b: str) -> bool:
    """Whether two phrases say the same thing (see the module docstring)."""
    ta, tb = tokens(a), tokens(b)
    if not ta or not tb:
        return False
    return _tokens_match(ta, tb) or "".join(ta) == "".join(tb)


def phrase_in_tokens(phrase: str, text_tokens: tuple[str, ...]) -> bool:
    """Whether ``phrase`` occurs, tolerantly, as consecutive words of a tokenised text."""
    target = tokens(phrase)
    n = len(target)
    if n == 0:
        return False
    first = target[0]
    for i in range(len(text_tokens) - n + 1):
        if _token_match(first, text_tokens[i]) and _tokens_match(target, text_tokens[i : i + n]):
            return True
    glued = "".join(target)
    if glued not in "".join(text_tokens):  # a cheap necessary condition for the glued forms
        return False
    return any(
        glued == "".join(text_tokens[i : i + k]) for k in (1, 2, 3) for i in range(len(text_tokens) - k + 1)
    )


def phrase_in_text(phrase: str, text: str) -> bool:
    """Whether ``phrase`` occurs, tolerantly, as consecutive words of ``text``."""
    return phrase_in_tokens(phrase, tokens(text))
