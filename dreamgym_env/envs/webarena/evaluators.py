"""WebArena's evaluators over the programmatic sites.

Reimplemented after ``evaluation_harness/evaluators.py`` of web-arena-x/webarena at commit
``f62e0b99bc7d9e0cd996d0cf5ebb2225780ec279`` (``StringEvaluator``, ``URLEvaluator``,
``HTMLContentEvaluator``, ``EvaluatorComb``). A task's evaluator is a spec in WebArena's config
shape (``metadata["eval"]``)::

    {"eval_types": ["string_match"], "reference_answers": {"must_include": ["12.99"]}}
    {"eval_types": ["string_match"], "reference_answers": {"fuzzy_match": "N/A"}}
    {"eval_types": ["url_match"], "reference_url": "http://shopping.local/category/electronics"}
    {"eval_types": ["program_html"], "program_html": [{"url": "last", "locator": "",
        "required_contents": {"must_include": ["Weekly thread"]}}]}
    {"eval_types": ["program_state"], "program": {"check": "order_status", "number": 120, "status": "Complete"}}

The score is the product of every evaluator's score, as ``EvaluatorComb`` multiplies them; a
task is won when it is 1.

- ``string_match`` (``StringEvaluator``): the answer of ``stop [answer]`` is cleaned (trimmed,
  one pair of outer quotes removed, lower case; spaces and periods are kept) and each approach
  multiplies in: ``exact_match`` (equal after cleaning both), ``must_include`` (each reference a
  substring of the answer, not a whole word; a one-character reference that is the only one is
  looked up among the answer's tokens instead). ``|OR|`` is *not* split here, as in the real
  ``StringEvaluator``: a reference ``"a |OR| b"`` needs that very text. ``fuzzy_match`` asks an
  LLM in WebArena; here ``"N/A"`` is an exact match (the real first test; its LLM fallback on the
  task's reason is not run, so only the answer ``N/A`` passes) and a list reference passes when
  it is a substring of the answer (what an LLM judge accepts for certain; paraphrases score 0).
- ``url_match`` (``URLEvaluator``, rule ``GOLD in PRED``): both URLs lose trailing slashes; some
  reference's host+path (``|OR|`` alternatives) must be a substring of the page's host+path, and
  every query key of the references must have one of their values among the page's. The host is
  compared as written; the browser lower-cases a host it navigates to, as Chromium does.
- ``program_html`` (``HTMLContentEvaluator``): each target names a page (``"last"``: the page
  at stop) whose content (its elements' names and values, the text a locator ``""`` reads)
  must ``exact_match`` or ``must_include`` the required contents; here ``|OR|`` is split.
- ``program_state`` stands in for the real ``program_html`` targets whose locators read a site's
  database through a helper (``func:...``): a named check (:data:`CHECKS`) over the sites'
  state, 0 or 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from dreamgym_env.envs.webarena.grammar import NOT_APPLICABLE
from dreamgym_env.envs.webarena.sites.gitlab import ME as GITLAB_ME
from dreamgym_env.envs.webarena.sites.reddit import ME as REDDIT_ME
from dreamgym_env.envs.webarena.world import World

OR = " |OR| "


@dataclass(frozen=True)
class Verdict:
    """The evaluator's judgement: its ``score`` (a product of 0/1 scores) and whether it is 1."""

    won: bool
    score: float


def clean(answer: str) -> str:
    """``StringEvaluator.clean_answer``: trimmed, one pair of outer quotes removed, lower case."""
    answer = answer.strip()
    if (answer.startswith("'") and answer.endswith("'")) or (answer.startswith('"') and answer.endswith('"')):
        answer = answer[1:-1]
    return answer.lower()


