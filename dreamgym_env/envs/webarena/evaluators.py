"""WebArena's evaluators over the programmatic sites.

A task's evaluator is a spec in WebArena's config shape (``metadata["eval"]``)::

    {"eval_types": ["string_match"], "reference_answers": {"must_include": ["12.99"]}}
    {"eval_types": ["url_match"], "reference_url": "http://shopping.local/category/electronics"}
    {"eval_types": ["program_state"], "program": {"check": "order_status", "number": 120, "status": "Complete"}}

``string_match`` judges the answer of ``stop [answer]`` as WebArena does: ``exact_match`` (equal
after cleaning: trimmed, lower case, outer quotes and a final period dropped),
``must_include`` (every reference occurs, as a whole word; ``a |OR| b`` accepts either) and
``fuzzy_match`` (WebArena asks an LLM; here rapidfuzz's token-set ratio of at least
:data:`FUZZY_THRESHOLD`). ``url_match`` compares the page's path and the reference's query
parameters. ``program_state`` runs a named check (:data:`CHECKS`) over the sites' state, in
place of WebArena's ``program_html`` locators.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from dreamgym_env.envs.webarena.sites.base import split_url
from dreamgym_env.envs.webarena.sites.gitlab import ME as GITLAB_ME
from dreamgym_env.envs.webarena.sites.reddit import ME as REDDIT_ME
from dreamgym_env.envs.webarena.world import World

FUZZY_THRESHOLD = 85
OR = " |OR| "


@dataclass(frozen=True)
class Verdict:
    """The evaluator's judgement: ``won`` (the reward of ``outcome``) and a partial ``score``."""

    won: bool
    score: float


def clean(text: str) -> str:
    """WebArena's answer cleaning: trimmed, outer quotes and a final period dropped, lower case."""
    text = " ".join(text.split()).rstrip(".")
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    return text.rstrip(".").lower()


def includes(reference: str, answer: str) -> bool:
    """Whether ``reference`` occurs in ``answer`` as a whole word (a number not inside a larger one)."""
    ref = clean(reference)
    if not ref:
        return True
    pattern = r"(?<![\w.])" + re.escape(ref) + r"(?!\w|\.\d)"
    return re.search(pattern, clean(answer)) is not None


def string_match(answers: Mapping[str, Any], answer: str) -> Verdict:
    scores: list[float] = []
    if "exact_match" in answers:
        scores.append(float(clean(answer) == clean(str(answers["exact_match"]))))
    for reference in answers.get("must_include", ()):
        scores.append(float(any(includes(alt, answer) for alt in str(reference).split(OR))))
    for reference in answers.get("fuzzy_match", ()):
        ratio = fuzz.token_set_ratio(clean(str(reference)), clean(answer)) / 100
        scores.append(1.0 if ratio >= FUZZY_THRESHOLD / 100 else ratio / 2)
    score = sum(scores) / len(scores) if scores else 0.0
    return Verdict(bool(scores) and score >= 1.0, score)


def url_match(reference: str, url: str) -> bool:
    ref_host, ref = split_url(reference)
    host, got = split_url(url)
    return (
        ref_host == host and ref.path == got.path and all(got.query.get(k) == v for k, v in ref.query.items())
    )


def _same(a: str, b: str) -> bool:
    return clean(a) == clean(b)


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


def evaluate(spec: Mapping[str, Any], answer: str, url: str, world: World) -> Verdict:
    """Judge an episode at ``stop [answer]``: every evaluator type of the spec must pass."""
    verdicts: list[Verdict] = []
    for kind in spec.get("eval_types", ()):
        if kind == "string_match":
            verdicts.append(string_match(spec.get("reference_answers", {}), answer))
        elif kind == "url_match":
            ok = url_match(str(spec.get("reference_url", "")), url)
            verdicts.append(Verdict(ok, float(ok)))
        elif kind == "program_state":
            ok = check_state(spec, world)
            verdicts.append(Verdict(ok, float(ok)))
    if not verdicts:
        return Verdict(False, 0.0)
    return Verdict(all(v.won for v in verdicts), min(v.score for v in verdicts))
