from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import dreamgym_env  # noqa: F401  (registers the ids)
from dreamgym_env.agents.registry import make_policy
from dreamgym_env.agents.rollouts import collect, run_episode
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.errors import SpaceMismatchError
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer, ok
from dreamgym_env.types import Trajectory, Transition
from dreamgym_env.wrappers.replay_grounding import ReplayGrounding, VectorReplayGrounding

EXAMPLE = re.compile(r"## Example \d+\nState: .*?\nAction: (\".*?\")\n", re.DOTALL)


@pytest.fixture(scope="module")
def offline_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("grounding") / "webshop.jsonl"
    collect("webshop", "noisy", 60, path, seed=11, progress=False)
    return path


@pytest.fixture
def buffer(offline_file: Path) -> Iterator[ExperienceReplayBuffer]:
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    buffer.load_jsonl(offline_file)
    yield buffer
    buffer.close()


@pytest.fixture(scope="module")
def expert_trajectory() -> Trajectory:
    """A winning episode of the reference env: its pages script the experience model."""
    pack = get_domain("webshop")
    env = pack.make_reference_env(split="train", max_steps=15)
    trajectory = run_episode(env, make_policy("expert", pack, seed=0), task=pack.tasks("train")[3])
    assert trajectory.won and len(trajectory.steps) >= 3
    return trajectory


def scripted_pages(trajectory: Trajectory) -> list:
    return [
        ok({"reasoning": "as the shop would", "next_state": s.next_state, "reward": s.reward, "done": s.done})
        for s in trajectory.steps
    ]


def user_message(body: dict) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def test_grounded_run_shows_retrieved_demonstrations_at_the_server(buffer, expert_trajectory):
    """A whole episode against a scripted endpoint: each prompt carries the buffer's top-4."""
    task = expert_trajectory.task
    with ScriptedOpenAIServer(scripted_pages(expert_trajectory)) as server:
        model = OpenAIExperienceModel(base_url=server.url, model="scripted", api_key=None)
        env = ReplayGrounding(
            gym.make("DreamGym/WebShop-v0", state_mode="text", experience_model=model), buffer, k=4
        )
        env.reset(seed=0, options={"task": task})
        for step in expert_trajectory.steps:
            _, reward, terminated, _, info = env.step(step.action)
            assert info["demonstrations"] == 4 and info["action_valid"]
        assert terminated and reward == 1.0
        env.close()
        model.close()
        bodies = server.requests
    assert len(bodies) == len(expert_trajectory.steps)
    for body, step in zip(bodies, expert_trajectory.steps, strict=True):
        prompt = user_message(body)
        assert "# Real transitions of this environment" in prompt
        expected = [h.record.action for h in buffer.search(step.state, step.action, k=4, domain="webshop")]
        shown = [json.loads(action) for action in EXAMPLE.findall(prompt)]
        assert shown == expected
        assert prompt.index("# Real transitions") < prompt.index("# Current state")


def test_without_grounding_no_demonstrations_reach_the_server(expert_trajectory, buffer):
    with ScriptedOpenAIServer(scripted_pages(expert_trajectory)) as server:
        model = OpenAIExperienceModel(base_url=server.url, model="scripted", api_key=None)
        env = ReplayGrounding(
            gym.make("DreamGym/WebShop-v0", state_mode="text", experience_model=model), buffer, k=0
        )
        env.reset(options={"task": expert_trajectory.task})
        env.step(expert_trajectory.steps[0].action)
        model.close()
        assert "# Real transitions" not in user_message(server.requests[0])


def test_synthetic_steps_are_written_back_as_synthetic(buffer, scripted_model, webshop_task):
    before = buffer.counts()
    env = ReplayGrounding(DreamEnv("webshop", scripted_model), buffer, k=2)
    env.reset(options={"task": webshop_task})
    env.step("search[shirt]")
    env.step("not an action")  # invalid: failure feedback, not written
    env.step("click[Buy Now]")
    env.reset(options={"task": webshop_task})
    env.step("search[socks]")
    after = buffer.counts()
    assert after["synthetic"] == before["synthetic"] + 3
    assert after["offline"] == before["offline"] and after["real"] == before["real"]
    synthetic = buffer.search(webshop_task.initial_state, "search[shirt]", k=10, sources=["synthetic"])
    records = sorted((h.record for h in synthetic), key=lambda r: r.id)
    assert [r.action for r in records] == ["search[shirt]", "click[Buy Now]", "search[socks]"]
    assert records[0].episode_id == records[1].episode_id != records[2].episode_id
    assert [r.step_index for r in records] == [0, 2, 0]  # the invalid step kept its place
    assert records[1].done and records[1].reward == 1.0
    # synthetic transitions never ground the model unless asked for
    requests = scripted_model.requests
    assert all(d.next_state != records[0].next_state for r in requests for d in r.demonstrations)


