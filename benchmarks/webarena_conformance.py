"""How closely the WebArena pack follows the real WebArena code (web-arena-x/webarena, commit f62e0b9).

Each check compares the pack with an independent transcription, written here, of the real rules:

1. Action parser: ``browser_env/actions.py`` ``create_id_based_action`` (with ``_extract_action``
   of ``agent/prompts/prompt_constructor.py`` for a reply holding a fenced block) against
   :func:`~dreamgym_env.envs.webarena.grammar.parse_command` on every combination of verb
   spellings and argument forms below (over 325 strings).
2. Evaluators: ``evaluation_harness/evaluators.py`` ``StringEvaluator``, ``URLEvaluator`` and
   ``HTMLContentEvaluator`` on the edge cases of WebArena's protocol (answer cleaning, substring
   ``must_include``, ``|OR|``, products, N/A, URL host+path and query rules).
3. Tree lines: ``browser_env/processors.py`` ``parse_accessibility_tree`` +
   ``clean_accesibility_tree`` + the tab line of ``process``, run on the CDP-shaped nodes of every
   page the expert and a random policy see on the test split, against the env's observation.

Run: python benchmarks/webarena_conformance.py [--out runs/conformance/webarena_conformance.txt]
"""

from __future__ import annotations

import argparse
import collections
import random
import re
import urllib.parse
from pathlib import Path
from typing import Any

from dreamgym_env.envs.webarena.evaluators import html_content, string_match, url_match
from dreamgym_env.envs.webarena.expert import WebArenaExpert
from dreamgym_env.envs.webarena.grammar import ActionError, parse_command
from dreamgym_env.envs.webarena.reference_env import MAX_EPISODE_STEPS, WebArenaRefEnv
from dreamgym_env.envs.webarena.state import tree_lines

# -- 1. the action parser -------------------------------------------------------------------------

Parsed = tuple[Any, ...] | None


def real_extract_action(response: str) -> str:
    """``CoTPromptConstructor._extract_action``: the first block between ``` fences, stripped."""
    match = re.search(r"```((.|\n)*?)```", response)
    return match.group(1).strip() if match else response


def real_create_id_based_action(action_str: str) -> Parsed:
    """A transcription of ``create_id_based_action``: ``None`` where it raises."""
    action_str = action_str.strip()
    try:
        action = action_str.split("[")[0].strip() if "[" in action_str else action_str.split()[0].strip()
    except IndexError:  # the real code raises IndexError on an empty action
        return None
    if action in ("click", "hover"):
        m = re.search(rf"{action} ?\[(\d+)\]", action_str)
        return (action, int(m.group(1))) if m else None
    if action == "type":
        if not (action_str.endswith("[0]") or action_str.endswith("[1]")):
            action_str += " [1]"
        m = re.search(r"type ?\[(\d+)\] ?\[(.+)\] ?\[(\d+)\]", action_str)
        return ("type", int(m.group(1)), m.group(2) + ("\n" if m.group(3) == "1" else "")) if m else None
    if action in ("press", "goto"):
        m = re.search(rf"{action} ?\[(.+)\]", action_str)
        return (action, m.group(1)) if m else None
    if action == "scroll":
        m = re.search(r"scroll ?\[?(up|down)\]?", action_str)
        return ("scroll", m.group(1)) if m else None
    if action in ("new_tab", "go_back", "go_forward", "close_tab"):
        return (action,)
    if action == "tab_focus":
        m = re.search(r"tab_focus ?\[(\d+)\]", action_str)
        return ("tab_focus", int(m.group(1))) if m else None
    if action == "stop":
        m = re.search(r"stop ?\[(.+)\]", action_str)
        return ("stop", m.group(1) if m else "")
    return None


def ours(text: str) -> Parsed:
    command = parse_command(text)
    if isinstance(command, ActionError):
        return None
    verb = command.verb
    if verb in ("click", "hover"):
        return (verb, command.element)
    if verb == "type":
        return ("type", command.element, command.text + ("\n" if command.enter else ""))
    if verb == "tab_focus":
        return (verb, command.index)
    if verb in ("press", "goto", "scroll", "stop"):
        return (verb, command.text)
    return (verb,)


