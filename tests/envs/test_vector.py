from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest

import dreamgym_env  # noqa: F401
from dreamgym_env import ConfigurationError
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer, delay, echo_responder


def test_make_vec_uses_vector_entry_point(scripted_model):
    envs = gym.make_vec("DreamGym/WebShop-v0", num_envs=3, experience_model=scripted_model)
    assert isinstance(envs.unwrapped, DreamVectorEnv)
    assert all(env.max_steps == 15 for env in envs.unwrapped.envs)
    obs, infos = envs.reset(seed=0)
    assert len(obs) == 3 and infos["task_id"].shape == (3,)
    envs.close()


def test_one_step_is_one_batch(scripted_model):
    envs = DreamVectorEnv(4, "webshop", scripted_model)
    envs.reset(seed=0)
    obs, rewards, terminated, truncated, infos = envs.step(["search[a]", "search[b]", "nope", "search[c]"])
    assert scripted_model.batches == 1 and scripted_model.calls == 3
    assert list(infos["action_valid"]) == [True, True, False, True]
    assert rewards.dtype == np.float64 and not terminated.any() and not truncated.any()


def test_next_step_autoreset(scripted_model):
    envs = DreamVectorEnv(2, "webshop", scripted_model)
    envs.reset(seed=0)
    envs.step(["search[a]", "search[b]"])
    _, rewards, terminated, _, _ = envs.step(["click[Buy Now]", "click[< Prev]"])
    assert list(terminated) == [True, False] and rewards[0] == 1.0
    calls = scripted_model.calls
    obs, rewards, terminated, _, infos = envs.step(["ignored", "click[< Prev]"])
    assert obs[0].startswith("WebShop | search") and rewards[0] == 0.0 and not terminated[0]
    assert scripted_model.calls == calls + 1  # the resetting sub-env made no call


def test_group_reset_shares_tasks(scripted_model):
    envs = DreamVectorEnv(8, "webshop", scripted_model)
    _, infos = envs.reset(seed=3, options={"group_size": 4})
    ids = list(infos["task_id"])
    assert len(set(ids[:4])) == 1 and len(set(ids[4:])) == 1
    with pytest.raises(ConfigurationError, match="divide"):
        envs.reset(options={"group_size": 3})
    task = envs.envs[0].tasks[1]
    _, infos = envs.reset(options={"tasks": [task] * 8})
    assert set(infos["task_id"]) == {task.id}


def test_vector_requests_reach_server_concurrently():
    """32 sub-envs against a server holding each request 200 ms: all 32 are in flight at once.

    A barrier makes the check independent of the machine's speed: each request is held until
    all 32 have arrived, which only happens if the vector env sends them concurrently.
    """
    gate = threading.Barrier(32, timeout=20)

    def hold_until_all_arrive(body):
        gate.wait()
        return delay(0.2, then=echo_responder(body))

    with ScriptedOpenAIServer(responder=hold_until_all_arrive) as server:
        model = OpenAIExperienceModel(base_url=server.url, model="test", max_concurrency=64)
        envs = gym.make_vec("DreamGym/WebShop-v0", num_envs=32, experience_model=model)
        envs.reset(seed=0)
        _, _, _, _, infos = envs.step(["search[shirt]"] * 32)
        assert server.requests_total == 32
        assert server.peak_in_flight == 32
        assert all(infos["action_valid"])
        envs.close()
        model.close()


def test_vector_latency_overlaps():
    model = ScriptedExperienceModel(latency_s=0.05)
    envs = DreamVectorEnv(16, "webshop", model)
    envs.reset(seed=0)
    envs.step(["search[x]"] * 16)
    assert model.peak_in_flight == 16


def test_batch_infos_matches_gymnasium_layout(scripted_model):
    from dreamgym_env.envs.vector import batch_infos

    infos = [
        {"won": True, "score": 0.5, "steps": 3, "task_id": "a", "usage": {"tokens": 4}},
        {"won": False, "task_id": "b"},
        {"score": 1.0, "usage": {"tokens": 7}, "error": "bad"},
    ]
    envs = DreamVectorEnv(3, "webshop", scripted_model)
    expected: dict = {}
    for i, info in enumerate(infos):
        expected = envs._add_info(expected, info, i)
    got = batch_infos(infos)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, dict):
            for inner, array in value.items():
                assert list(got[key][inner]) == list(array) and got[key][inner].dtype == array.dtype
        else:
            assert list(got[key]) == list(value) and got[key].dtype == value.dtype, key
