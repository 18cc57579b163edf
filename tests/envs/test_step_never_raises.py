r"""Item 3 of issue 14: any Unicode string as an action, lone surrogates included, never raises out of step.

Python strings may hold surrogates that UTF-8 cannot encode (``"search[shoes \ud800]"``); they
used to raise ``UnicodeEncodeError`` in the cache key or in the HTTP client. The env replaces them
with U+FFFD before anything sees the action; the prompt, the cache key and the transport do the
same for requests built by hand.
"""

from __future__ import annotations

from collections.abc import Iterator

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dreamgym_env  # noqa: F401  (registers the ids)
from dreamgym_env.domain import ACTION_SLOT
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.cache import CachedExperienceModel
from dreamgym_env.experience.config import RetryPolicy
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer, request_action
from dreamgym_env.types import ExperienceRequest, Task, Transition

ANY_CHARACTER = st.characters(exclude_categories=(), min_codepoint=0)  # surrogates (Cs) included
SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d\ude00", "\ude00\ud83d"])
ACTIONS = st.one_of(
    st.text(ANY_CHARACTER, max_size=40),
    st.builds(
        "search[{}{}{}]".format,
        st.text(ANY_CHARACTER, max_size=8),
        SURROGATES,
        st.text(ANY_CHARACTER, max_size=8),
    ),
    st.builds("click[{}]".format, SURROGATES),
)
BACKENDS = ["scripted", "scripted+cache", "endpoint", "endpoint+cache"]


def page(request: ExperienceRequest) -> Transition:
    """A results page naming the action (so later requests carry it in their state and history)."""
    return Transition(
        reasoning=f"after {request.action}",
        next_state=f"WebShop | results\n[Back to Search]\nyou did: {request.action}\n[Buy Now]",
    )


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="module", params=BACKENDS)
def model(request, server, tmp_path_factory) -> Iterator[ExperienceModel]:
    inner: ExperienceModel
    if request.param.startswith("endpoint"):
        retry = RetryPolicy(max_attempts=1)
        inner = OpenAIExperienceModel(base_url=server.url, model="m", api_key=None, timeout_s=5, retry=retry)
    else:
        inner = ScriptedExperienceModel(page)
    if request.param.endswith("+cache"):
        inner = CachedExperienceModel(inner, tmp_path_factory.mktemp("cache") / "transitions.sqlite")
    yield inner
    inner.close()


@pytest.fixture(scope="module")
def task() -> Task:
    return get_domain("webshop").tasks("train")[0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=st.lists(ACTIONS, min_size=1, max_size=4))
def test_any_unicode_action_never_raises(model, task, actions):
    env = DreamEnv("webshop", model, max_steps=3)
    env.reset(options={"task": task})
    for action in actions:
        observation, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(observation) and reward in (0.0, 1.0)
        if env.model_failures:  # the echo server's page is a dead end: the episode ended, nothing recorded
            assert truncated and info["error"].startswith("ModelOutputError")
            env.model_failures = 0
        else:
            step = env.steps[-1]
            step.model_dump_json().encode("utf-8")  # a replay buffer can store the step
            assert not any("\ud800" <= c <= "\udfff" for c in step.action + observation + info["reasoning"])
        if terminated or truncated:
            env.reset(options={"task": task})


def test_the_model_sees_u_fffd_for_a_lone_surrogate(server, task):
    model = OpenAIExperienceModel(base_url=server.url, model="m", api_key=None)
    try:
        env = DreamEnv("webshop", CachedExperienceModel(model, enabled=True), max_steps=3)
        env.reset(options={"task": task})
        observation, *_ = env.step("search[shoes \ud800]")
        assert request_action(server.requests[-1]) == "search[shoes \ufffd]"
        assert env.steps[-1].action == "search[shoes \ufffd]" and observation == "after search[shoes \ufffd]"
    finally:
        model.close()


@pytest.mark.parametrize("cached", [False, True], ids=["endpoint", "endpoint+cache"])
def test_a_request_built_by_hand_with_surrogates_is_sent(server, task, tmp_path, cached):
    text = "lone \udc00 and paired \ud83d\ude00"
    request = ExperienceRequest(
        prompt=get_domain("webshop").prompt,
        task=task.model_copy(update={"instruction": text}),
        state=f"{task.initial_state}\n{text}",
        action=f"search[{text}]",
    )
    model: ExperienceModel = OpenAIExperienceModel(base_url=server.url, model="m", api_key=None)
    if cached:
        model = CachedExperienceModel(model, tmp_path / "transitions.sqlite")
    try:
        transition = model.predict_one(request)
    finally:
        model.close()
    assert request_action(server.requests[-1]) == "search[lone \ufffd and paired \U0001f600]"
    assert transition.next_state == "after search[lone \ufffd and paired \U0001f600]"


class Unprintable:
    """An object whose ``repr`` and ``str`` raise."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


@pytest.mark.parametrize(
    "action",
    [10**5000, Unprintable(), b"search[shoes]", None, 1.5, ["search[shoes]"], list(range(10**5))],
    ids=["10**5000", "unprintable", "bytes", "None", "float", "list", "long-list"],
)
def test_a_value_that_is_not_a_string_is_an_invalid_action(action, task):
    """Issue 30, item 2: ``repr(10**5000)`` raises ``ValueError``, a broken ``__repr__`` anything."""
    model = ScriptedExperienceModel(page)
    env = DreamEnv("webshop", model, max_steps=3)
    env.reset(options={"task": task})
    state = env.state
    _, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated, info["action_valid"]) == (0.0, False, False, False)
    assert info["error"] == f"an action must be a string, got {type(action).__name__}"
    assert env.state == state and model.calls == 0 and len(env.steps) == 1
    assert 0 < len(env.steps[-1].action) <= 200  # the step shows the value, cut


@pytest.mark.parametrize("env_id", ["DreamGym/WebShop-v0", "DreamGym/ALFWorld-v0", "DreamGym/WebArena-v0"])
def test_a_huge_junk_action_does_not_poison_the_next_valid_step(env_id):
    """On the default model: the junk is refused and kept cut in the history, so the next request still fits."""
    pytest.importorskip("xllamacpp")
    env = gym.make(env_id)
    try:
        _, info = env.reset(seed=0)
        _, _, _, _, info = env.step("x" * 50_000 + "[" + "\u00e9\u4e2d" * 25_000 + "]")
        assert not info["action_valid"]
        assert len(env.unwrapped.steps[-1].action) <= env.unwrapped.domain.max_action_chars
        valid = ACTION_SLOT.sub("red shoes", info["admissible_actions"][0])  # search[<query>] filled
        _, _, _, truncated, info = env.step(valid)
        assert info["action_valid"] and "error" not in info and not truncated
    finally:
        env.close()