# An approximation of nltk's word_tokenize (Treebank rules) for the one case the real code
# tokenizes, a one-character reference: punctuation splits off a word, except commas, periods and
# colons between digits ("3,000", "3.5", "1:05") and a period inside a word.
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)+|\w+(?:[.'-]\w+)*|[^\w\s]")


def word_tokens(text: str) -> list[str]:
    """The tokens nltk's ``word_tokenize`` gives for the short answers the sites ask for."""
    return _TOKEN.findall(text)


def exact_match(reference: str, prediction: str) -> float:
    return float(clean(prediction) == clean(reference))


def must_include(reference: str, prediction: str, tokenize: bool = False) -> float:
    """``StringEvaluator.must_include``: a substring, or a token for a lone one-character reference."""
    ref, pred = clean(reference), clean(prediction)
    if tokenize and len(ref) == 1 and len(word_tokens(ref)) == 1:
        return float(ref in word_tokens(pred))
    return float(ref in pred)


def string_match(answers: Mapping[str, Any], answer: str) -> float:
    """``StringEvaluator.__call__``: the product over the reference approaches, in their order."""
    pred = clean(answer)
    score = 1.0
    for approach, value in answers.items():
        if approach == "exact_match":
            score *= exact_match(str(value), pred)
        elif approach == "must_include":
            for reference in value:
                score *= must_include(str(reference), pred, tokenize=len(value) == 1)
        elif approach == "fuzzy_match":
            if value == NOT_APPLICABLE:
                score *= exact_match(NOT_APPLICABLE, pred)
            else:
                for reference in value:
                    score *= must_include(str(reference), pred)
    return score


def _base_and_query(url: str) -> tuple[str, dict[str, list[str]]]:
    parts = urlsplit(url)
    return parts.netloc + parts.path, parse_qs(parts.query)


def url_match(reference: str, url: str) -> float:
    """``URLEvaluator`` with ``GOLD in PRED``: host+path substring, and every reference query key matched."""
    pred_base, pred_query = _base_and_query(url.rstrip("/"))
    bases: list[str] = []
    queries: dict[str, set[str]] = {}
    for ref in reference.split(OR):
        base, query = _base_and_query(ref.rstrip("/"))
        bases.append(base)
        for key, values in query.items():
            queries.setdefault(key, set()).update(values)
    score = float(any(base in pred_base for base in bases))
    for key, wanted in queries.items():
        score *= float(any(v in pred_query.get(key, []) for v in wanted))
    return score


PageText = Callable[[str], str]
"""The content of the page at a URL (``"last"``: the page at stop), as a locator ``""`` reads it."""


def html_content(targets: Sequence[Mapping[str, Any]], page_text: PageText) -> float:
    """``HTMLContentEvaluator``: every target's page holds its required contents."""
    score = 1.0
    for target in targets:
        content = page_text(str(target["url"]))
        required = target["required_contents"]
        if "exact_match" in required:
            score *= exact_match(str(required["exact_match"]), content)
        else:
            for alternatives in required["must_include"]:
                score *= float(any(must_include(alt, content) for alt in str(alternatives).split(OR)))
    return score


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).lower() == " ".join(b.split()).lower()


def _cart(world: World, product_id: int, qty: int = 0) -> bool:
    held = world.store.cart.get(int(product_id), 0)
    return held == int(qty) if qty else held > 0


def _bought(world: World, product_id: int) -> bool:
    return any(line.product_id == int(product_id) for order in world.store.placed for line in order.lines)


def _order_status(world: World, number: int, status: str) -> bool:
    order = world.store.order(int(number))
    return order is not None and order.status == status


def _price(world: World, product_id: int, price: float) -> bool:
    return abs(world.store.prices.get(int(product_id), -1.0) - float(price)) < 0.005


def _subscribed(world: World, forum: str, value: bool = True) -> bool:
    return (forum in world.reddit.subscribed) == value


def _voted(world: World, post_id: int, direction: int) -> bool:
    return world.reddit.votes.get(int(post_id), 0) == int(direction)


def _commented(world: World, post_id: int, text: str) -> bool:
    return any(
        c.author == REDDIT_ME and _same(c.body, text) for c in world.reddit.comments.get(int(post_id), ())
    )


def _posted(world: World, forum: str, title: str) -> bool:
    return any(p.forum == forum and _same(p.title, title) for p in world.reddit.posts)


def _starred(world: World, project: str, value: bool = True) -> bool:
    return (project in world.gitlab.starred) == value


def _issue_created(world: World, project: str, title: str) -> bool:
    return any(
        _same(i.title, title) and i.author == GITLAB_ME for i in world.gitlab.new_issues.get(project, ())
    )


def _issue_state(world: World, project: str, iid: int, state: str) -> bool:
    return world.gitlab.issue_states.get((project, int(iid))) == state


def _member(world: World, project: str, user: str, role: str) -> bool:
    return world.gitlab.members.get(project, {}).get(user) == role


CHECKS: dict[str, Callable[..., bool]] = {
    "cart_contains": _cart,
    "order_placed": _bought,
    "order_status": _order_status,
    "product_price": _price,
    "subscribed": _subscribed,
    "voted": _voted,
    "commented": _commented,
    "posted": _posted,
    "starred": _starred,
    "issue_created": _issue_created,
    "issue_state": _issue_state,
    "member": _member,
}
"""The state checks a ``program_state`` evaluator may name, each ``(world, **args) -> bool``."""


def check_state(spec: Mapping[str, Any], world: World) -> bool:
    """Whether the sites' state satisfies a ``program_state`` spec (False for other kinds)."""
    if "program_state" not in spec.get("eval_types", ()):
        return False
    program = dict(spec["program"])
    return CHECKS[program.pop("check")](world, **program)


def evaluate(spec: Mapping[str, Any], answer: str, url: str, world: World, page_text: PageText) -> Verdict:
    """Judge an episode at ``stop [answer]``: the product of every evaluator's score (``EvaluatorComb``)."""
    kinds = spec.get("eval_types", ())
    score = 1.0 if kinds else 0.0
    for kind in kinds:
        if kind == "string_match":
            score *= string_match(spec.get("reference_answers", {}), answer)
        elif kind == "url_match":
            score *= url_match(str(spec.get("reference_url", "")), url)
        elif kind == "program_html":
            score *= html_content(spec.get("program_html", ()), page_text)
        elif kind == "program_state":
            score *= float(check_state(spec, world))
        else:
            raise ValueError(f"eval_type {kind} is not supported")
    return Verdict(score == 1.0, score)
