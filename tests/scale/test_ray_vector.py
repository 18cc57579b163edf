"""RayVectorEnv on a local Ray instance (2 CPUs) against the in-process vector env, with the oracle."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="needs the extra `ray`: pip install 'dreamgym-env[ray]'")

from dreamgym_env.agents import make_policy
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.errors import ConfigurationError, ModelTimeoutError, WorkerLostError
from dreamgym_env.scale.infos import unbatch_infos
from dreamgym_env.scale.ray_vector import RayVectorEnv
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.testing.doubles import echo_transition
from dreamgym_env.types import ExperienceRequest, Transition

SYNTHETIC, REFERENCE = "DreamGym/WebShop-v0", "DreamGym/WebShop-Ref-v0"
oracle = functools.partial(OracleExperienceModel, "webshop")


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # The actors build this module's FailOnce model: send its code along (it is not importable there).
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    ray.shutdown()


def policy(seed: int):
    """The expert, with one action in four a fixed invalid one (the invalid-action path too)."""
    expert, rng = make_policy("expert", "webshop"), np.random.default_rng(seed)

    def act(observations: tuple[str, ...], infos: dict[str, Any]) -> list[str]:
        split = unbatch_infos(infos, len(observations))
        return [
            "not an action" if rng.random() < 0.25 else expert(obs, info)
            for obs, info in zip(observations, split, strict=True)
        ]

    return act


def without_latency(value: Any) -> Any:
    """``value`` less the measured latencies (the only field that differs between two runs)."""
    if isinstance(value, dict):
        return {k: without_latency(v) for k, v in value.items() if k not in ("latency_s", "_latency_s")}
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [without_latency(v) for v in value]
    return value


def assert_same_infos(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        if isinstance(value, dict):
            assert_same_infos(got[key], value)
        elif key != "latency_s":
            assert got[key].dtype == value.dtype, key
            assert list(without_latency(got[key])) == list(without_latency(value)), key


def assert_same_step(got: tuple[Any, ...], want: tuple[Any, ...]) -> None:
    assert got[0] == want[0]
    for j in (1, 2, 3):
        np.testing.assert_array_equal(got[j], want[j])
        assert got[j].dtype == want[j].dtype
    assert_same_infos(got[4], want[4])


@pytest.mark.parametrize(("env_id", "num_envs", "steps"), [(SYNTHETIC, 6, 30), (REFERENCE, 4, 20)])
def test_steps_equal_the_in_process_vector_env(env_id, num_envs, steps):
    kwargs = {"experience_model": oracle} if env_id == SYNTHETIC else {}
    remote = RayVectorEnv(env_id, num_envs, num_actors=2, **kwargs)
    local_kwargs = {"experience_model": oracle()} if env_id == SYNTHETIC else {}
    local = gym.make_vec(env_id, num_envs=num_envs, **local_kwargs)
    act = policy(0)
    try:
        assert remote.single_observation_space == local.single_observation_space
        assert remote.metadata["autoreset_mode"] == local.metadata["autoreset_mode"]
        got, want = remote.reset(seed=11), local.reset(seed=11)
        assert got[0] == want[0]
        assert_same_infos(got[1], want[1])
        observations, infos, ends = want[0], want[1], 0
        for _ in range(steps):
            actions = act(observations, infos)
            got, want = remote.step(actions), local.step(actions)
            assert_same_step(got, want)
            observations, infos, ends = want[0], want[4], ends + int(np.sum(want[2] | want[3]))
        assert ends >= 2  # autoresets happened on both sides
        tasks = [t.id for t in local.unwrapped.envs[0].tasks[:num_envs]] if env_id == SYNTHETIC else None
        if tasks:  # one task per sub-env, split over the actors
            got = remote.reset(seed=[5] * num_envs, options={"tasks": tasks})
            want = local.reset(seed=[5] * num_envs, options={"tasks": tasks})
            assert list(got[1]["task_id"]) == tasks == list(want[1]["task_id"])
            assert_same_infos(got[1], want[1])
    finally:
        remote.close()
        local.close()


def test_grpo_groups_stay_on_one_actor():
    envs = RayVectorEnv(SYNTHETIC, 8, num_actors=2, group_size=4, experience_model=oracle)
    try:
        assert envs.slices == [slice(0, 4), slice(4, 8)]
        _, infos = envs.reset(seed=3, options={"group_size": 4})
        ids = list(infos["task_id"])
        assert len(set(ids[:4])) == 1 and len(set(ids[4:])) == 1
        with pytest.raises(ConfigurationError, match="group_size=8"):
            envs.reset(options={"group_size": 8})  # a group of 8 would span both actors
    finally:
        envs.close()


def test_bad_shapes_are_refused_before_any_actor_starts():
    with pytest.raises(ConfigurationError, match="must divide"):
        RayVectorEnv(REFERENCE, 6, group_size=4)
    with pytest.raises(ConfigurationError, match="whole group"):
        RayVectorEnv(REFERENCE, 4, num_actors=3, group_size=2)
    with pytest.raises(ConfigurationError, match="zero-argument callable"):
        RayVectorEnv(SYNTHETIC, 4, experience_model=oracle())  # type: ignore[arg-type]


def test_an_actor_that_cannot_build_its_env_raises_the_error_itself():
    with pytest.raises(ConfigurationError, match="state_mode must be"):  # raised in the actor, typed here
        RayVectorEnv(SYNTHETIC, 2, num_actors=1, experience_model=oracle, state_mode="pages")


def test_a_killed_actor_raises_worker_lost_and_keeps_the_other_results():
    remote = RayVectorEnv(SYNTHETIC, 4, num_actors=2, experience_model=oracle)
    local = gym.make_vec(SYNTHETIC, num_envs=4, experience_model=oracle())
    act = policy(1)
    try:
        observations, infos = local.reset(seed=2)
        remote.reset(seed=2)
        for _ in range(3):
            actions = act(observations, infos)
            remote.step(actions)
            observations, _, _, _, infos = local.step(actions)
        ray.kill(remote.actors[1], no_restart=True)
        actions = act(observations, infos)
        with pytest.raises(WorkerLostError, match=r"sub-envs \[2, 3\]") as lost:
            remote.step(actions)
        want = local.step(actions)
        assert lost.value.sub_envs == [2, 3]
        assert sorted(lost.value.completed) == [0, 1]  # what the living actor recorded comes back
        split = unbatch_infos(want[4], 4)
        for i, (obs, reward, terminated, truncated, info) in lost.value.completed.items():
            assert (obs, reward, terminated, truncated) == (want[0][i], want[1][i], want[2][i], want[3][i])
            assert info["task_id"] == split[i]["task_id"] and info["action_valid"] == split[i]["action_valid"]
        with pytest.raises(WorkerLostError, match="reset"):
            remote.step(actions)
        got, want = remote.reset(seed=9), local.reset(seed=9)  # a new actor for sub-envs 2 and 3
        assert got[0] == want[0]
        actions = act(want[0], want[1])
        assert_same_step(remote.step(actions), local.step(actions))
    finally:
        remote.close()
        local.close()


class FailOnce:
    """Echo transitions; the first request for ``action`` raises ``error`` (in each process that holds one)."""

    def __init__(self, action: str, error: type[Exception] = ModelTimeoutError) -> None:
        self.action, self.error, self.failed = action, error, False

    def __call__(self, request: ExperienceRequest) -> Transition:
        if request.action == self.action and not self.failed:
            self.failed = True
            raise self.error(f"task {request.task.id!r}, action {request.action!r}: failed")
        return echo_transition(request)


@pytest.mark.parametrize(
    ("error", "named"),
    [(ModelTimeoutError, [3]), (RuntimeError, [2, 3])],  # untyped: not named by request, the actor's all
    ids=["typed", "untyped"],
)
def test_a_failed_model_call_is_retried_on_its_actor_only(error, named):
    flaky = functools.partial(ScriptedExperienceModel, FailOnce("search[flaky]", error))
    strict = {"state_mode": "text", "on_model_error": "raise"}
    remote = RayVectorEnv(SYNTHETIC, 4, num_actors=2, experience_model=flaky, **strict)
    local = gym.make_vec(SYNTHETIC, num_envs=4, experience_model=ScriptedExperienceModel(), **strict)
    try:
        remote.reset(seed=4)
        local.reset(seed=4)
        actions = ["search[red shoes]", "search[blue hat]", "search[green bag]", "search[flaky]"]
        with pytest.raises(error, match=re.escape(f"in the Ray actor of sub-envs {named}")) as failed:
            remote.step(actions)
        assert type(failed.value) is error  # the actor's own exception, not Ray's RayTaskError
        assert failed.value.sub_envs == named
        with pytest.raises(ConfigurationError, match="same actions"):
            remote.step(["search[other]", *actions[1:]])  # sub-envs 0 and 1 have stepped already
        assert_same_step(remote.step(actions), local.step(actions))  # each sub-env stepped once
        actions = ["search[again]"] * 4
        assert_same_step(remote.step(actions), local.step(actions))
    finally:
        remote.close()
        local.close()


def grounded_envs(num_envs: int, path: str) -> gym.vector.VectorEnv:
    """An actor's batch built by a factory: the oracle vector env grounded in a shared buffer."""
    from dreamgym_env.replay.buffer import ExperienceReplayBuffer
    from dreamgym_env.replay.embedders import HashedEmbedder
    from dreamgym_env.wrappers import VectorReplayGrounding

    envs = gym.make_vec(SYNTHETIC, num_envs=num_envs, experience_model=oracle())
    return VectorReplayGrounding(
        envs, ExperienceReplayBuffer(path, embedder=HashedEmbedder(), commit_every=1)
    )


def test_a_factory_builds_each_actors_batch_wrappers_included(tmp_path):
    from dreamgym_env.replay.buffer import ExperienceReplayBuffer
    from dreamgym_env.replay.embedders import HashedEmbedder

    recorded = []
    for name in ("ray.db", "local.db"):
        path = str(tmp_path / name)
        # Made once, before two writers open it.
        ExperienceReplayBuffer(path, embedder=HashedEmbedder()).close()
        make = functools.partial(grounded_envs, path=path)
        envs = RayVectorEnv(make, 4, num_actors=2) if name == "ray.db" else make(4)
        try:
            observations, infos = envs.reset(seed=0)
            expert = make_policy("expert", "webshop")
            for _ in range(4):
                actions = [expert(o, i) for o, i in zip(observations, unbatch_infos(infos, 4), strict=True)]
                observations, _, _, _, infos = envs.step(actions)
        finally:
            envs.close()
        with ExperienceReplayBuffer(path, read_only=True) as buffer:
            recorded.append(buffer.counts())
    assert recorded[0] == recorded[1] and sum(recorded[0].values()) >= 8  # both actors wrote their steps