def test_real_env_steps_are_written_back_as_real(buffer, expert_trajectory):
    pack = get_domain("webshop")
    env = ReplayGrounding(pack.make_reference_env(max_steps=15), buffer)
    before = buffer.counts()
    env.reset(options={"task": expert_trajectory.task})
    env.step("click[nothing here]")  # invalid: the page stays, not written
    for step in expert_trajectory.steps:
        env.step(step.action)
    env.close()
    after = buffer.counts()
    real = [h.record for h in buffer.search(expert_trajectory.steps[1].state, "x", k=50, sources=["real"])]
    assert after["real"] - before["real"] == len(expert_trajectory.steps) == len(real)
    assert after["synthetic"] == before["synthetic"]
    assert sorted((r.step_index, r.state, r.action, r.next_state) for r in real) == [
        (i + 1, s.state, s.action, s.next_state) for i, s in enumerate(expert_trajectory.steps)
    ]


def test_vector_env_retrieves_in_one_batch_per_step(buffer, monkeypatch):
    model = ScriptedExperienceModel(lambda r: Transition(next_state=f"{r.state}\nafter {r.action}"))
    envs = VectorReplayGrounding(DreamVectorEnv(4, "webshop", model), buffer, k=3)
    assert isinstance(envs, VectorReplayGrounding)
    batches: list[int] = []
    singles: list[str] = []
    search_many = buffer.search_many
    monkeypatch.setattr(
        buffer,
        "search_many",
        lambda pairs, *a, **kw: batches.append(len(pairs)) or search_many(pairs, *a, **kw),
    )
    monkeypatch.setattr(buffer, "search", lambda *a, **kw: singles.append("single") or [])
    envs.reset(seed=0)
    envs.step(["search[shirt]", "search[phone case]", "bad action", "search[dog food]"])
    assert batches == [3] and singles == []  # the invalid action needs no retrieval
    assert len(model.requests) == 3 and all(len(r.demonstrations) == 3 for r in model.requests)
    for request in model.requests:
        expected = [
            h.record.action for h in search_many([(request.state, request.action)], 3, domain="webshop")[0]
        ]
        assert [d.action for d in request.demonstrations] == expected
    assert buffer.counts()["synthetic"] == 3
    envs.close()
    model.close()


def test_real_vector_env_steps_are_tagged_real(buffer, expert_trajectory):
    pack = get_domain("webshop")
    real = gym.vector.SyncVectorEnv([lambda: pack.make_reference_env(max_steps=15) for _ in range(2)])
    envs = VectorReplayGrounding(real, buffer)
    before = buffer.counts()["real"]
    envs.reset(options={"task": expert_trajectory.task})
    for step in expert_trajectory.steps:
        envs.step([step.action, "click[< Prev]"])  # sub-env 1 makes invalid clicks
    envs.step(["ignored (autoreset)", "click[< Prev]"])
    assert buffer.counts()["real"] - before == len(expert_trajectory.steps)
    envs.close()


def test_sim_to_real_grounds_the_synthetic_side_and_records_the_real_one(
    buffer, scripted_model, expert_trajectory
):
    from dreamgym_env.wrappers.sim_to_real import SimToReal

    pack = get_domain("webshop")
    sim = SimToReal(DreamEnv("webshop", scripted_model), pack.make_reference_env(max_steps=15))
    env = ReplayGrounding(sim, buffer, k=2)
    before = buffer.counts()
    env.reset(options={"task": expert_trajectory.task})
    env.step(expert_trajectory.steps[0].action)
    assert len(scripted_model.requests[-1].demonstrations) == 2
    sim.switch("real")
    env.reset(options={"task": expert_trajectory.task})
    env.step(expert_trajectory.steps[0].action)
    after = buffer.counts()
    assert (after["synthetic"] - before["synthetic"], after["real"] - before["real"]) == (1, 1)


def test_non_text_env_is_refused(buffer):
    with pytest.raises(SpaceMismatchError, match=r"Box|Discrete"):
        ReplayGrounding(gym.make("CartPole-v1"), buffer)
