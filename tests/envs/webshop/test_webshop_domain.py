from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

from pydantic import BaseModel

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.catalog import load_catalog
from dreamgym_env.envs.webshop.domain import PROMPT, WebShopDomain
from dreamgym_env.envs.webshop.expert import WebShopExpert
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.envs.webshop.tasks import load_tasks
from dreamgym_env.training.dataset import policy_transitions
from dreamgym_env.types import Task


def test_tasks_come_from_the_generated_split():
    domain = WebShopDomain()
    assert list(domain.tasks("train")) == list(load_tasks().train)
    assert list(domain.tasks("test")) == list(load_tasks().test)
    assert not resources.files("dreamgym_env.envs.webshop").joinpath("seed_tasks.jsonl").is_file()
    task = domain.tasks("test")[0]
    assert task.domain == "webshop" and "goal" in task.metadata


def test_reference_env_and_expert_factories():
    domain = get_domain("webshop")
    env = domain.make_reference_env(split="test", reward="score")
    assert isinstance(env, WebShopRefEnv) and env.reward_mode == "score" and env.split == "test"
    assert isinstance(domain.expert_policy(), WebShopExpert)


def test_free_instruction_task_starts_on_a_search_page():
    task = WebShopDomain().make_task("i want red running shoes")
    assert task.initial_state == "WebShop | search\nInstruction: i want red running shoes\n[Search]"


def test_prompt_describes_actions_pages_and_reward():
    for text in (
        "search[query]",
        "click[label]",
        "[Back to Search]",
        "[Buy Now]",
        "Selected: none",
        "No products match the query.",
    ):
        assert text in PROMPT.rules + PROMPT.state_format, text
    assert "reward 1" in PROMPT.reward_rubric


def _given(task: Task, state: BaseModel, action: str) -> dict[str, Any]:
    """The fields the shop's data fixes in the next state of ``action`` on the abstract ``state``."""
    return get_domain("webshop").answer_fields(state.model_dump_json(), action, task)["given_fields"]


def _world(task: Task, state: str, action: str) -> tuple[str, ...]:
    """The world lines a request for ``action`` on ``state`` (a page's text or JSON) shows."""
    return tuple(get_domain("webshop").answer_fields(state, action, task)["world"])


def _field(line: str) -> tuple[str, object]:
    name, value = line.split(": ", 1)
    return json.loads(name), json.loads(value)


def test_the_given_fields_are_the_next_states_catalog_fields_on_reference_episodes():
    """What a structured request takes from the catalog is what the reference env's next page holds."""
    domain = get_domain("webshop")
    given: dict[str, int] = {}
    for policy in ("expert", "noisy", "random"):
        for transition in policy_transitions(domain, "test", policy, 60, seed=3):
            request, after = transition.request, json.loads(transition.truth.next_state)
            # structured: looked up, not shown (a purchase shows its scoring's findings)
            assert len(request.world) == domain.is_terminal_action(domain.parse_action(request.action))
            for name, value in request.given_fields.items():
                assert after[name] == value, (request.action, name)
                given[name] = given.get(name, 0) + 1
            if (
                domain.parse_action(request.action).verb == "search"
            ):  # the engine's results, whatever the query
                assert list(request.given_fields) == ["query", "page", "total", "results"]
    assert given["results"] and given["item"] and given["text"] and given["selected"] and given["page"]


def test_the_catalog_answers_only_what_it_decides():
    domain = get_domain("webshop")
    task = domain.tasks("test")[0]
    env = WebShopRefEnv(split="test")
    env.reset(options={"task": task})
    start = env.abstract_state
    assert _given(task, start, "search[qqqzzz xxyyq]") == {
        "query": "qqqzzz xxyyq",
        "page": 1,
        "total": 0,
        "results": [],
    }
    env.step(f"search[{task.instruction}]")
    results = env.abstract_state
    item_id = results.results[0].id
    facts = _given(task, results, f"click[{item_id.lower()}]")  # any case
    env.step(f"click[{item_id}]")
    item = env.abstract_state
    assert item.item is not None and facts == {"item": item.item.model_dump(mode="json")}
    for action in ("click[Buy Now]", "click[Features]", "click[Back to Search]", "click[no such label]"):
        assert _given(task, item, action) == {}, action
    # An option value: the selection after it, as the reference env's item page holds it.
    product = next(p for p in load_catalog().products if p.id == item.item.id)
    first, second = product.options[0].values[:2]
    for value in (first, second.upper()):  # the last click of a group wins; arguments in any case
        facts = _given(task, item, f"click[{value}]")
        env.step(f"click[{value.lower()}]")
        item = env.abstract_state
        assert facts == {"selected": [c.model_dump(mode="json") for c in item.selected]}
    assert [c.value for c in item.selected] == [second]


