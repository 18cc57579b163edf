"""Everything generic on the WebArena pack: check_env, seeds, collect, the oracle, fidelity,
grounding, the curriculum's generator, the RL adapters and ``dreamgym demo``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect, collect_trajectories
from dreamgym_env.bench.fidelity import measure_fidelity, reference_transitions
from dreamgym_env.curriculum import EndpointChat, TaskGenerator
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webarena.domain import WebArenaDomain
from dreamgym_env.envs.webarena.state import WebArenaState
from dreamgym_env.envs.webarena.world import load_data
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer, ok
from dreamgym_env.types import Task, Trajectory
from dreamgym_env.wrappers.replay_grounding import ReplayGrounding

DOMAIN = get_domain("webarena")
HORIZON = DOMAIN.max_episode_steps
"""The oracle replays a non-restorable reference env from the task's start: whole episodes."""


@pytest.fixture(scope="module")
def oracle() -> Iterator[OracleExperienceModel]:
    model = OracleExperienceModel(DOMAIN)
    yield model
    model.close()


@pytest.fixture(scope="module")
def test_tasks() -> list[Task]:
    """Six held-out tasks of different sites and kinds."""
    tasks, sites = [], set()
    for task in DOMAIN.tasks("test"):
        if task.metadata["template"] not in sites:
            sites.add(task.metadata["template"])
            tasks.append(task)
        if len(tasks) == 6:
            break
    return tasks


