"""What every domain pack must do, checked on each registered pack and on the toy pack of the tests.

Both ids pass Gymnasium's ``check_env``; seeds reproduce reference episodes; the expert collects
winning trajectories; the synthetic env on the oracle plays each expert episode as the reference
env does, in text and structured mode; the oracle's fidelity is 1 on every abstract-state field
(and below 1 with errors); replay grounding puts k demonstrations in each request; ``dreamgym demo``
runs. What only one pack does is tested in that pack's own folder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from toy.pack import ToyDomain

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect, collect_trajectories
from dreamgym_env.bench.fidelity import measure_fidelity, reference_transitions
from dreamgym_env.domain import Domain
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import (
    get_domain,
    reference_id,
    register_domain,
    registered_domains,
    synthetic_id,
    unregister_domain,
)
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import Task, Trajectory
from dreamgym_env.wrappers.replay_grounding import ReplayGrounding

PACKS = [*registered_domains(), "toy"]
"""The built-in packs (registered on import) and the toy pack (registered by the fixture)."""
EXPERT_EPISODES = 12
"""Expert episodes collected per pack; every pack's expert wins all but at most one of them."""


@pytest.fixture(scope="module", params=PACKS)
def domain(request: pytest.FixtureRequest) -> Iterator[Domain]:
    """A registered pack; the toy pack is registered for its tests and unregistered after them."""
    if request.param != "toy":
        yield get_domain(request.param)
        return
    toy = register_domain(ToyDomain())
    yield toy
    unregister_domain("toy")


@pytest.fixture(scope="module")
def horizon(domain: Domain) -> int:
    """The registered horizon; the oracle replays a non-restorable reference env from the task's start."""
    return domain.max_episode_steps


@pytest.fixture(scope="module")
def oracle(domain: Domain) -> Iterator[OracleExperienceModel]:
    model = OracleExperienceModel(domain)
    yield model
    model.close()


@pytest.fixture(scope="module")
def test_tasks(domain: Domain) -> list[Task]:
    """Six held-out tasks, of different templates where the pack has them."""
    tasks: dict[str, Task] = {}
    for task in domain.tasks("test"):
        tasks.setdefault(str(task.metadata.get("template", task.id)), task)
        if len(tasks) == 6:
            break
    return list(tasks.values())


@pytest.fixture(scope="module")
def structured_trajectories(domain: Domain, horizon: int, test_tasks: list[Task]) -> list[Trajectory]:
    env = domain.make_reference_env(split="test", max_steps=horizon)
    noisy = make_policy("noisy", domain, seed=1, epsilon=0.3)
    return collect_trajectories(env, noisy, 12, tasks=test_tasks, progress=False, state_mode="structured")


Played = list[tuple[str, str, float, bool, bool]]


