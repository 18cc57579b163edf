from __future__ import annotations

import numpy as np
import pytest

from dreamgym_env.envs.alfworld.expert import ALFWorldExpert
from dreamgym_env.envs.alfworld.goal import FAMILIES
from dreamgym_env.envs.alfworld.reference_env import MAX_EPISODE_STEPS, ALFWorldRefEnv
from dreamgym_env.errors import ConfigurationError


def success(env: ALFWorldRefEnv, policy, tasks) -> float:
    wins = 0
    for task in tasks:
        obs, info = env.reset(options={"task": task})
        for _ in range(MAX_EPISODE_STEPS):
            obs, reward, terminated, truncated, info = env.step(policy(obs, info))
            if terminated:
                wins += reward == 1.0
                break
    return wins / len(tasks)


@pytest.fixture(scope="module")
def env() -> ALFWorldRefEnv:
    return ALFWorldRefEnv(split="test")


@pytest.mark.parametrize("family", FAMILIES)
def test_the_expert_solves_a_fixed_task_of_each_family(env, family):
    task = next(t for t in env.tasks if t.metadata["goal"]["family"] == family)
    expert = ALFWorldExpert()
    obs, info = env.reset(options={"task": task})
    taken = []
    while len(taken) < MAX_EPISODE_STEPS:
        taken.append(expert(obs, info))
        assert taken[-1] in info["admissible_actions"]  # it never wastes a step
        obs, reward, terminated, truncated, info = env.step(taken[-1])
        if terminated:
            break
    assert info["won"] and len(taken) <= 12


def test_the_expert_plans_once_per_episode(env, monkeypatch):
    expert = ALFWorldExpert()
    calls = []
    make_plan = expert._make_plan
    monkeypatch.setattr(expert, "_make_plan", lambda: calls.append(1) or make_plan())
    assert success(env, expert, env.tasks[:20]) == 1.0
    assert len(calls) == 20


def test_expert_and_random_success_on_300_test_tasks(env):
    tasks = env.tasks[:300]
    assert success(env, ALFWorldExpert(), tasks) >= 0.95
    rng = np.random.default_rng(0)

    def random_policy(obs, info):
        actions = info["admissible_actions"]
        return actions[int(rng.integers(len(actions)))]

    assert success(env, random_policy, tasks) <= 0.05


def test_the_expert_recovers_from_actions_it_did_not_take(env):
    """Noisy expert: random admissible actions in between, which the expert never sees."""
    expert, rng = ALFWorldExpert(), np.random.default_rng(1)

    def noisy(obs, info):
        if rng.random() < 0.3:
            actions = info["admissible_actions"]
            return actions[int(rng.integers(len(actions)))]
        return expert(obs, info)

    assert success(env, noisy, env.tasks[:100]) >= 0.9


def test_the_expert_recovers_from_a_changed_room(env):
    task = next(t for t in env.tasks if t.metadata["goal"]["family"] == "pick_and_place")
    expert = ALFWorldExpert()
    obs, info = env.reset(options={"task": task})
    first = expert(obs, info)
    # someone else walks away and picks something up; the expert sees only the last result
    env.step("go to countertop 1")
    obs, *_, info = env.step(next(a for a in env.admissible_actions() if a.startswith("take ")))
    for _ in range(MAX_EPISODE_STEPS):
        obs, reward, terminated, truncated, info = env.step(expert(obs, info))
        if terminated:
            break
    assert first.startswith("go to") and info["won"]


def test_the_expert_needs_the_task():
    with pytest.raises(ConfigurationError):
        ALFWorldExpert()("You arrive at cabinet 1.", {})
