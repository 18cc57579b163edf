from __future__ import annotations

import json
from importlib import resources

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.domain import PROMPT, WebShopDomain
from dreamgym_env.envs.webshop.expert import WebShopExpert
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.envs.webshop.tasks import load_tasks
from dreamgym_env.training.dataset import policy_transitions


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


def _field(line: str) -> tuple[str, object]:
    name, value = line.split(": ", 1)
    return json.loads(name), json.loads(value)


def test_the_world_lines_are_the_next_states_catalog_fields_on_reference_episodes():
    """What a request shows of the catalog is what the reference env's next page holds, field for field."""
    domain = get_domain("webshop")
    shown: dict[str, int] = {}
    for policy in ("expert", "noisy", "random"):
        for transition in policy_transitions(domain, "test", policy, 60, seed=3):
            request, after = transition.request, json.loads(transition.truth.next_state)
            parsed = domain.parse_action(request.action)
            for name, value in map(_field, request.world):
                assert after[name] == value, (request.action, name)
                shown[name] = shown.get(name, 0) + 1
            if parsed.verb == "search":  # the engine's results, whatever the query
                assert [name for name, _ in map(_field, request.world)] == ["total", "results"]
    assert shown["results"] and shown["item"] and shown["text"]


def test_the_world_lines_name_only_what_the_catalog_decides():
    domain = get_domain("webshop")
    task = domain.tasks("test")[0]
    env = WebShopRefEnv(split="test")
    env.reset(options={"task": task})
    start = env.abstract_state.model_dump_json()
    nothing = domain.world_lines(task, start, "search[qqqzzz xxyyq]")
    assert [_field(line) for line in nothing] == [("total", 0), ("results", [])]
    # A search needs no page: a text the shop never showed still gets the engine's results.
    assert domain.world_lines(task, "not a page", "search[shirt]") == domain.world_lines(
        task, start, "search[shirt]"
    )
    env.step(f"search[{task.instruction}]")
    results = env.abstract_state
    item_id = results.results[0].id
    from_text = domain.world_lines(task, env.state, f"click[{item_id.lower()}]")  # any case, text or JSON
    assert from_text == domain.world_lines(task, results.model_dump_json(), f"click[{item_id}]")
    env.step(f"click[{item_id}]")
    item = env.abstract_state
    assert item.item is not None
    assert [_field(line) for line in from_text] == [("item", item.item.model_dump(mode="json"))]
    for action in ("click[Buy Now]", "click[Features]", "click[Back to Search]", "click[no such label]"):
        assert domain.world_lines(task, item.model_dump_json(), action) == (), action
    assert domain.world_lines(task, "not a page", "click[Next >]") == ()
    assert domain.world_lines(task, item.model_dump_json(), "fly") == ()
