from __future__ import annotations

import pytest

from dreamgym_env.agents import NoisyPolicy, RandomPolicy, make_policy
from dreamgym_env.agents.rollouts import run_episode
from dreamgym_env.envs.webshop.expert import WebShopExpert, goal_query
from dreamgym_env.envs.webshop.goal import Goal
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.errors import ConfigurationError

TEST_TASKS = 500


def success_rate(policy, env: WebShopRefEnv, tasks) -> float:
    return sum(run_episode(env, policy, task=task).won for task in tasks) / len(tasks)


def test_expert_succeeds_and_random_fails_on_500_test_tasks():
    env = WebShopRefEnv(split="test", max_steps=15)
    tasks = env.tasks[:TEST_TASKS]
    assert success_rate(WebShopExpert(), env, tasks) >= 0.90
    assert success_rate(RandomPolicy(seed=0), env, tasks) <= 0.05


def test_noisy_expert_is_in_between():
    env = WebShopRefEnv(split="test", max_steps=15)
    tasks = env.tasks[:100]
    rate = success_rate(NoisyPolicy(WebShopExpert(), epsilon=0.3, seed=0), env, tasks)
    assert 0.3 < rate < 1.0


def test_expert_searches_with_the_goal_and_recovers_from_detours():
    env = WebShopRefEnv(split="test", max_steps=15)
    expert = WebShopExpert()
    obs, info = env.reset(options={"task": env.tasks[1]})
    goal = Goal.of_task(env.tasks[1])
    assert expert(obs, info) == f"search[{goal_query(goal)}]"
    obs, *_, info = env.step(expert(obs, info))
    obs, *_, info = env.step(expert(obs, info))  # opens an item
    obs, *_, info = env.step("click[Reviews]")  # a detour the expert did not choose
    assert expert(obs, info) == "click[< Prev]"
    obs, *_, info = env.step("not an action")
    assert expert(obs, info) == "click[< Prev]"  # the page is unchanged
    while True:
        obs, reward, terminated, truncated, info = env.step(expert(obs, info))
        if terminated or truncated:
            break
    assert info["won"]


def test_expert_needs_a_goal():
    with pytest.raises(ConfigurationError):
        WebShopExpert()("WebShop | search", {})


def test_make_policy_names():
    assert isinstance(make_policy("expert", "webshop"), WebShopExpert)
    assert isinstance(make_policy("noisy", "webshop", epsilon=0.1), NoisyPolicy)
    assert isinstance(make_policy("random", "webshop"), RandomPolicy)
    with pytest.raises(KeyError, match="Did you mean 'expert'"):
        make_policy("expret", "webshop")


def test_expert_plays_webshops_own_text_pages():
    """The real text (WebAgentTextEnv.convert_html_to_text) shows neither the item id nor the selection
    on an item page; the expert remembers what it clicked and wins as often as on the pages format."""
    wins = {}
    for mode in ("pages", "text"):
        env = WebShopRefEnv(split="test", max_steps=15, observation_mode=mode)
        expert = WebShopExpert()
        won = 0
        for task in env.tasks[:60]:
            obs, info = env.reset(options={"task": task})
            terminated = truncated = False
            while not (terminated or truncated):
                obs, _, terminated, truncated, info = env.step(expert(obs, info))
            won += info["won"]
        wins[mode] = won
    assert wins["text"] == wins["pages"] >= 55