VERB_SPELLINGS = (
    *("click", "type", "hover", "press", "scroll", "new_tab", "tab_focus", "close_tab"),
    *("goto", "go_back", "go_forward", "stop", "Click", "TYPE", "Stop", "Scroll", "jump", "stop now"),
)
ARGUMENTS = (
    "",
    " [7]",
    "[7]",
    "  [7]",
    " [ 7 ]",
    " [abc]",
    " [7] extra",
    " 7",
    " [7] [red shoes]",
    " [7] [red shoes] [0]",
    " [7] [red shoes] [1]",
    " [7] [] [1]",
    " [7] [a [b] c]",
    " [7] [x] [2]",
    " [up]",
    " down",
    " [Down]",
    " [upward]",
    " [http://reddit.local/f/a b]",
    " [$12.99]",
    " []",
    " now",
    " [N/A]",
    " [Control+a]",
    " [7] [line\nbreak] [1]",
)


def parser_strings() -> list[str]:
    strings = [f"{verb}{argument}" for verb in VERB_SPELLINGS for argument in ARGUMENTS]
    strings += [
        "",
        "   ",
        "\t",
        "```click [5]```",
        "I will ```stop [3]``` then ```stop [4]```",
        "`click [5]`",
    ]
    return strings


def check_parser() -> tuple[int, int, list[str]]:
    strings = parser_strings()
    differ = [s for s in strings if ours(s) != real_create_id_based_action(real_extract_action(s))]
    return len(strings) - len(differ), len(strings), differ


# -- 2. the evaluators -------------------------------------------------------------------------------


def real_clean_answer(answer: str) -> str:
    answer = answer.strip()
    for quote in ("'", '"'):
        if answer.startswith(quote) and answer.endswith(quote):
            return answer[1:-1].lower()
    return answer.lower()


# nltk's word_tokenize on the answers below (Treebank rules), written out: nltk is not a dependency
NLTK_TOKENS = {
    "3": ["3"],
    "13": ["13"],
    "3.5": ["3.5"],
    "there are 3 orders.": ["there", "are", "3", "orders", "."],
    "$3": ["$", "3"],
    "3%": ["3", "%"],
    "3,000": ["3,000"],
    "3-4": ["3-4"],
    "0": ["0"],
    "10 items": ["10", "items"],
    "x": ["x"],
}


def real_string_evaluator(answers: dict[str, Any], answer: str) -> float:
    """``StringEvaluator.__call__`` without the LLM (fuzzy lists are not among these cases)."""
    pred = real_clean_answer(answer)
    score = 1.0
    for approach, value in answers.items():
        if approach == "exact_match":
            score *= float(real_clean_answer(pred) == real_clean_answer(value))
        elif approach == "must_include":
            for must in value:
                ref, cleaned = real_clean_answer(must), real_clean_answer(pred)
                if len(value) == 1 and len(ref) == 1:
                    score *= float(ref in NLTK_TOKENS[cleaned])
                else:
                    score *= float(ref in cleaned)
        elif approach == "fuzzy_match" and value == "N/A":
            score *= float(real_clean_answer(pred) == real_clean_answer(value))
    return score


def real_url_evaluator(reference: str, page_url: str) -> float:
    def parse(url: str) -> tuple[str, dict[str, list[str]]]:
        parsed = urllib.parse.urlparse(url)
        return parsed.netloc + parsed.path, urllib.parse.parse_qs(parsed.query)

    pred_base, pred_query = parse(page_url.rstrip("/"))
    bases, queries = [], collections.defaultdict(set)
    for ref in (r.rstrip("/") for r in reference.split(" |OR| ")):
        base, query = parse(ref)
        bases.append(base)
        for k, v in query.items():
            queries[k].update(v)
    score = float(any(b in pred_base for b in bases))
    for k, values in queries.items():
        score *= float(any(v in pred_query.get(k, []) for v in values))
    return score


def real_html_evaluator(targets: list[dict[str, Any]], content: dict[str, str]) -> float:
    score = 1.0
    for target in targets:
        page = content[target["url"]]
        required = target["required_contents"]
        if "exact_match" in required:
            score *= float(real_clean_answer(page) == real_clean_answer(required["exact_match"]))
        else:
            for item in required["must_include"]:
                score *= float(
                    any(real_clean_answer(o) in real_clean_answer(page) for o in item.split(" |OR| "))
                )
    return score


