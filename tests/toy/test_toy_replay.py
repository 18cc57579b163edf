"""Replay grounding on the toy pack: toy demonstrations in toy requests, toy steps written back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.wrappers.replay_grounding import ReplayGrounding

from .pack import goal_of


@pytest.fixture
def buffer(toy_offline: Path) -> Iterator[ExperienceReplayBuffer]:
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    assert buffer.load_jsonl(toy_offline) > 0
    yield buffer
    buffer.close()


def test_requests_carry_k_toy_demonstrations_and_steps_are_written_back(toy, buffer, toy_model, toy_task):
    before = buffer.counts()
    env = ReplayGrounding(DreamEnv(toy, toy_model), buffer, k=3)
    env.reset(options={"task": toy_task})
    _, _, _, _, info = env.step("MOVE north")
    assert info["demonstrations"] == 3
    (request,) = toy_model.requests
    assert len(request.demonstrations) == 3
    expected = [h.record.action for h in buffer.search(request.state, request.action, k=3, domain="toy")]
    assert [d.action for d in request.demonstrations] == expected
    assert all(
        d.action.split()[0] in ("MOVE", "GRAB", "UNLOCK", "SAY", "CLAIM") for d in request.demonstrations
    )
    env.step("search[key]")  # invalid: not written, no request
    env.step(f"CLAIM {goal_of(toy_task).treasure}")
    after = buffer.counts()
    assert after["synthetic"] - before["synthetic"] == 2 and after["offline"] == before["offline"]
    written = buffer.search(toy_task.initial_state, "MOVE north", k=10, domain="toy", sources=["synthetic"])
    assert sorted(h.record.action for h in written) == sorted(
        ["MOVE north", f"CLAIM {goal_of(toy_task).treasure}"]
    )
    env.close()


def test_grounding_twice_grounds_once_and_closing_leaves_no_hooks(toy, buffer, toy_model, toy_task):
    dream = DreamEnv(toy, toy_model)
    inner = ReplayGrounding(dream, buffer, k=2)
    outer = ReplayGrounding(inner, buffer, k=2)
    assert len(dream.context_providers) == 1 and len(dream.step_listeners) == 1
    before = buffer.counts()["synthetic"]
    outer.reset(options={"task": toy_task})
    for action in (
        "MOVE north",
        "MOVE west",
        "MOVE west",
    ):  # the scripted states name the action: 3 new steps
        _, _, _, _, info = outer.step(action)
        assert info["demonstrations"] == 2 and len(toy_model.requests[-1].demonstrations) == 2
    assert buffer.counts()["synthetic"] - before == 3
    assert (outer.grounder.written, inner.grounder.written) == (3, 0)
    outer.close()  # closes the chain: the inner grounding too
    inner.close()  # a second close does nothing
    assert dream.context_providers == [] and dream.step_listeners == []


def test_real_toy_steps_are_written_back_as_real(toy, buffer, toy_task):
    env = ReplayGrounding(toy.make_reference_env(max_steps=toy.max_episode_steps), buffer)
    before = buffer.counts()
    observation, info = env.reset(options={"task": toy_task})
    expert = toy.expert_policy()
    done, steps = False, 0
    while not done:
        observation, _, terminated, truncated, info = env.step(expert(observation, info))
        steps, done = steps + 1, terminated or truncated
    env.close()
    after = buffer.counts()
    assert (
        info["won"] and after["real"] - before["real"] == steps and after["synthetic"] == before["synthetic"]
    )
