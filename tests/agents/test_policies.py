from __future__ import annotations

import pytest

from dreamgym_env.agents import NoisyPolicy, RandomPolicy, expert_policy
from dreamgym_env.domain import Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.domain import WebShopDomain
from dreamgym_env.errors import ConfigurationError

INFO = {"admissible_actions": ["search[<query>]"]}
PAGE = "WebShop | search\nInstruction: i need a yoga mat in black\n[Search]"


def test_random_policy_fills_placeholders_from_the_page_and_is_seeded():
    policy = RandomPolicy(seed=0)
    actions = [policy(PAGE, INFO) for _ in range(20)]
    assert all(a.startswith("search[") and a.endswith("]") and "<" not in a for a in actions)
    words = set(" ".join(a[7:-1] for a in actions).split())
    assert words <= {"WebShop", "search", "Instruction", "need", "yoga", "mat", "black", "Search"}
    again = RandomPolicy(seed=0)
    assert [again(PAGE, INFO) for _ in range(20)] == actions


def test_random_policy_is_uniform_over_admissible_actions():
    policy = RandomPolicy(seed=1)
    info = {"admissible_actions": ["click[a]", "click[b]", "click[c]"]}
    counts = {a: 0 for a in info["admissible_actions"]}
    for _ in range(3000):
        counts[policy("", info)] += 1
    assert all(900 < c < 1100 for c in counts.values())


def test_random_policy_needs_admissible_actions():
    with pytest.raises(ConfigurationError):
        RandomPolicy()("page", {})


def test_noisy_policy_mixes_with_the_given_share():
    calls = []

    def base(obs, info):
        calls.append(obs)
        return "click[base]"

    noisy = NoisyPolicy(base, epsilon=0.25, seed=0)
    actions = [noisy("p", {"admissible_actions": ["click[other]"]}) for _ in range(2000)]
    share = actions.count("click[other]") / len(actions)
    assert 0.2 < share < 0.3 and len(calls) == actions.count("click[base]")
    assert NoisyPolicy(base, epsilon=0.0)("p", {}) == "click[base]"
    with pytest.raises(ConfigurationError):
        NoisyPolicy(base, epsilon=2.0)


def test_noisy_policy_forwards_reset():
    class Stateful:
        resets = 0

        def reset(self):
            self.resets += 1

        def __call__(self, obs, info):
            return "x"

    inner = Stateful()
    NoisyPolicy(inner).reset()
    assert inner.resets == 1


def test_expert_policy_of_a_domain():
    policy = expert_policy(get_domain("webshop"))
    assert callable(policy)

    class NoExpert(WebShopDomain):
        name = "none"
        expert_policy = Domain.expert_policy

    with pytest.raises(ConfigurationError, match="no expert policy"):
        expert_policy(NoExpert())
