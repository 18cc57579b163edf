"""The generic machinery on ALFWorld where the pack has its own cases: the oracle with errors, the
curriculum's generator, the RL adapters, ``dreamgym demo`` past four steps and the rubric reward.

What every pack must do (check_env, seeds, collect, the oracle, fidelity, grounding, the demo) is
in ``tests/envs/test_packs.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from dreamgym_env.curriculum import EndpointChat, TaskGenerator
from dreamgym_env.envs.alfworld.domain import ALFWorldDomain
from dreamgym_env.envs.alfworld.state import ALFWorldState
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer, ok
from dreamgym_env.types import Task, Transition

DOMAIN = get_domain("alfworld")
HORIZON = DOMAIN.max_episode_steps
"""The oracle replays a non-restorable reference env from the task's start: whole episodes."""


@pytest.fixture(scope="module")
def oracle() -> Iterator[OracleExperienceModel]:
    model = OracleExperienceModel(DOMAIN)
    yield model
    model.close()


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


def test_a_fresh_pack_builds_the_same_rooms():
    again = [ALFWorldDomain().tasks("train")[i] for i in (0, 1000)]
    assert again == [DOMAIN.tasks("train")[i] for i in (0, 1000)]


def test_the_oracle_with_errors_keeps_episodes_going():
    model = OracleExperienceModel(DOMAIN, error_rate=0.1, seed=0)
    env = DreamEnv(DOMAIN, model, max_steps=HORIZON, history_len=HORIZON, state_mode="structured")
    expert, rng = DOMAIN.expert_policy(), np.random.default_rng(0)
    for episode in range(20):
        observation, info = env.reset(seed=episode)
        done = False
        while not done:
            admissible = info["admissible_actions"]
            explore = rng.random() < 0.3
            action = admissible[rng.integers(len(admissible))] if explore else expert(observation, info)
            observation, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
    assert model.stats["corrupted_action"] + model.stats["corrupted_task"] > 0
    model.close()


def test_the_curriculum_generator_accepts_a_feasible_task_and_rejects_an_infeasible_one():
    seed = next(t for t in DOMAIN.tasks("test") if t.id == "alfworld-test-00002")  # a kitchen
    base = {"parent_id": seed.id, "receptacle_type": None, "lamp_type": None}
    feasible = {
        **base,
        "family": "pick_two_obj_and_place",
        "object_type": "Winebottle",
        "receptacle_type": "cabinet",
    }
    infeasible = {**base, "family": "pick_and_place", "object_type": "book", "receptacle_type": "fridge"}
    with ScriptedOpenAIServer() as server:
        chat = EndpointChat(base_url=server.url, model="writer", api_key=None, retry=1)
        generator = TaskGenerator(chat, DOMAIN, concurrency=1, max_calls=1)
        server.enqueue(ok({"tasks": [feasible, infeasible]}))
        report = generator.generate_sync([seed], 2)
        chat.close()
    assert report.counts() == {"accepted": 1, "malformed": 0, "duplicate": 0, "infeasible": 1}
    assert "no book" in str(report.rejected[0])
    (task,) = report.accepted
    assert task.instruction == "put two winebottle in cabinet." and task.parent_id == seed.id
    _, info = play(DOMAIN.make_reference_env(tasks=[task], max_steps=HORIZON), task, DOMAIN.expert_policy())
    assert info["won"]  # accepted means winnable in the seed's room


@pytest.mark.filterwarnings("ignore:Your observation:UserWarning")
def test_choice_actions_embed_observation_and_sb3_check_env(oracle):
    pytest.importorskip("stable_baselines3", reason="needs the extra that ships stable_baselines3")
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from dreamgym_env.rl.sb3 import wrap_for_sb3

    embedder = HashedEmbedder(32)
    synthetic = DreamEnv(DOMAIN, oracle, max_steps=HORIZON, history_len=HORIZON, state_mode="structured")
    for env in (synthetic, DOMAIN.make_reference_env(split="test", max_steps=HORIZON)):
        wrapped = wrap_for_sb3(env, embedder, max_actions=48)
        sb3_check_env(wrapped)
        observation, info = wrapped.reset(seed=0)
        candidates = info["action_candidates"]
        assert 10 < len(candidates) <= 48 and all(DOMAIN.parse_action(a).verb for a in candidates)
        assert wrapped.get_wrapper_attr("action_masks")().sum() == len(candidates)
        assert observation["actions"].shape == (48, 32)
        go = next(i for i, a in enumerate(candidates) if a.startswith("go to "))
        _, _, _, _, info = wrapped.step(go)
        assert info["action_valid"] and info["action_text"] == candidates[go]


def run_demo_cli(monkeypatch: pytest.MonkeyPatch, max_steps: int) -> Any:
    from typer.testing import CliRunner

    from dreamgym_env.cli import app
    from dreamgym_env.experience import selection

    monkeypatch.setenv("DREAMGYM_EMBEDDER", "hashed")
    monkeypatch.setattr(selection, "default_experience_model", lambda **_: OracleExperienceModel(DOMAIN))
    args = ["demo", "--domain", "alfworld", "--episodes", "1", "--max-steps", str(max_steps)]
    return CliRunner().invoke(app, args)


def test_dreamgym_demo_domain_alfworld_past_four_steps(monkeypatch: pytest.MonkeyPatch):
    result = run_demo_cli(monkeypatch, 12)
    assert result.exit_code == 0, result.output


def test_in_rubric_mode_a_win_on_the_predicted_state_ends_the_episode_not_the_models_done():
    task = next(t for t in DOMAIN.tasks("test") if t.metadata["goal"]["family"] == "pick_and_place")
    goal = task.metadata["goal"]
    start = DOMAIN.initial_abstract_state(task)
    assert isinstance(start, ALFWorldState)
    target = next(r for r in start.receptacles if r.startswith(goal["receptacle_type"] + " "))
    obj = f"{goal['object_type']} 1"
    arrived = start.model_copy(update={"location": target, "seen": {target: []}, "event": "arrive"})
    placed = arrived.model_copy(
        update={
            "seen": {target: [obj]},
            "event": "message",
            "feedback": f"You put the {obj} in/on the {target}.",
        }
    )
    # the model's judgement is wrong both times: "done, reward 1" on arriving, "not done" on the win
    answers = iter(
        [
            Transition(next_state=arrived.model_dump_json(), reward=1.0, terminated=True),
            Transition(next_state=placed.model_dump_json(), reward=0.0, terminated=False),
        ]
    )
    model = ScriptedExperienceModel(lambda request: next(answers))
    env = DreamEnv(DOMAIN, model, state_mode="structured", reward_mode="rubric")
    env.reset(options={"task": task})
    _, reward, terminated, _, info = env.step(f"go to {target}")
    assert (reward, terminated, info["reward_source"]) == (0.0, False, "rubric")
    _, reward, terminated, _, info = env.step(f"put {obj} in/on {target}")
    assert (reward, terminated, info["won"]) == (1.0, True, True)
    env.close()
