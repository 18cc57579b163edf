from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest

import dreamgym_env  # noqa: F401
from dreamgym_env import ConfigurationError
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.errors import ModelOutputError, ModelServerError, ModelTimeoutError
from dreamgym_env.experience.config import RetryPolicy
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer, delay, echo_responder
from dreamgym_env.testing.replies import http_error, request_action
from dreamgym_env.types import ExperienceRequest, Transition


def test_make_vec_uses_vector_entry_point(scripted_model):
    envs = gym.make_vec("DreamGym/WebShop-v0", state_mode="text", num_envs=3, experience_model=scripted_model)
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
    assert obs[0].startswith("WebShop [SEP] Instruction:") and rewards[0] == 0.0 and not terminated[0]
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


def test_group_reset_draws_the_same_tasks_for_the_same_seed(scripted_model):
    drawn = []
    for _ in range(2):
        envs = DreamVectorEnv(8, "webshop", scripted_model)
        _, infos = envs.reset(seed=5, options={"group_size": 2})
        drawn.append(list(infos["task_id"]))
    assert drawn[0] == drawn[1] and len(set(drawn[0])) > 1
    _, infos = envs.reset(seed=6, options={"group_size": 2})
    assert list(infos["task_id"]) != drawn[0]


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
        envs = gym.make_vec("DreamGym/WebShop-v0", state_mode="text", num_envs=32, experience_model=model)
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


# -- all-or-nothing steps --------------------------------------------------------------------


class FailFor:
    """A scripted responder that fails for good on actions containing ``marker`` while ``failing``."""

    def __init__(self, marker: str, then) -> None:
        self.marker, self.then, self.failing = marker, then, True

    def __call__(self, request: ExperienceRequest) -> Transition:
        if self.failing and self.marker in request.action:
            raise ModelServerError(
                f"task {request.task.id!r}, action {request.action!r}: server error (HTTP 500)", attempts=4
            )
        return self.then(request)


def _snapshot(envs: DreamVectorEnv) -> list[tuple]:
    return [
        (env.task.id if env.task else None, len(env.steps), env.state, env._done, bool(envs._autoreset[i]))
        for i, env in enumerate(envs.envs)
    ]


def test_a_sub_env_the_model_fails_ends_truncated_and_the_others_keep_their_steps(page_after):
    envs = DreamVectorEnv(4, "webshop", ScriptedExperienceModel(FailFor("broken", page_after)))
    envs.reset(seed=0)
    observations, rewards, terminations, truncations, infos = envs.step(
        ["search[a]", "search[broken]", "nope", "search[d]"]
    )
    assert list(truncations) == [False, True, False, False] and not terminations.any()
    assert list(infos["_error"]) == [False, True, True, False]  # sub-env 2: its invalid action's error
    assert infos["error"][1].startswith("ModelServerError: ")
    assert [len(env.steps) for env in envs.envs] == [1, 0, 1, 1]
    assert envs.model_failures == 1
    _, _, _, truncations, infos = envs.step(["search[a]"] * 4)  # sub-env 1 is reset (next-step autoreset)
    assert not truncations[1] and [len(env.steps) for env in envs.envs] == [2, 0, 2, 2]
    with pytest.raises(ConfigurationError, match=r"unknown reset option\(s\) \['tsk'\]"):
        envs.reset(options={"tsk": 1})
    envs.close()


def test_failed_step_records_nothing_and_retry_records_once(page_after):
    responder = FailFor("< Prev", page_after)
    model = ScriptedExperienceModel(responder)
    envs = DreamVectorEnv(4, "webshop", model, on_model_error="raise")
    envs.reset(seed=0)
    heard: list[tuple[int, str]] = []
    for i, env in enumerate(envs.envs):
        env.add_step_listener(lambda task, step, index, i=i: heard.append((i, step.action)))
    envs.step(["search[a]", "search[b]", "search[c]", "search[d]"])
    before, heard_before = _snapshot(envs), list(heard)
    actions = ["click[Back to Search]", "click[< Prev]", "not an action", "click[Back to Search]"]

    with pytest.raises(
        ModelServerError, match=r"^vector step failed in sub-env 1, nothing recorded: "
    ) as caught:
        envs.step(actions)
    assert caught.value.sub_envs == [1] and caught.value.attempts == 4
    assert _snapshot(envs) == before and heard == heard_before  # no step, listener, state or done moved

    responder.failing = False
    _, _, _, _, infos = envs.step(actions)
    assert list(infos["action_valid"]) == [True, True, False, True]
    assert [len(env.steps) for env in envs.envs] == [2, 2, 2, 2]  # the retry recorded each step once
    assert sorted(heard[len(heard_before) :]) == sorted(enumerate(actions))