STRING_CASES: list[tuple[dict[str, Any], str]] = [
    ({"exact_match": "a.b@example.com"}, " 'A.B@example.com' "),
    ({"exact_match": "a.b@example.com"}, "a.b@example.com."),
    ({"exact_match": "new york"}, "New  York"),
    ({"exact_match": "x"}, "\"'x'\""),
    ({"must_include": ["12.99"]}, "$112.99"),
    ({"must_include": ["byteblaze"]}, "byteblaze2"),
    ({"must_include": ["3"]}, "13"),
    ({"must_include": ["3"]}, "3.5"),
    ({"must_include": ["3"]}, "there are 3 orders."),
    ({"must_include": ["3"]}, "$3"),
    ({"must_include": ["3"]}, "3%"),
    ({"must_include": ["3"]}, "3,000"),
    ({"must_include": ["3"]}, "3-4"),
    ({"must_include": ["0"]}, "10 items"),
    ({"must_include": ["3", "orders"]}, "13 orders"),
    ({"must_include": ["alpha", "beta"]}, "alpha only"),
    ({"must_include": ["65 |OR| 3"]}, "3"),
    ({"must_include": ["65 |OR| 3"]}, "65 |OR| 3 stars"),
    ({"must_include": ["0:17 |OR| 17 min"]}, "17 min"),
    ({"fuzzy_match": "N/A"}, "N/A"),
    ({"fuzzy_match": "N/A"}, "'n/a'"),
    ({"fuzzy_match": "N/A"}, "N/A: no such product"),
    ({"exact_match": "x", "must_include": ["x"]}, "x"),
]
URL_CASES: list[tuple[str, str]] = [
    ("http://reddit.local/f/books", "http://reddit.local/f/books/12"),
    ("http://reddit.local/f/books/", "http://reddit.local/f/books"),
    ("http://reddit.local/f/books", "http://REDDIT.local/f/books"),
    ("http://reddit.local/f/books", "http://reddit.local/f/bookshelf"),
    ("http://shopping.local/category/electronics", "http://shopping.local/category/toys-games"),
    ("http://map.local/directions?from=A&mode=car", "http://map.local/directions?from=A&to=B&mode=car"),
    ("http://map.local/directions?from=A&mode=car", "http://map.local/directions?from=A&mode=foot"),
    ("http://map.local/directions?from=A", "http://map.local/directions"),
    ("http://map.local/x?mode=car |OR| http://map.local/x?mode=foot", "http://map.local/x?mode=foot"),
    ("http://gitlab.local/a/b/-/issues", "http://gitlab.local/a/b/-/issues/?state=opened"),
]
HTML_CASES: list[list[dict[str, Any]]] = [
    [{"url": "last", "locator": "", "required_contents": {"must_include": ["nothing |OR| weekly"]}}],
    [{"url": "last", "locator": "", "required_contents": {"must_include": ["weekly", "absent"]}}],
    [{"url": "last", "locator": "", "required_contents": {"exact_match": "weekly thread"}}],
    [{"url": "other", "locator": "", "required_contents": {"exact_match": "Other page"}}],
]
HTML_PAGES = {"last": "Weekly thread", "other": "  other page "}


def check_evaluators() -> tuple[int, int, list[str]]:
    differ: list[str] = []
    for answers, answer in STRING_CASES:
        if string_match(answers, answer) != real_string_evaluator(answers, answer):
            differ.append(f"string_match {answers} {answer!r}")
    for reference, page in URL_CASES:
        if url_match(reference, page) != real_url_evaluator(reference, page):
            differ.append(f"url_match {reference!r} {page!r}")
    for targets in HTML_CASES:
        if html_content(targets, HTML_PAGES.__getitem__) != real_html_evaluator(targets, HTML_PAGES):
            differ.append(f"program_html {targets}")
    total = len(STRING_CASES) + len(URL_CASES) + len(HTML_CASES)
    return total - len(differ), total, differ


# -- 3. the tree lines ------------------------------------------------------------------------------

IGNORED_ACTREE_PROPERTIES = ("focusable", "editable", "readonly", "level", "settable", "multiline", "invalid")
EMPTY_ROLES = [
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
]


def cdp_nodes(elements: list[Any]) -> list[dict[str, Any]]:
    """The page's elements as the CDP ``Accessibility.getFullAXTree`` nodes the processor reads."""
    nodes: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = []
    for e in elements:
        node = {
            "nodeId": str(e.id),
            "role": {"value": e.role},
            "name": {"value": e.name},
            "properties": [{"name": k, "value": {"value": v}} for k, v in e.properties.items()],
            "childIds": [],
        }
        while stack and stack[-1][0] >= e.depth:
            stack.pop()
        if stack:
            stack[-1][1]["childIds"].append(node["nodeId"])
        stack.append((e.depth, node))
        nodes.append(node)
    return nodes