def play(env: gym.Env, task: Task, policy: Any) -> tuple[list[tuple[str, str, float]], dict[str, Any]]:
    """One episode of ``policy`` on ``task``: (action, observation, reward) per step and the last info."""
    observation, info = env.reset(options={"task": task})
    steps, done = [], False
    while not done:
        action = policy(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        steps.append((action, observation, float(reward)))
        done = terminated or truncated
    return steps, info


def test_check_env_passes_on_both_ids(oracle):
    assert isinstance(DOMAIN, WebArenaDomain) and DOMAIN.state_schema is WebArenaState
    check_env(gym.make("DreamGym/WebArena-v0", experience_model=oracle).unwrapped, skip_render_check=True)
    check_env(gym.make("DreamGym/WebArena-Ref-v0").unwrapped, skip_render_check=True)


def test_seeds_reproduce_site_data_tasks_and_episodes():
    def episode(seed: int) -> list[Any]:
        env = gym.make("DreamGym/WebArena-Ref-v0")
        observation, info = env.reset(seed=seed)
        policy = make_policy("noisy", DOMAIN, seed=seed, epsilon=0.5)
        out: list[Any] = [info["task_id"], observation]
        for _ in range(8):
            observation, reward, terminated, truncated, info = env.step(policy(observation, info))
            out.append((observation, reward, info["admissible_actions"]))
            if terminated or truncated:
                break
        return out

    assert episode(5) == episode(5)
    assert episode(5)[:2] != episode(6)[:2]
    assert load_data.__wrapped__(0) == load_data(0)  # type: ignore[attr-defined]
    fresh = WebArenaDomain().tasks("test")
    assert [t.model_dump() for t in fresh[:20]] == [t.model_dump() for t in DOMAIN.tasks("test")[:20]]


def test_collect_with_the_expert(tmp_path: Path):
    summary = collect("webarena", "expert", 12, tmp_path / "webarena.jsonl", split="test", progress=False)
    assert summary.domain == "webarena" and summary.episodes == 12 and summary.success_rate >= 0.9
    lines = (tmp_path / "webarena.jsonl").read_text().splitlines()
    assert len(lines) == 12 and sum(Trajectory.model_validate_json(line).won for line in lines) >= 11


@pytest.mark.parametrize("state_mode", ["text", "structured"])
def test_the_expert_wins_through_the_oracle(oracle, test_tasks, state_mode):
    synthetic = DreamEnv(DOMAIN, oracle, max_steps=HORIZON, history_len=HORIZON, state_mode=state_mode)
    reference = DOMAIN.make_reference_env(split="test", max_steps=HORIZON)
    for task in test_tasks:
        dreamed, info = play(synthetic, task, DOMAIN.expert_policy())
        real, real_info = play(reference, task, DOMAIN.expert_policy())
        assert dreamed == real and info["won"] == real_info["won"]
        assert info["admissible_actions"] == real_info["admissible_actions"]
    assert sum(play(synthetic, t, DOMAIN.expert_policy())[1]["won"] for t in test_tasks) >= 5


@pytest.fixture(scope="module")
def structured_trajectories(test_tasks) -> list[Trajectory]:
    env = DOMAIN.make_reference_env(split="test", max_steps=HORIZON)
    noisy = make_policy("noisy", DOMAIN, seed=1, epsilon=0.3)
    return collect_trajectories(env, noisy, 12, tasks=test_tasks, progress=False, state_mode="structured")


def test_fidelity_per_field_on_structured_transitions(structured_trajectories):
    transitions = reference_transitions(structured_trajectories, DOMAIN, history_len=HORIZON)
    assert len(transitions) > 30
    perfect = measure_fidelity(OracleExperienceModel(DOMAIN), transitions, domain=DOMAIN)
    assert set(perfect.fields) == set(WebArenaState.model_fields)
    assert min(perfect.fields.values()) == 1.0 and perfect.exact_match == 1.0
    noisy = measure_fidelity(
        OracleExperienceModel(DOMAIN, error_rate=0.3, seed=1), transitions, domain=DOMAIN
    )
    assert min(noisy.fields.values()) < 1.0 and noisy.exact_match < 1.0


def test_replay_grounding_adds_k_demonstrations(oracle, test_tasks, structured_trajectories):
    recorder = ScriptedExperienceModel(oracle.answer)
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    for trajectory in structured_trajectories:
        buffer.add_trajectory(trajectory, source="offline")
    env = ReplayGrounding(
        DreamEnv(DOMAIN, recorder, history_len=HORIZON, state_mode="structured"), buffer, k=3
    )
    observation, info = env.reset(options={"task": test_tasks[0]})
    expert = DOMAIN.expert_policy()
    for _ in range(2):
        observation, _, _, _, info = env.step(expert(observation, info))
        assert info["demonstrations"] == 3
    assert len(recorder.requests) == 2
    assert all(len(r.demonstrations) == 3 and r.state_schema is not None for r in recorder.requests)
    assert all(DOMAIN.parse_action(d.action).verb for r in recorder.requests for d in r.demonstrations)
    env.close()
    buffer.close()
    recorder.close()


def test_the_curriculum_generator_accepts_a_feasible_task_and_rejects_an_infeasible_one():
    seed = DOMAIN.tasks("test")[0]
    post = next(t for t in DOMAIN.tasks() if t.metadata["template"] == "reddit.author").metadata["slots"]
    feasible = {
        "parent_id": seed.id,
        "template": "reddit.comment",
        "slots": {"comment": "Nice one", "post": post["post"], "forum": post["forum"]},
    }
    infeasible = {"parent_id": seed.id, "template": "shopping.price", "slots": {"product": "iPhone 15"}}
    with ScriptedOpenAIServer() as server:
        chat = EndpointChat(base_url=server.url, model="writer", api_key=None, retry=1)
        generator = TaskGenerator(chat, DOMAIN, concurrency=1, max_calls=1)
        server.enqueue(ok({"tasks": [feasible, infeasible]}))
        report = generator.generate_sync([seed], 2)
        chat.close()
    assert report.counts() == {"accepted": 1, "malformed": 0, "duplicate": 0, "infeasible": 1}
    (task,) = report.accepted
    assert task.metadata["template"] == "reddit.comment" and task.parent_id == seed.id
    _, info = play(DOMAIN.make_reference_env(tasks=[task], max_steps=HORIZON), task, DOMAIN.expert_policy())
    assert info["won"]  # accepted means winnable on the sites' data


@pytest.mark.filterwarnings("ignore:Your observation:UserWarning")
def test_choice_actions_embed_observation_and_sb3_check_env(oracle):
    pytest.importorskip("stable_baselines3", reason="needs the extra that ships stable_baselines3")
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from dreamgym_env.rl.sb3 import wrap_for_sb3

    embedder = HashedEmbedder(32)
    synthetic = DreamEnv(DOMAIN, oracle, max_steps=HORIZON, history_len=HORIZON)
    for env in (synthetic, DOMAIN.make_reference_env(split="test", max_steps=HORIZON)):
        wrapped = wrap_for_sb3(env, embedder, max_actions=32)
        sb3_check_env(wrapped)
        observation, info = wrapped.reset(seed=0)
        candidates = info["action_candidates"]
        instruction = info["task"].instruction
        assert 2 < len(candidates) <= 32 and all(DOMAIN.parse_action(a).verb for a in candidates)
        assert f"stop [{instruction}]" not in candidates  # slots take phrases and page values, not the instruction
        assert any(a.startswith("type [") for a in candidates)
        assert wrapped.get_wrapper_attr("action_masks")().sum() == len(candidates)
        assert observation["actions"].shape == (32, 32)
        click = next(i for i, a in enumerate(candidates) if a.startswith("click ["))
        _, _, _, _, info = wrapped.step(click)
        assert info["action_valid"] and info["action_text"] == candidates[click]


def run_demo_cli(monkeypatch: pytest.MonkeyPatch, max_steps: int) -> Any:
    from typer.testing import CliRunner

    from dreamgym_env.cli import app
    from dreamgym_env.experience import selection

    monkeypatch.setenv("DREAMGYM_EMBEDDER", "hashed")
    monkeypatch.setattr(selection, "default_experience_model", lambda **_: OracleExperienceModel(DOMAIN))
    args = ["demo", "--domain", "webarena", "--episodes", "2", "--max-steps", str(max_steps)]
    return CliRunner().invoke(app, args)


def test_dreamgym_demo_domain_webarena(monkeypatch: pytest.MonkeyPatch):
    result = run_demo_cli(monkeypatch, 4)
    assert result.exit_code == 0, result.output
    text = result.output
    assert "webarena: structured states" in text and "webarena-test-" in text
    assert "episode 2 of 2" in text and "reward agreement" in text and "100%" in text