def play(env: gym.Env, task: Task, policy: Any) -> tuple[Played, dict[str, Any]]:
    """One episode of ``policy`` on ``task``: what each step gave, and the last info."""
    observation, info = env.reset(options={"task": task})
    steps: Played = []
    done = False
    while not done:
        action = policy(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        steps.append((action, observation, float(reward), terminated, truncated))
        done = terminated or truncated
    return steps, info


def test_check_env_passes_on_both_ids(domain, oracle):
    check_env(gym.make(synthetic_id(domain), experience_model=oracle).unwrapped, skip_render_check=True)
    check_env(gym.make(reference_id(domain)).unwrapped, skip_render_check=True)


def test_seeds_reproduce_reference_episodes(domain):
    def episode(seed: int) -> list[Any]:
        env = gym.make(reference_id(domain))
        observation, info = env.reset(seed=seed)
        policy = make_policy("noisy", domain, seed=seed, epsilon=0.5)
        out: list[Any] = [info["task_id"], observation]
        for _ in range(8):
            observation, reward, terminated, truncated, info = env.step(policy(observation, info))
            out.append((observation, reward, info["admissible_actions"]))
            if terminated or truncated:
                break
        return out

    assert episode(5) == episode(5)
    assert episode(5)[:2] != episode(6)[:2]


def test_collect_with_the_expert(domain, tmp_path: Path):
    out = tmp_path / f"{domain.name}.jsonl"
    summary = collect(domain.name, "expert", EXPERT_EPISODES, out, split="test", progress=False)
    assert summary.domain == domain.name and summary.episodes == EXPERT_EPISODES
    trajectories = [Trajectory.model_validate_json(line) for line in out.read_text().splitlines()]
    assert len(trajectories) == EXPERT_EPISODES
    assert sum(t.won for t in trajectories) >= EXPERT_EPISODES - 1
    assert summary.success_rate == sum(t.won for t in trajectories) / EXPERT_EPISODES


@pytest.mark.parametrize("state_mode", ["text", "structured"])
def test_the_expert_plays_through_the_oracle_as_in_the_reference_env(
    domain, horizon, oracle, test_tasks, state_mode
):
    synthetic = DreamEnv(domain, oracle, max_steps=horizon, history_len=horizon, state_mode=state_mode)
    reference = domain.make_reference_env(split="test", max_steps=horizon)
    wins = 0
    for task in test_tasks:
        dreamed, info = play(synthetic, task, domain.expert_policy())
        real, real_info = play(reference, task, domain.expert_policy())
        assert dreamed == real and info["won"] == real_info["won"]
        if "admissible_actions" in info:  # text mode lists them only where the domain reads them off the text
            assert info["admissible_actions"] == real_info["admissible_actions"]
        wins += info["won"]
    assert wins >= len(test_tasks) - 1


def test_fidelity_of_the_oracle_per_field_on_structured_transitions(domain, horizon, structured_trajectories):
    assert domain.state_schema is not None
    transitions = reference_transitions(structured_trajectories, domain, history_len=horizon)
    assert len(transitions) > 30
    perfect = measure_fidelity(OracleExperienceModel(domain), transitions, domain=domain)
    assert set(perfect.fields) == set(domain.state_schema.model_fields)
    assert min(perfect.fields.values()) == 1.0 and perfect.exact_match == perfect.valid == 1.0
    assert perfect.kind_agreement == (1.0 if domain.state_kind_field else None)
    noisy = measure_fidelity(
        OracleExperienceModel(domain, error_rate=0.3, seed=1), transitions, domain=domain
    )
    assert min(noisy.fields.values()) < 1.0 and noisy.exact_match < 1.0


def test_replay_grounding_adds_k_demonstrations(domain, horizon, oracle, test_tasks, structured_trajectories):
    recorder = ScriptedExperienceModel(oracle.answer)
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    for trajectory in structured_trajectories:
        buffer.add_trajectory(trajectory, source="offline")
    env = ReplayGrounding(
        DreamEnv(domain, recorder, history_len=horizon, state_mode="structured"), buffer, k=3
    )
    observation, info = env.reset(options={"task": test_tasks[0]})
    expert = domain.expert_policy()
    for _ in range(2):
        observation, _, _, _, info = env.step(expert(observation, info))
        assert info["demonstrations"] == 3
    assert len(recorder.requests) == 2
    assert all(len(r.demonstrations) == 3 and r.state_schema is not None for r in recorder.requests)
    assert all(domain.parse_action(d.action).verb for r in recorder.requests for d in r.demonstrations)
    env.close()
    buffer.close()
    recorder.close()


def test_dreamgym_demo_on_the_pack(domain, monkeypatch: pytest.MonkeyPatch):
    from typer.testing import CliRunner

    from dreamgym_env.cli import app
    from dreamgym_env.experience import selection

    monkeypatch.setenv("DREAMGYM_EMBEDDER", "hashed")
    monkeypatch.setattr(selection, "default_experience_model", lambda **_: OracleExperienceModel(domain))
    args = ["demo", "--domain", domain.name, "--episodes", "2", "--max-steps", "4"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    text = result.output
    assert f"{domain.name}: structured states" in text and f"{domain.name}-test-" in text
    assert "episode 2 of 2" in text and "reward agreement" in text and "100%" in text