def real_parse_accessibility_tree(tree: list[dict[str, Any]]) -> str:
    index = {node["nodeId"]: i for i, node in enumerate(tree)}

    def dfs(idx: int, obs_node_id: str, depth: int) -> str:
        tree_str = ""
        node = tree[idx]
        indent = "\t" * depth
        valid_node = True
        role, name = node["role"]["value"], node["name"]["value"]
        node_str = f"[{obs_node_id}] {role} {name!r}"
        properties = [
            f"{p['name']}: {p['value']['value']}"
            for p in node.get("properties", [])
            if p["name"] not in IGNORED_ACTREE_PROPERTIES
        ]
        if properties:
            node_str += " " + " ".join(properties)
        if not node_str.strip():
            valid_node = False
        if not name.strip():
            if not properties:
                if role in EMPTY_ROLES:
                    valid_node = False
            elif role in ["listitem"]:
                valid_node = False
        if valid_node:
            tree_str += f"{indent}{node_str}"
        for child in node["childIds"]:
            if child not in index:
                continue
            child_str = dfs(index[child], child, depth + 1 if valid_node else depth)
            if child_str.strip():
                if tree_str.strip():
                    tree_str += "\n"
                tree_str += child_str
        return tree_str

    return dfs(0, tree[0]["nodeId"], 0)


def real_clean_accessibility_tree(tree_str: str) -> str:
    clean_lines: list[str] = []
    for line in tree_str.split("\n"):
        if "statictext" in line.lower():
            prev_lines = clean_lines[-3:]
            match = re.search(r"\[\d+\] StaticText (.+)", line, re.DOTALL)
            if match:
                static_text = match.group(1)[1:-1]
                if static_text and all(static_text not in prev for prev in prev_lines):
                    clean_lines.append(line)
        else:
            clean_lines.append(line)
    return "\n".join(clean_lines)


def real_observation(env: WebArenaRefEnv) -> str:
    """``TextObervationProcessor.process`` on the env's open tabs and current viewport."""
    browser = env.browser
    titles = browser.tab_titles()
    tabs = " | ".join(
        f"Tab {i} (current): {t}" if i == browser.active else f"Tab {i}: {t}" for i, t in enumerate(titles)
    )
    content = real_clean_accessibility_tree(real_parse_accessibility_tree(cdp_nodes(browser.visible())))
    return f"{tabs}\n\n{content}"


def check_tree(seed: int) -> dict[str, int]:
    env = WebArenaRefEnv(split="test")
    rng = random.Random(seed)
    counts = collections.Counter[str]()
    for task in env.tasks:
        for policy in ("expert", "random"):
            expert = WebArenaExpert()
            observation, info = env.reset(options={"task": task})
            for _ in range(MAX_EPISODE_STEPS):
                real = real_observation(env).split("\n")
                ours_text = observation.split("\nURL: ")[0].split("\n")
                ours_lines = tree_lines(env.browser.visible())
                counts["pages"] += 1
                counts["pages identical"] += real == ours_text
                counts["lines"] += len(real)
                counts["lines identical"] += sum(a == b for a, b in zip(real, ours_text, strict=False))
                counts["tree lines"] += len(ours_lines)
                counts["url line after the tree"] += f"\nURL: {env.browser.url}" in observation
                action = (
                    expert(observation, info)
                    if policy == "expert"
                    else rng.choice(info["admissible_actions"])
                )
                observation, _, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
    return dict(counts)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("runs/conformance/webarena_conformance.txt"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    out: list[str] = [
        "WebArena conformance (web-arena-x/webarena f62e0b99bc7d9e0cd996d0cf5ebb2225780ec279)",
        "",
    ]
    same, total, differ = check_parser()
    out.append(f"action parser vs create_id_based_action: {same} of {total} strings agree")
    out += [f"  differs: {s!r}" for s in differ]
    same, total, differ = check_evaluators()
    out.append(
        f"evaluators vs StringEvaluator/URLEvaluator/HTMLContentEvaluator: {same} of {total} edge cases agree"
    )
    out += [f"  differs: {s}" for s in differ]
    tree = check_tree(args.seed)
    out.append(
        f"tree vs parse_accessibility_tree + clean_accesibility_tree + process's tab line: "
        f"{tree['lines identical']} of {tree['lines']} lines identical "
        f"({100 * tree['lines identical'] / tree['lines']:.1f} %), "
        f"{tree['pages identical']} of {tree['pages']} pages identical "
        f"(expert and random play, test split); URL line after the tree on {tree['url line after the tree']} pages"
    )
    text = "\n".join(out) + "\n"
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
