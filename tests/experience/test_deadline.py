"""Item 8 of issue 14: a hung server cannot block a step for minutes.

``timeout_s`` bounds one attempt, ``deadline_s`` a whole request (attempts, backoff, re-asks);
both come from arguments, ``default_experience_model(...)`` or ``DREAMGYM_TIMEOUT`` /
``DREAMGYM_DEADLINE``. Each test here takes well under 5 s.
"""

from __future__ import annotations

import time

import gymnasium as gym
import pytest

import dreamgym_env  # noqa: F401
from dreamgym_env.errors import ModelTimeoutError
from dreamgym_env.experience.config import RetryPolicy
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.experience.selection import default_experience_model
from dreamgym_env.testing import delay, drop, http_error, ok

MANY = RetryPolicy(max_attempts=50, backoff_base_s=0.05, backoff_max_s=0.05, jitter=0)
"""Retries that would last seconds: only the deadline stops them."""


@pytest.mark.parametrize(
    ("reply", "settings"),
    [(delay(30.0), {"timeout_s": 0.2}), (drop(), {})],
    ids=["hung", "dropping"],
)
def test_deadline_stops_retries_that_remain(server, endpoint_model, recording_env, reply, settings):
    server.enqueue(*[reply] * MANY.max_attempts)
    recording = recording_env(endpoint_model(retry=MANY, deadline_s=0.6, **settings))
    started = time.perf_counter()
    with pytest.raises(ModelTimeoutError, match=r"no answer within deadline_s=0\.6") as caught:
        recording.env.step("search[navy shirt]")
    elapsed = time.perf_counter() - started
    assert 0.5 < elapsed < 10  # a loaded machine is slow; the attempt count shows the deadline stopped it
    assert 1 <= caught.value.attempts < MANY.max_attempts
    # the last attempt may be cut by the deadline before the server has read it
    assert caught.value.attempts - 1 <= server.requests_total <= caught.value.attempts
    recording.assert_nothing_recorded()


def test_the_last_attempt_is_cut_at_the_deadline(server, endpoint_model, webshop_request):
    server.enqueue(delay(30.0))  # the attempt's own timeout (5 s) is longer than the deadline
    started = time.perf_counter()
    with pytest.raises(ModelTimeoutError) as caught:
        endpoint_model(deadline_s=0.4).predict_one(webshop_request)
    assert time.perf_counter() - started < 10 and caught.value.attempts == 1 == server.requests_total


def test_retry_after_beyond_the_deadline_raises_at_once(server, endpoint_model, webshop_request):
    server.enqueue(http_error(503, headers={"Retry-After": "30"}))
    retry = RetryPolicy(max_attempts=4, backoff_max_s=60)
    started = time.perf_counter()
    with pytest.raises(ModelTimeoutError, match="last attempt failed with ModelServerError") as caught:
        endpoint_model(retry=retry, deadline_s=2.0).predict_one(webshop_request)
    assert time.perf_counter() - started < 10 and caught.value.attempts == 1 == server.requests_total


def test_the_deadline_covers_reasks(server, endpoint_model, webshop_request):
    server.enqueue(*[delay(0.25, ok("not a transition"))] * 20)
    started = time.perf_counter()
    with pytest.raises(ModelTimeoutError):
        endpoint_model(deadline_s=0.6, max_output_reasks=20).predict_one(webshop_request)
    assert time.perf_counter() - started < 10 and server.requests_total <= 3


def test_a_slow_answer_within_the_deadline_is_kept(server, endpoint_model, webshop_request):
    server.enqueue(http_error(500), delay(0.2))
    transition = endpoint_model(deadline_s=2.0).predict_one(webshop_request)
    assert transition.next_state == "after search[navy shirt]" and transition.usage.attempts == 2


def test_variables_reach_a_model_that_gym_make_chooses(server, monkeypatch, webshop_task):
    """The documented path without code: DREAMGYM_BASE_URL, DREAMGYM_TIMEOUT, DREAMGYM_DEADLINE."""
    monkeypatch.setenv("DREAMGYM_BASE_URL", server.url)
    monkeypatch.setenv("DREAMGYM_TIMEOUT", "0.2")
    monkeypatch.setenv("DREAMGYM_DEADLINE", "0.5")
    server.enqueue(*[delay(30.0)] * 10)
    env = gym.make("DreamGym/WebShop-v0", on_model_error="raise")
    try:
        config = env.unwrapped.experience_model.config
        assert (config.timeout_s, config.deadline_s) == (0.2, 0.5)
        env.reset(options={"task": webshop_task})
        started = time.perf_counter()
        with pytest.raises(ModelTimeoutError):
            env.step("search[navy shirt]")
        assert time.perf_counter() - started < 10 and env.unwrapped.steps == []
    finally:
        env.close()


def test_default_experience_model_takes_the_settings(server, monkeypatch):
    monkeypatch.setenv("DREAMGYM_BASE_URL", server.url)
    monkeypatch.setenv("DREAMGYM_TIMEOUT", "9")
    model = default_experience_model(timeout_s=5, deadline_s=30)
    try:
        assert isinstance(model, OpenAIExperienceModel)
        assert (model.config.timeout_s, model.config.deadline_s) == (5, 30)  # arguments win
    finally:
        model.close()
    model = default_experience_model(deadline_s=None)  # deadline_s chooses the endpoint backend
    try:
        assert (model.config.timeout_s, model.config.deadline_s) == (9, None)
    finally:
        model.close()