def test_a_text_request_shows_the_catalogs_answers_as_lines():
    domain = get_domain("webshop")
    task = domain.tasks("test")[0]
    env = WebShopRefEnv(split="test")
    env.reset(options={"task": task})
    env.step(f"search[{task.instruction}]")
    item_id = env.abstract_state.results[0].id
    lines = _world(task, env.state, f"click[{item_id}]")
    assert dict(map(_field, lines)) == _given(task, env.abstract_state, f"click[{item_id}]")
    # A search needs no page: a text the shop never showed still gets the engine's results.
    assert [name for name, _ in map(_field, _world(task, "not a page", "search[shirt]"))] == [
        "query",
        "page",
        "total",
        "results",
    ]
    assert _world(task, "not a page", "click[Next >]") == ()
    assert _world(task, env.state, "fly") == ()
    assert _world(task, env.abstract_state.model_dump_json(), f"click[{item_id}]") == ()  # structured: given


def test_a_structured_request_asked_in_text_mode_shows_the_given_fields_as_lines():
    from dreamgym_env.bench.sampling import text_request

    domain = get_domain("webshop")
    transition = next(
        t for t in policy_transitions(domain, "test", "expert", 10, seed=1) if t.request.given_fields
    )
    text = text_request(domain, transition.request)
    assert text.given_fields == {} and text.state_schema is None
    assert dict(map(_field, text.world)) == transition.request.given_fields


_PURCHASE_LINE = re.compile(
    r"product type (\S+) \(of 1\); requested attributes (\d+) of (\d+).*; "
    r"requested options (\d+) of (\d+); price within the bound: (yes|no); short of the goal: (.*)$"
)


def _complete(line: str) -> bool:
    """Whether a purchase line finds every part of the goal (type 1, all attributes and options, price)."""
    match = _PURCHASE_LINE.search(line)
    assert match is not None, line
    kind, attributes, wanted_attributes, options, wanted_options, price, short = match.groups()
    complete = (
        kind == "1" and attributes == wanted_attributes and options == wanted_options and price == "yes"
    )
    assert (short == "none") == complete, line
    return complete


def test_a_structured_purchase_request_shows_what_webshops_scoring_finds():
    domain = get_domain("webshop")
    purchases = [
        transition
        for policy in ("expert", "noisy", "random")
        for transition in policy_transitions(domain, "test", policy, 600, seed=5)
        if domain.is_terminal_action(domain.parse_action(transition.request.action))
    ]
    assert len(purchases) > 30
    for transition in purchases:
        request = transition.request
        (line,) = _world(request.task, request.state, request.action)
        assert line.startswith("If bought, WebShop's scoring finds: product type ")
        # the parts are the reference env's: every part found exactly when the purchase wins
        assert _complete(line) == (transition.truth.reward == 1.0), line
    assert {transition.truth.reward for transition in purchases} == {0.0, 1.0}
    # Off [Buy Now], and on a task without a goal, no line.
    request = purchases[0].request
    assert _world(request.task, request.state, "click[< Prev]") == ()
    free = domain.make_task(request.task.instruction)
    assert _world(free, request.state, request.action) == ()


def test_back_to_search_opens_the_search_page_whatever_the_model_wrote():
    """A model's done page after [Back to Search] offered no action and stranded the episode."""
    domain = get_domain("webshop")
    task = domain.tasks("test")[0]
    on_results = domain.parse_state(
        json.dumps({"kind": "results", "instruction": task.instruction, "query": "belt"})
    )
    done = on_results.model_copy(update={"kind": "search", "query": "junk"})
    back, buy = domain.parse_action("click[Back to Search]"), domain.parse_action("click[Buy Now]")
    state = on_results.model_dump_json()
    assert domain.supplied_fields(task, state, back).settled(done) == domain.initial_abstract_state(task)
    bought = domain.supplied_fields(task, state, buy).settled(done)
    assert bought is done  # every other answer stays the model's
