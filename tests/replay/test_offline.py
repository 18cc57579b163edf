from __future__ import annotations

import itertools
import json

import gymnasium as gym
import pytest

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect, collect_trajectories, run_episode
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.replay.jsonl import iter_trajectories, read_trajectories, write_trajectories
from dreamgym_env.types import Trajectory


def test_run_episode_records_every_step():
    env = WebShopRefEnv(split="test", max_steps=15)
    policy = make_policy("noisy", "webshop", seed=3, epsilon=0.5)
    trajectory = run_episode(env, policy, task=env.tasks[0], seed=7, policy_name="noisy")
    assert trajectory.task == env.tasks[0] and trajectory.source == "real" and trajectory.policy == "noisy"
    steps = trajectory.steps
    assert steps[0].state == env.tasks[0].initial_state
    for before, after in itertools.pairwise(steps):  # each step starts where the page was
        expected = before.next_state if before.action_valid else before.state
        assert after.state == expected
    assert trajectory.metadata["steps"] == len(steps) and trajectory.metadata["seed"] == 7
    assert trajectory.won == trajectory.metadata["won"]
    assert steps[-1].done or trajectory.metadata["truncated"]


def test_collect_visits_tasks_in_a_seeded_order_and_is_reproducible():
    env = WebShopRefEnv(split="test", max_steps=15)
    tasks = env.tasks[:4]
    a = collect_trajectories(env, make_policy("expert", "webshop"), 6, tasks=tasks, seed=1, progress=False)
    b = collect_trajectories(env, make_policy("expert", "webshop"), 6, tasks=tasks, seed=1, progress=False)
    assert a == b
    assert {t.task.id for t in a[:4]} == {t.id for t in tasks}  # each task once before repeats
    assert all(t.won for t in a)


def test_collect_through_gym_make_wrappers():
    gym.register("Test/WebShopRefOffline-v0", entry_point=WebShopRefEnv, max_episode_steps=15)
    try:
        env = gym.make("Test/WebShopRefOffline-v0", split="test")
        trajectories = collect_trajectories(env, make_policy("random", "webshop", seed=0), 3, progress=False)
    finally:
        del gym.registry["Test/WebShopRefOffline-v0"]
    assert all(len(t.steps) <= 15 for t in trajectories)
    assert all(t.task.id.startswith("webshop-test-") for t in trajectories)


def test_jsonl_round_trip(tmp_path):
    env = WebShopRefEnv(split="test", max_steps=15)
    trajectories = collect_trajectories(env, make_policy("noisy", "webshop", seed=0), 4, progress=False)
    path = tmp_path / "sub" / "data.jsonl"
    assert write_trajectories(path, trajectories) == 4
    assert read_trajectories(path) == trajectories
    write_trajectories(path, trajectories[:1], append=True)
    assert len(list(iter_trajectories(path))) == 5
    line = json.loads(path.read_text().splitlines()[0])
    assert set(line) >= {"task", "steps", "source", "policy", "metadata"}
    assert set(line["steps"][0]) >= {"state", "action", "next_state", "reward", "done", "action_valid"}


def test_bad_files_raise_data_errors(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"task": 1}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl:1"):
        read_trajectories(path)
    with pytest.raises(DataError, match="cannot read"):
        read_trajectories(tmp_path / "missing.jsonl")


def test_collect_writes_a_file_and_summarises(tmp_path, capsys):
    out = tmp_path / "expert.jsonl"
    summary = collect("webshop", "expert", 5, out, seed=0, split="test")
    assert summary.episodes == 5 and summary.success_rate == 1.0 and summary.out == str(out)
    trajectories = read_trajectories(out)
    assert len(trajectories) == 5 and summary.transitions == sum(len(t.steps) for t in trajectories)
    assert all(isinstance(t, Trajectory) and t.policy == "expert" for t in trajectories)
    assert "collect expert" in capsys.readouterr().err  # the progress bar
    assert json.loads(str(summary))["policy"] == "expert"


def test_collect_refuses_bad_arguments(tmp_path):
    with pytest.raises(KeyError):
        collect("webshop", "genius", 1, tmp_path / "x.jsonl")
    with pytest.raises(ConfigurationError):
        collect_trajectories(WebShopRefEnv(), make_policy("random", "webshop"), -1)
