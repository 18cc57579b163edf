"""Fixtures of the endpoint reliability tests: a model at the scripted server, and an env on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.domain import PROMPT
from dreamgym_env.experience.config import RetryPolicy
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedOpenAIServer
from dreamgym_env.types import ExperienceRequest, Step, Task

QUICK_RETRY = RetryPolicy(max_attempts=3, backoff_base_s=0.001, backoff_max_s=0.01, jitter=0.5)
"""Three attempts, milliseconds apart: fault tests stay well under a second."""


@pytest.fixture
def endpoint_model(server: ScriptedOpenAIServer) -> Iterator[Callable[..., OpenAIExperienceModel]]:
    """Builds models at ``server`` (3 quick attempts, 2 re-asks, 5 s timeout); closes them after."""
    made: list[OpenAIExperienceModel] = []

    def build(**settings: Any) -> OpenAIExperienceModel:
        defaults = {"base_url": server.url, "model": "test-model", "api_key": None, "retry": QUICK_RETRY}
        model = OpenAIExperienceModel(**{**defaults, "timeout_s": 5.0, **settings})
        made.append(model)
        return model

    yield build
    for model in made:
        model.close()


class RecordingEnv:
    """A strict WebShop DreamEnv on ``model`` (a model failure raises), reset to a task, with a listener that keeps every step."""

    def __init__(self, model: OpenAIExperienceModel, task: Task, **env_settings: Any) -> None:
        self.env = DreamEnv("webshop", model, on_model_error="raise", **env_settings)
        self.heard: list[Step] = []
        self.env.add_step_listener(lambda task, step, index: self.heard.append(step))
        self.observation, _ = self.env.reset(options={"task": task})

    def assert_nothing_recorded(self) -> None:
        """No step in the history or at the listener, and the state is the task's first page."""
        assert self.env.steps == [] and self.heard == []
        assert self.env.observation == self.observation


@pytest.fixture
def recording_env(webshop_task: Task) -> Callable[..., RecordingEnv]:
    return lambda model, **settings: RecordingEnv(model, webshop_task, **settings)


@pytest.fixture
def webshop_request(webshop_task: Task) -> ExperienceRequest:
    return ExperienceRequest(
        prompt=PROMPT, task=webshop_task, state=webshop_task.initial_state, action="search[navy shirt]"
    )
