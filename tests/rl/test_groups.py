from __future__ import annotations

import numpy as np
import pytest

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.rl.groups import (
    collect_groups,
    group_advantages,
    per_env_policy,
    reward_variance,
    step_envs,
)


def test_group_advantages_are_centred_and_scaled_per_group():
    adv = group_advantages([1, 0, 0, 0, 1, 1, 1, 1], group_size=4)
    first = np.array([0.75, -0.25, -0.25, -0.25]) / np.std([1, 0, 0, 0])
    assert np.allclose(adv[:4], first, atol=1e-4) and np.allclose(adv[4:], 0.0)
    assert np.allclose(group_advantages([2.0, 0.0], 2, scale=False), [1.0, -1.0])
    assert reward_variance([1, 0, 1, 0, 1, 1], 2).tolist() == [0.25, 0.25, 0.0]
    with pytest.raises(ConfigurationError):
        group_advantages([1, 2, 3], 2)


def buy_if_odd(observations, infos):
    """Search first; then buy in odd-numbered rollouts, go back in even ones (a policy with mixed outcomes)."""
    return [
        "search[anything]"
        if "[Search]" in info["state"]  # the search page's Markov text
        else ("click[Buy Now]" if info["rollout"] % 2 else "click[< Prev]")
        for obs, info in zip(observations, infos, strict=True)
    ]


def test_groups_on_a_vector_env_share_tasks_and_batch_model_calls(scripted_model):
    envs = DreamVectorEnv(6, "webshop", scripted_model, max_steps=3, split="test")
    episodes = collect_groups(envs, buy_if_odd, group_size=3, num_tasks=2, seed=0)
    assert len(episodes) == 6
    assert [e.group for e in episodes] == [0, 0, 0, 1, 1, 1]
    assert episodes[0].task == episodes[2].task != episodes[3].task
    assert all(e.actions[0] == "search[anything]" for e in episodes)
    assert [e.won for e in episodes] == [False, True, False, True, False, True]
    assert [len(e.actions) for e in episodes] == [3, 2, 3, 2, 3, 2]
    assert episodes[0].truncated and not episodes[1].truncated
    returns = [e.total_reward for e in episodes]
    assert np.allclose([e.advantage for e in episodes], group_advantages(returns, 3))
    # one model batch per step of all running rollouts: 3 steps, not 6 + 6 + 3 calls
    assert scripted_model.batches == 3 and scripted_model.calls == 6 + 6 + 3


def test_groups_on_reference_envs_in_waves():
    envs = [WebShopRefEnv(split="test", max_steps=4) for _ in range(3)]
    tasks = list(envs[0].tasks[:2])
    expert_actions = per_env_policy(
        lambda obs, info: info["admissible_actions"][0].replace("<query>", "shoes")
    )
    episodes = collect_groups(envs, expert_actions, group_size=4, tasks=tasks, seed=1, max_steps=2)
    assert len(episodes) == 8 and [e.task.id for e in episodes] == [tasks[0].id] * 4 + [tasks[1].id] * 4
    assert all(len(e.actions) == 2 and e.truncated for e in episodes)
    assert all(e.advantage == 0.0 for e in episodes)  # equal returns: nothing to learn


def test_step_envs_mixes_synthetic_and_other_envs(scripted_model):
    synthetic = [DreamEnv("webshop", scripted_model, max_steps=3) for _ in range(2)]
    real = WebShopRefEnv(split="test")
    for env in (*synthetic, real):
        env.reset(seed=0)
    results = step_envs([synthetic[0], real, synthetic[1]], ["search[a]", "search[b]", "not an action"])
    assert results[0][4]["source"] == "synthetic" and results[1][4]["source"] == "real"
    assert not results[2][4]["action_valid"]
    assert scripted_model.batches == 1 and scripted_model.calls == 1


def test_bad_arguments():
    with pytest.raises(ConfigurationError):
        collect_groups([], per_env_policy(lambda o, i: ""), group_size=2, num_tasks=1)
    with pytest.raises(ConfigurationError):
        collect_groups([WebShopRefEnv()], per_env_policy(lambda o, i: ""), group_size=2)