def test_failed_step_at_the_truncation_limit_does_not_break_later_steps(page_after):
    responder = FailFor("< Prev", page_after)
    envs = DreamVectorEnv(2, "webshop", ScriptedExperienceModel(responder), max_steps=2, on_model_error="raise")
    envs.reset(seed=0)
    envs.step(["search[a]", "search[b]"])
    # Sub-env 0's invalid action would reach the limit: the failure of sub-env 1 must not record it.
    for _ in range(3):
        with pytest.raises(ModelServerError, match="sub-env 1"):
            envs.step(["nope", "click[< Prev]"])
    assert [len(env.steps) for env in envs.envs] == [1, 1]
    responder.failing = False
    _, _, _, truncated, _ = envs.step(["nope", "click[< Prev]"])
    assert list(truncated) == [True, True] and [len(env.steps) for env in envs.envs] == [2, 2]
    obs, _, _, truncated, infos = envs.step(["ignored", "ignored"])  # autoreset, no ConfigurationError
    assert not truncated.any() and all(o.startswith("WebShop [SEP] Instruction:") for o in obs)
    envs.step(["search[c]", "search[d]"])
    assert [len(env.steps) for env in envs.envs] == [1, 1]


def test_failed_step_leaves_pending_autoresets_to_the_retry(page_after):
    responder = FailFor("< Prev", page_after)
    envs = DreamVectorEnv(2, "webshop", ScriptedExperienceModel(responder), on_model_error="raise")
    envs.reset(seed=0)
    envs.step(["search[a]", "search[b]"])
    envs.step(["click[Buy Now]", "search[c]"])  # sub-env 0 ends: autoreset due at the next step
    resets: list[int] = []
    envs.autoreset_options = lambda i: resets.append(i) or None
    task_before, steps_before = envs.envs[0].task, list(envs.envs[0].steps)
    with pytest.raises(ModelServerError):
        envs.step(["ignored", "click[< Prev]"])
    assert resets == [] and envs._autoreset[0]
    assert envs.envs[0].task is task_before and envs.envs[0].steps == steps_before
    responder.failing = False
    obs, rewards, terminated, _, _ = envs.step(["ignored", "click[< Prev]"])
    assert resets == [0] and obs[0].startswith("WebShop [SEP] Instruction:") and envs.envs[0].steps == []


def test_unnamed_failure_names_the_whole_batch():
    def fail(request: ExperienceRequest) -> Transition:
        raise ModelTimeoutError("the endpoint did not answer in time")

    envs = DreamVectorEnv(3, "webshop", ScriptedExperienceModel(fail), on_model_error="raise")
    envs.reset(seed=0)
    with pytest.raises(
        ModelTimeoutError, match="in the model batch of sub-envs 0, 2, nothing recorded"
    ) as caught:
        envs.step(["search[a]", "nope", "search[b]"])
    assert caught.value.sub_envs == [0, 2]
    assert all(env.steps == [] for env in envs.envs)


def test_failed_step_against_the_server_names_the_sub_env_and_records_nothing():
    """One sub-env's request keeps getting HTTP 500: typed error after its attempts, nothing recorded."""

    def fail_bad(body):
        return http_error(500) if "bad" in (request_action(body) or "") else echo_responder(body)

    retry = RetryPolicy(max_attempts=3, backoff_base_s=0.001, backoff_max_s=0.01, jitter=0.5)
    with ScriptedOpenAIServer(responder=fail_bad) as server:
        model = OpenAIExperienceModel(base_url=server.url, model="test", api_key=None, retry=retry)
        envs = DreamVectorEnv(3, "webshop", model, on_model_error="raise")
        envs.reset(seed=0)
        with pytest.raises(ModelServerError, match=r"sub-env 1, nothing recorded: .*HTTP 500") as caught:
            envs.step(["search[a]", "search[bad]", "nope"])
        assert caught.value.sub_envs == [1] and caught.value.attempts == 3
        assert all(env.steps == [] for env in envs.envs)
        _, _, _, _, infos = envs.step(["search[a]", "search[fine]", "nope"])
        assert list(infos["action_valid"]) == [True, True, False]
        assert [len(env.steps) for env in envs.envs] == [1, 1, 1]
        envs.close()
        model.close()


def test_a_transition_refused_after_the_batch_records_nothing_either(page_after):
    """A sub-env refusing its transition (a state over max_text_length) fails the step as a whole."""

    def oversized_for_b(request: ExperienceRequest) -> Transition:
        if "b" in request.action:
            return Transition(reasoning="long", next_state="x" * 20_000)
        return page_after(request)

    envs = DreamVectorEnv(3, "webshop", ScriptedExperienceModel(oversized_for_b), on_model_error="raise")
    envs.reset(seed=0)
    with pytest.raises(
        ModelOutputError, match=r"^vector step failed in sub-env 1, nothing recorded: "
    ) as caught:
        envs.step(["search[a]", "search[b]", "nope"])
    assert caught.value.sub_envs == [1]
    assert all(env.steps == [] for env in envs.envs)
