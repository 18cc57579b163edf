from __future__ import annotations

from importlib import resources

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.domain import PROMPT, WebShopDomain
from dreamgym_env.envs.webshop.expert import WebShopExpert
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.envs.webshop.tasks import load_tasks


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
