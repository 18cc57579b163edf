from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from dreamgym_env.envs.webshop.domain import SHOPPING_STOPWORDS
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.errors import ConfigurationError, SpaceMismatchError
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.wrappers.choice_actions import ChoiceActions
from dreamgym_env.wrappers.embed_observation import (
    CANDIDATE_FEATURES,
    EmbedObservation,
    context_of,
    label_of,
    words,
)

COL = {name: i for i, name in enumerate(CANDIDATE_FEATURES)}


@pytest.fixture
def env():
    return EmbedObservation(
        ChoiceActions(WebShopRefEnv(split="test", max_steps=15), max_actions=24), HashedEmbedder(64)
    )


def test_observations_are_in_the_dict_space(env):
    observation, info = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    assert observation["actions"].shape == (24, 64) and observation["features"].shape == (
        24,
        len(CANDIDATE_FEATURES),
    )
    for _ in range(4):
        observation, *_ = env.step(0)  # search, back to search, ...
        assert env.observation_space.contains(observation)


def test_rows_describe_the_candidates_and_padding_is_zero(env):
    env.reset(seed=0)
    observation, _, _, _, info = env.step(0)
    n = len(info["action_candidates"])
    features, actions = observation["features"], observation["actions"]
    assert features[:n, COL["present"]].tolist() == [1.0] * n
    assert not features[n:].any() and not actions[n:].any()
    assert np.allclose(np.linalg.norm(actions[:n], axis=1), 1.0, atol=1e-5)
    # a result row that shares words with the instruction covers more of it than a navigation button
    items = [i for i, a in enumerate(info["action_candidates"]) if a.startswith("click[B0")]
    back = info["action_candidates"].index("click[Back to Search]")
    assert features[items, COL["context_coverage"]].max() > features[back, COL["context_coverage"]]
    assert features[items, COL["similarity"]].max() > features[back, COL["similarity"]]


def test_option_labels_named_in_the_instruction_score_full_recall(env):
    _, info = env.reset(seed=0)
    instruction = info["task"].instruction
    env.step(0)
    item = next(i for i, a in enumerate(env.get_wrapper_attr("candidates")) if a.startswith("click[B0"))
    observation, _, _, _, info = env.step(item)
    candidates = info["action_candidates"]
    recall = observation["features"][: len(candidates), COL["label_recall"]]
    for action, value in zip(candidates, recall, strict=True):
        label_words = words(label_of(action), SHOPPING_STOPWORDS)
        expected = (
            len(label_words & words(instruction, SHOPPING_STOPWORDS)) / len(label_words)
            if label_words
            else 0.0
        )
        assert value == pytest.approx(expected)


def test_taken_actions_and_progress_are_tracked(env):
    env.reset(seed=0)
    env.step(0)
    back = env.get_wrapper_attr("candidates").index("click[Back to Search]")
    observation, *_ = env.step(back)
    assert observation["features"][0, COL["times_taken"]] == pytest.approx(1 / 3)  # the search again
    assert observation["features"][0, COL["is_last_action"]] == 0.0
    assert observation["progress"][0] == pytest.approx(2 / 15)
    observation, *_ = env.reset(seed=1)
    assert observation["features"][0, COL["times_taken"]] == 0.0 and observation["progress"][0] == 0.0


def test_helpers():
    page = "WebShop | item\n[Back to Search] [< Prev]\ncolor: [navy blue] [red]\n[Buy Now]"
    assert label_of("click[Buy Now]") == "Buy Now" and label_of("go to desk 1") == "go to desk 1"
    assert context_of("click[navy blue]", page) == "color: [navy blue] [red]"
    assert context_of("click[missing]", page) == "click[missing]"
    assert words("I need a Men's shirt, 2 pack", SHOPPING_STOPWORDS) == {"mens", "shirt", "2", "pack"}
    assert words("I need a shirt") == {"i", "need", "a", "shirt"}


def test_refuses_non_text_observations_and_conflicting_sizes():
    with pytest.raises(SpaceMismatchError, match="Text observation space, got Box"):
        EmbedObservation(gym.make("CartPole-v1"))
    with pytest.raises(ConfigurationError, match="max_actions"):
        EmbedObservation(ChoiceActions(WebShopRefEnv(), max_actions=8), max_actions=16)
