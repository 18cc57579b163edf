from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.errors import ConfigurationError, SpaceMismatchError
from dreamgym_env.wrappers.choice_actions import INVALID_CHOICE, ChoiceActions, candidate_actions, slot_filler


@pytest.fixture
def env():
    return ChoiceActions(WebShopRefEnv(split="test", max_steps=15), max_actions=16)


def test_indices_take_the_admissible_actions_in_order(env):
    _, info = env.reset(seed=0)
    task = info["task"]
    assert info["action_candidates"] == [f"search[{task.instruction}]"]
    assert env.action(0) == f"search[{task.instruction}]"
    observation, _, _, _, info = env.step(0)
    assert info["action_text"] == f"search[{task.instruction}]" and info["action_valid"]
    admissible = info["admissible_actions"]
    assert info["action_candidates"] == admissible[:16]
    item = next(i for i, a in enumerate(admissible) if a.startswith("click[B0"))
    _, _, _, _, after = env.step(item)
    assert after["action_text"] == admissible[item]
    assert after["action_valid"] and f"item {admissible[item][6:-1]}" in env.unwrapped.state


def test_masks_mark_the_candidates_and_padding_is_an_invalid_action(env):
    _, info = env.reset(seed=0)
    mask = env.action_masks()
    assert mask.dtype == np.bool_ and mask.shape == (16,)
    assert mask.tolist() == [True] + [False] * 15
    observation, reward, terminated, _, info = env.step(9)  # a padding slot
    assert (
        info["action_text"] == INVALID_CHOICE
        and not info["action_valid"]
        and reward == 0.0
        and not terminated
    )
    env.step(0)
    n = len(env.candidates)
    assert 1 < n <= 16 and env.action_masks().tolist() == [True] * n + [False] * (16 - n)


def test_candidates_are_cut_at_max_actions_and_deduplicated():
    info = {"admissible_actions": ["click[a]", "click[b]", "click[a]", "click[c]"]}
    assert candidate_actions(info, 2, slot_filler(None)) == ["click[a]", "click[b]"]
    assert candidate_actions(info, 8, slot_filler(None)) == ["click[a]", "click[b]", "click[c]"]
    filled = candidate_actions(
        {"admissible_actions": ["search[<query>]"]},
        4,
        fill=lambda action, info, observation: ["search[x]", "search[y]"],
    )
    assert filled == ["search[x]", "search[y]"]


def test_a_page_without_actions_leaves_every_index_open(env):
    env.reset(seed=0)
    env.candidates = []
    assert env.action_masks().all()


def test_works_on_the_synthetic_env(scripted_model):
    env = ChoiceActions(DreamEnv("webshop", scripted_model, max_steps=5), max_actions=8)
    _, info = env.reset(seed=0)
    env.step(0)  # the search
    buy = env.candidates.index("click[Buy Now]")
    _, reward, terminated, _, info = env.step(buy)
    assert terminated and reward == 1.0 and info["won"]


def test_refuses_non_text_action_spaces_and_envs_without_admissible_actions(scripted_model):
    with pytest.raises(SpaceMismatchError, match="Text action space, got Discrete"):
        ChoiceActions(gym.make("CartPole-v1"))
    with pytest.raises(ConfigurationError):
        ChoiceActions(WebShopRefEnv(), max_actions=0)
    with pytest.raises(ConfigurationError, match="admissible_actions"):
        candidate_actions({}, 4, slot_filler(None))
