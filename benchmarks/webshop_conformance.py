"""Does the WebShop reference env score purchases as WebShop's own ``get_reward`` does?

Plays expert, noisy (the expert, 30 % random actions) and random episodes of
``WebShopRefEnv`` until each policy has made ``--purchases`` purchases (or ran out of episodes)
and re-scores every purchase with a second, independent transcription of
``get_reward`` in ``web_agent_site/engine/goal.py`` (princeton-nlp/WebShop 64fa2a5) written
below: its own text processing and Indel ratio (longest common subsequence), its own
``token_set_ratio``, colour list and noun rule; nothing of ``dreamgym_env.envs.webshop.goal``.
A purchase agrees when both scores are equal within 1e-9. Prints the agreement per policy and
overall (Must-show: >= 99 %) and each policy's success, and on how many steps the synthetic
env's view of the Markov page (``WebShopDomain.render_observation(info["state"])``, what
``DreamGym/WebShop-v0`` shows the agent) equals the reference env's observation, and writes the
report to ``runs/conformance/webshop_conformance.txt``, with one page of each kind as the env
prints it by default (``observation_mode="text"``, WebShop's own page text).

Run: python benchmarks/webshop_conformance.py [--purchases 200] [--max-episodes 3000]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from dreamgym_env.agents import NoisyPolicy, RandomPolicy
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.catalog import Product
from dreamgym_env.envs.webshop.expert import WebShopExpert
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv

REPORT = Path("runs/conformance/webshop_conformance.txt")
MAX_STEPS = 15

# -- an independent transcription of WebShop's get_reward ------------------------------------------

# web_agent_site/engine/normalize.py COLOR_SET, in its order
COLOR_SET = (
    "alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze "
    "brown burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate "
    "christmas coffee cognac copper coral cranberry cream crystal dark denim eggplant "
    "elephant espresso fuchsia gold granite grape graphite grass gray green grey heather "
    "indigo ivory ivy khaki lavender lemon leopard light lilac lime magenta maroon mauve "
    "merlot midnight mint mocha multicolor mushroom mustard natural navy nude olive orange "
    "peach pewter pink plum purple rainbow red rose royal rust sand sapphire seashell silver "
    "skull slate steel stone stonewash sunflower tan taupe teal tiger turquoise violet "
    "walnut wheat white wine yellow"
)
COLORS = COLOR_SET.split()
# the documented noun rule (spaCy's model is not available): every word but these and numbers
FUNCTION_WORDS = "a an the and or nor but of for with without in on at to by from into onto over under up out off as per via vs s"
NOT_NOUNS = set(FUNCTION_WORDS.split())


def process(text: str) -> str:
    """thefuzz full_process: non-alphanumerics to spaces, lower case, trimmed."""
    return "".join(c if c.isalnum() else " " for c in text).lower().strip()


@cache
def indel_ratio(a: str, b: str) -> float:
    """100 * 2 * LCS(a, b) / (len a + len b), as python-Levenshtein's ratio."""
    if not a and not b:
        return 0.0
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0]
        for j, cb in enumerate(b):
            current.append(previous[j] + 1 if ca == cb else max(previous[j + 1], current[j]))
        previous = current
    return 200.0 * previous[-1] / (len(a) + len(b))


def token_set_ratio(s1: str, s2: str) -> int:
    t1, t2 = set(process(s1).split()), set(process(s2).split())
    if not t1 or not t2:
        return 0
    common = " ".join(sorted(t1 & t2))
    left = (common + " " + " ".join(sorted(t1 - t2))).strip()
    right = (common + " " + " ".join(sorted(t2 - t1))).strip()
    return round(max(indel_ratio(common, left), indel_ratio(common, right), indel_ratio(left, right)))


def first_color(value: str) -> str:
    for color in COLORS:
        if color in value:
            return color
    return value


