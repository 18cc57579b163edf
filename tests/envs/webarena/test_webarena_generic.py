"""The generic machinery on WebArena where the pack has its own cases: cached site data, the
curriculum's generator and the RL adapters.

What every pack must do (check_env, seeds, collect, the oracle, fidelity, grounding, the demo) is
in ``tests/envs/test_packs.py``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

from dreamgym_env.curriculum import EndpointChat, TaskGenerator
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webarena.domain import WebArenaDomain
from dreamgym_env.envs.webarena.world import load_data
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.testing import ScriptedOpenAIServer, ok
from dreamgym_env.types import Task

DOMAIN = get_domain("webarena")
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


def test_site_data_is_cached_and_a_fresh_pack_has_the_same_tasks():
    assert load_data.__wrapped__(0) == load_data(0)  # type: ignore[attr-defined]
    fresh = WebArenaDomain().tasks("test")
    assert [t.model_dump() for t in fresh[:20]] == [t.model_dump() for t in DOMAIN.tasks("test")[:20]]


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
        assert (
            f"stop [{instruction}]" not in candidates
        )  # slots take phrases and page values, not the instruction
        assert any(a.startswith("type [") for a in candidates)
        assert wrapped.get_wrapper_attr("action_masks")().sum() == len(candidates)
        assert observation["actions"].shape == (32, 32)
        click = next(i for i, a in enumerate(candidates) if a.startswith("click ["))
        _, _, _, _, info = wrapped.step(click)
        assert info["action_valid"] and info["action_text"] == candidates[click]
