r"""Fuzzed actions (issue 30): no value makes ``step`` raise, and no step is lost.

Any value goes in: Unicode with lone surrogates and control characters, a 1 MB string, the
admissible actions' own templates, and values that are no string at all (``10**5000``, whose
``repr`` raises; an object whose ``repr`` and ``str`` raise; bytes; None). Through the
in-process env (synthetic and reference ids of every pack), the vector env and an OpenEnv
server stepped by OpenEnv's own client, each step is answered (an invalid action: reward 0,
``action_valid`` False, ``info["error"]`` saying why), what comes back encodes as UTF-8, and
every step is counted: in the env's history, in each sub-env, in the server's ``step_count``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import dreamgym_env  # noqa: F401  (registers the ids)
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import reference_id, synthetic_id
from dreamgym_env.envs.vector import DreamVectorEnv


class Unprintable:
    """An object whose ``repr`` and ``str`` raise."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # how hypothesis reports a failing example
        printer.text("Unprintable()")


ANY_CHARACTER = st.characters(exclude_categories=(), min_codepoint=0)  # surrogates (Cs) included
CONTROLS = st.characters(min_codepoint=0, max_codepoint=0x1F) | st.sampled_from("\x7f\x85\u2028\u2029\ufeff")
SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\ude00\ud83d"])
ODD_TEXT = st.lists(st.one_of(ANY_CHARACTER, CONTROLS, SURROGATES), max_size=12).map("".join)
WRAPPED = st.builds(  # text inside each pack's verbs, so that the grammar gets past the verb
    "{}{}{}".format,
    st.sampled_from(["search[", "click[", "go to ", "take ", "click [", "type [1] [", "stop ["]),
    ODD_TEXT,
    st.sampled_from(["]", "", " 1", "] [1]"]),
)
JSON_ODDITIES = st.sampled_from([None, True, 0, -1, 1.5, 10**4000, [], ["search[shoes]"], {"action": "x"}])
JSON_ACTIONS = st.one_of(ODD_TEXT, WRAPPED, JSON_ODDITIES)
"""Actions that travel as JSON (OpenEnv's client sends JSON)."""
ONE_MB = "search[" + "x" * 1_000_000 + "]"
NOT_JSON = [10**5000, Unprintable(), b"search[shoes]", b"\xff\xfe", float("nan"), object(), ("a", "b")]
ACTIONS = st.one_of(JSON_ACTIONS, st.sampled_from([ONE_MB, "\ud800" * 20_000, *NOT_JSON]))
ECHOED = ["search[shoes \ud800]", "type [1] [\udc00 \x1b[31m]", "go to \ud800", "click[\ud800]"]
"""Valid-looking actions with lone surrogates: the envs echo their arguments into pages and errors."""
ALWAYS = [*ECHOED, ONE_MB, 10**5000, Unprintable(), b"search[shoes]", None]
"""Tried in every run, besides what hypothesis draws."""
PACKS = ["webshop", "alfworld", "webarena"]
EXAMPLES = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def encodable(value: Any) -> bool:
    """Whether ``value`` (an observation, an info) encodes as UTF-8 JSON, as a server must send it."""
    try:
        json.dumps(value, default=str, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        return False
    return True


def check_answer(result: tuple[Any, ...], action: Any) -> None:
    """One step's answer: Gymnasium's tuple, UTF-8 text, and a non-string action is invalid."""
    observation, reward, terminated, truncated, info = result
    assert isinstance(observation, str) and encodable(observation)
    assert 0.0 <= float(reward) <= 1.0 and isinstance(terminated, bool) and isinstance(truncated, bool)
    assert encodable({k: v for k, v in info.items() if k != "task"})
    if not isinstance(action, str):
        assert info["action_valid"] is False and "must be a string" in info["error"] and reward == 0
    if info["action_valid"] is False:
        assert isinstance(info["error"], str) and info["error"] and not terminated


@pytest.fixture(scope="module", params=PACKS)
def oracle(request) -> Iterator[OracleExperienceModel]:
    model = OracleExperienceModel(request.param)
    yield model
    model.close()


@pytest.fixture(scope="module")
def synthetic(oracle) -> Iterator[gym.Env]:
    env = gym.make(synthetic_id(oracle.domain), experience_model=oracle)
    yield env
    env.close()


@pytest.fixture(scope="module")
def reference(oracle) -> Iterator[gym.Env]:
    env = gym.make(reference_id(oracle.domain))
    yield env
    env.close()


@EXAMPLES
@given(actions=st.lists(ACTIONS, min_size=1, max_size=5), seed=st.integers(0, 50))
@example(actions=ALWAYS, seed=0)
def test_the_synthetic_env_answers_every_action_and_records_it(synthetic, actions, seed):
    env = synthetic.unwrapped
    synthetic.reset(seed=seed)
    for action in actions:
        before, recorded = env.state, len(env.steps)
        result = synthetic.step(action)
        check_answer(result, action)
        info = result[4]
        assert len(env.steps) == recorded + 1  # no step lost
        assert isinstance(info["usage"], dict)
        if not info["action_valid"]:
            assert env.state == before and env.steps[-1].action_valid is False
        assert encodable(env.steps[-1].model_dump(mode="json"))  # a replay buffer can store it
        if result[2] or result[3]:
            synthetic.reset(seed=seed)


@EXAMPLES
@given(actions=st.lists(ACTIONS, min_size=1, max_size=5), seed=st.integers(0, 50))
@example(actions=ALWAYS, seed=0)
def test_the_reference_env_answers_every_action(reference, actions, seed):
    reference.reset(seed=seed)
    for action in actions:
        result = reference.step(action)
        check_answer(result, action)
        if result[2] or result[3]:
            reference.reset(seed=seed)


@EXAMPLES
@given(actions=st.lists(ACTIONS, min_size=3, max_size=3), steps=st.integers(1, 3))
@example(actions=[ECHOED[0], 10**5000, Unprintable()], steps=2)
@example(actions=[ECHOED[1], ONE_MB, ECHOED[2]], steps=2)
def test_the_vector_env_answers_every_batch_and_steps_each_sub_env_once(oracle, actions, steps):
    envs = gym.make_vec(synthetic_id(oracle.domain), num_envs=3, experience_model=oracle)
    try:
        vector = envs.unwrapped
        assert isinstance(vector, DreamVectorEnv)
        envs.reset(seed=0)
        ended = np.zeros(3, dtype=bool)  # next-step autoreset: an ended sub-env resets at this step
        for _ in range(steps):
            recorded = [len(env.steps) for env in vector.envs]
            observations, rewards, terminations, truncations, _ = envs.step(list(actions))
            for i, env in enumerate(vector.envs):
                assert len(env.steps) == (0 if ended[i] else recorded[i] + 1)  # each stepped once
                if not ended[i]:
                    answer = (observations[i], rewards[i], bool(terminations[i]), bool(truncations[i]))
                    check_answer((*answer, vector.sub_env_infos[i]), actions[i])
            ended = terminations | truncations
    finally:
        envs.close()


@pytest.fixture(scope="module")
def servers(openenv_server, oracle) -> dict[str, str]:
    """An OpenEnv server of the pack's reference id and one of its synthetic id (over the oracle)."""
    return {
        "reference": openenv_server(reference_id(oracle.domain), max_sessions=2),
        "synthetic": openenv_server(synthetic_id(oracle.domain), experience_model=oracle, max_sessions=2),
    }


@pytest.mark.parametrize("kind", ["reference", "synthetic"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=st.lists(st.one_of(JSON_ACTIONS, st.just(ONE_MB)), min_size=1, max_size=5))
@example(actions=[*ECHOED, ONE_MB, 10**4000, None, ["search[shoes]"]])
def test_the_openenv_server_answers_every_action_and_counts_every_step(servers, kind, actions):
    from openenv import GenericEnvClient

    with GenericEnvClient(base_url=servers[kind]).sync() as client:
        client.reset(seed=1)
        seen = 0
        for action in actions:
            result = client.step({"action": action})  # answered: a server error would raise here
            seen += 1
            observation = result.observation
            assert isinstance(observation["text"], str) and encodable(observation)
            assert client.state()["step_count"] == seen  # the server applied what the client saw
            if not isinstance(action, str):
                assert observation["info"]["action_valid"] is False and result.reward == 0.0
            if result.done:
                client.reset(seed=1)
                seen = 0
