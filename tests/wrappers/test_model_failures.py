from __future__ import annotations

import logging

import pytest

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import ModelOutputError, ModelServerError
from dreamgym_env.experience.base import ExperienceRequest
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import Transition
from dreamgym_env.wrappers.model_failures import TruncateOnModelError


def failing_on(word: str, page_after, error: Exception):
    """A scripted model that answers as ``page_after`` except on actions containing ``word``."""

    def answer(request: ExperienceRequest) -> Transition:
        if word in request.action:
            raise error
        return page_after(request)

    return ScriptedExperienceModel(answer)


def test_an_unusable_answer_ends_the_episode_truncated_with_the_last_observation(page_after, caplog):
    model = failing_on("broken", page_after, ModelOutputError("kept answering 'reward': 4.95"))
    env = TruncateOnModelError(DreamEnv("webshop", model, max_steps=5, split="test"))
    env.reset(seed=0)
    observation, _, _, _, info = env.step("search[shoes]")
    with caplog.at_level(logging.WARNING):
        failed = env.step("search[broken]")
    assert failed[0] == observation and failed[1:4] == (0.0, False, True)
    assert failed[4]["model_error"].startswith("ModelOutputError: kept answering")
    assert failed[4]["state"] == info["state"]  # the info of the last step it answered
    assert "the episode ends truncated" in caplog.text
    assert (env.failures, env.steps) == (1, 2)
    assert len(env.unwrapped.steps) == 1  # the failed step recorded nothing
    env.reset(seed=1)  # and the next episode plays
    assert env.step("search[socks]")[3] is False
    env.close()


def test_a_transport_error_still_raises(page_after):
    model = failing_on("broken", page_after, ModelServerError("HTTP 503 five times"))
    env = TruncateOnModelError(DreamEnv("webshop", model, max_steps=5, split="test"))
    env.reset(seed=0)
    with pytest.raises(ModelServerError):
        env.step("search[broken]")
    assert env.failures == 0
    env.close()
