"""The experience-model backends on the toy pack: its prompt reaches the model, whatever the backend."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from dreamgym_env.agents.rollouts import run_episode
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import UnknownNameError
from dreamgym_env.experience.local import LocalExperienceModel, LocalSettings
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.experience.prompt import messages
from dreamgym_env.testing import ScriptedOpenAIServer, ok, request_action
from dreamgym_env.types import ExperienceRequest, Trajectory

from .pack import PROMPT, RULES, ToyDomain


def endpoint(server: ScriptedOpenAIServer) -> OpenAIExperienceModel:
    return OpenAIExperienceModel(base_url=server.url, model="scripted", api_key=None, timeout_s=5.0)


def as_replies(trajectory: Trajectory) -> list[Any]:
    return [
        ok({"reasoning": "as the house does", "next_state": s.next_state, "reward": s.reward, "done": s.done})
        for s in trajectory.steps
    ]


def expert_episode(domain: ToyDomain, index: int = 4) -> Trajectory:
    env = domain.make_reference_env(max_steps=domain.max_episode_steps)
    trajectory = run_episode(env, domain.expert_policy(), task=domain.tasks("train")[index])
    assert trajectory.won and len(trajectory.steps) >= 5
    return trajectory


def test_the_endpoint_request_carries_the_toy_rules(toy, server):
    trajectory = expert_episode(toy)
    server.enqueue(*as_replies(trajectory))
    model = endpoint(server)
    env = gym.make("DreamGym/Toy-v0", state_mode="text", experience_model=model)
    env.reset(options={"task": trajectory.task})
    for step in trajectory.steps:
        observation, reward, terminated, _, info = env.step(step.action)
        assert observation == step.next_state and info["action_valid"]
    assert terminated and reward == 1.0 and info["won"]
    env.close()
    model.close()
    bodies = server.requests
    assert len(bodies) == len(trajectory.steps)
    system = bodies[0]["messages"][0]
    assert system["role"] == "system" and RULES.strip() in system["content"]
    assert "WebShop" not in system["content"] and "Toy | <room>" in system["content"]
    assert [request_action(body) for body in bodies] == [s.action for s in trajectory.steps]
    first = ExperienceRequest(
        prompt=PROMPT,
        task=trajectory.task,
        state=trajectory.task.initial_state,
        action=trajectory.steps[0].action,
    )
    assert bodies[0]["messages"] == messages(toy.prompt, first)


def test_an_unregistered_domain_steps_through_the_endpoint(toy, server):
    class Annex(ToyDomain):
        """The toy house under another name, never registered."""

        name = "annex"
        display_name = "Annex"

    annex = Annex()
    trajectory = expert_episode(annex, index=7)
    assert trajectory.task.domain == "annex"
    server.enqueue(*as_replies(trajectory))
    model = endpoint(server)
    env = DreamEnv(annex, model, max_steps=annex.max_episode_steps)
    env.reset(options={"task": trajectory.task})
    for step in trajectory.steps:
        _, reward, terminated, _, info = env.step(step.action)
    assert terminated and reward == 1.0 and info["won"] and server.requests_total == len(trajectory.steps)
    assert all(RULES.strip() in body["messages"][0]["content"] for body in server.requests)
    model.close()
    with pytest.raises(UnknownNameError):
        get_domain("annex")  # it was never registered
    assert "DreamGym/Annex-v0" not in gym.registry


class FakeRuntime:
    """The local backend's runtime double: answers one completion, records each body."""

    def __init__(self, content: str) -> None:
        self.content, self.closed = content, False
        self.bodies: list[dict[str, Any]] = []

    def chat(self, body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        self.bodies.append(body)
        return {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 90, "completion_tokens": 30},
        }

    def close(self) -> None:
        self.closed = True


def test_the_local_backend_sends_the_toy_prompt(toy, toy_task, tmp_path: Path):
    gguf = tmp_path / "tiny-toy.gguf"
    gguf.write_bytes(b"GGUF" + bytes(64))
    answer = {
        "reasoning": "the library",
        "next_state": "Toy | library\nExits: south (hall)",
        "reward": 0,
        "done": False,
    }
    runtime = FakeRuntime(json.dumps(answer))

    def factory(path: Path, settings: LocalSettings) -> FakeRuntime:
        return runtime

    model = LocalExperienceModel(gguf, runtime_factory=factory)
    env = DreamEnv(toy, model)
    env.reset(options={"task": toy_task})
    observation, _, _, _, info = env.step("move north")
    model.close()
    assert (
        observation == answer["next_state"] and info["usage"]["model"] == "tiny-toy.gguf" and runtime.closed
    )
    (body,) = runtime.bodies
    request = ExperienceRequest(
        prompt=PROMPT, task=toy_task, state=toy_task.initial_state, action="MOVE north"
    )
    assert body["messages"] == messages(toy.prompt, request)
    assert RULES.strip() in body["messages"][0]["content"]