def nouns(title: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", title.lower()) if w not in NOT_NOUNS and not w.isdigit()]


def webshop_reward(product: Product, goal: dict[str, Any], options: list[str]) -> tuple[float, float]:
    """get_reward(purchased_product, goal, price, options) over our product's fields, and its r_type."""
    query_match = product.query == goal["query"]
    bought_crumbs = {x.strip() for x in product.product_category.split("›")}
    goal_crumbs = {x.strip() for x in goal["product_category"].split("›")}
    category_match = len(bought_crumbs & goal_crumbs) >= 2
    desired = nouns(goal["name"])
    title_score = len(set(nouns(product.title)) & set(desired)) / len(desired) if desired else 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0

    attributes = 0
    for wanted in goal["attributes"]:
        if any(token_set_ratio(own, wanted) > 85 for own in product.attributes) or (
            wanted in product.title.lower()
            or wanted in " ".join(product.bullet_points).lower()
            or wanted in product.description.lower()
        ):
            attributes += 1

    bought = [first_color(o) for o in options]
    wanted_options = [first_color(o) for o in goal["options"].values()]
    matched = sum(any(token_set_ratio(b, w) > 85 for b in bought) for w in wanted_options)
    price = product.price <= goal["price_upper"]
    total = len(goal["attributes"]) + len(goal["options"]) + 1
    return (attributes + matched + price) / total * r_type, r_type


# -- playing ---------------------------------------------------------------------------------------


@dataclass
class Tally:
    episodes: int = 0
    wins: int = 0
    purchases: int = 0
    agree: int = 0
    steps: int = 0
    same_text: int = 0
    """Steps whose observation is ``render_observation`` of the step's Markov page."""
    mismatches: list[str] = field(default_factory=list)
    r_types: Counter[float] = field(default_factory=Counter)


def play(name: str, policy: Callable[[str, dict[str, Any]], str], purchases: int, max_episodes: int) -> Tally:
    env = WebShopRefEnv(split="train", max_steps=MAX_STEPS)
    domain = get_domain("webshop")
    tally = Tally()
    while tally.purchases < purchases and tally.episodes < max_episodes:
        task = env.tasks[tally.episodes % len(env.tasks)]
        obs, info = env.reset(seed=tally.episodes, options={"task": task})
        if isinstance(policy, WebShopExpert):
            policy.reset()
        tally.episodes += 1
        terminated = truncated = False
        while not (terminated or truncated):
            obs, _, terminated, truncated, info = env.step(policy(obs, info))
            tally.steps += 1
            shown = domain.render_observation(info["state"], info["score"] if terminated else None)
            tally.same_text += shown == obs
        tally.wins += bool(info["won"])
        if not terminated:
            continue
        state = info["abstract_state"]
        product = env.catalog.by_id[state.item.id]
        expected, r_type = webshop_reward(product, task.metadata["goal"], [c.value for c in state.selected])
        tally.purchases += 1
        tally.r_types[r_type] += 1
        if abs(expected - info["score"]) <= 1e-9:
            tally.agree += 1
        else:
            tally.mismatches.append(
                f"{name} {task.id} {product.id}: env {info['score']:.4f} vs {expected:.4f}"
            )
    return tally


def text_pages() -> list[str]:
    """One observation of each page kind in observation_mode="text" (WebShop's own page text)."""
    env = WebShopRefEnv(split="test")
    expert = WebShopExpert()
    obs, info = env.reset(options={"task": env.tasks[0]})
    seen = {"search": obs}
    for action in ("search[<goal>]", "click[Next >]", "<open>", "click[Description]", "click[< Prev]"):
        if action == "search[<goal>]":
            action = expert(obs, info)
        elif action == "<open>":
            action = info["admissible_actions"][3]
        obs, *_, info = env.step(action)
        seen.setdefault(env.page.kind, obs)
    for sub in ("Features", "Reviews"):
        seen[sub.lower()], *_ = env.step(f"click[{sub}]")
        env.step("click[< Prev]")
    seen["done"], *_ = env.step("click[Buy Now]")
    return [f"{kind}: {text[:400]}" for kind, text in seen.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--purchases", type=int, default=200, help="purchases to re-score per policy")
    parser.add_argument("--max-episodes", type=int, default=3_000, help="episodes per policy at most")
    args = parser.parse_args()
    policies: dict[str, Callable[[str, dict[str, Any]], str]] = {
        "expert": WebShopExpert(),
        "noisy": NoisyPolicy(WebShopExpert(), epsilon=0.3, seed=0),
        "random": RandomPolicy(seed=0),
    }
    lines = [
        "WebShop reward conformance: env info['score'] vs an independent transcription of",
        "get_reward (web_agent_site/engine/goal.py, princeton-nlp/WebShop 64fa2a5)",
        f"{'policy':<8} {'episodes':>8} {'success':>8} {'purchases':>9} {'agree':>7} {'share':>7}  r_type counts",
    ]
    total = agree = steps = same_text = 0
    mismatches: list[str] = []
    for name, policy in policies.items():
        t = play(name, policy, args.purchases, args.max_episodes)
        total, agree = total + t.purchases, agree + t.agree
        steps, same_text = steps + t.steps, same_text + t.same_text
        mismatches += t.mismatches
        share = t.agree / max(1, t.purchases)
        types = " ".join(f"{k:g}:{v}" for k, v in sorted(t.r_types.items()))
        lines.append(
            f"{name:<8} {t.episodes:>8} {t.wins / t.episodes:>8.3f} {t.purchases:>9} {t.agree:>7} {share:>7.1%}  {types}"
        )
    lines.append(f"{'overall':<8} {'':>8} {'':>8} {total:>9} {agree:>7} {agree / max(1, total):>7.1%}")
    lines += [f"mismatch: {m}" for m in mismatches[:20]]
    lines.append(
        f"synthetic view (render_observation of info['state']) equals the observation on "
        f"{same_text}/{steps} steps ({same_text / max(1, steps):.1%})"
    )
    lines += ["", "page text, the default observation (first 400 characters of each kind):", *text_pages()]
    text = "\n".join(lines)
    print(text)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(text + "\n")


if __name__ == "__main__":
    main()
