from __future__ import annotations

import asyncio

import pytest

from dreamgym_env.envs.webshop.domain import PROMPT as WEBSHOP_PROMPT
from dreamgym_env.errors import ModelTimeoutError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.testing import ScriptedExperienceModel, echo_transition
from dreamgym_env.types import ExperienceRequest, Task, Transition


def make_requests(task: Task, n: int) -> list[ExperienceRequest]:
    return [
        ExperienceRequest(prompt=WEBSHOP_PROMPT, task=task, state=task.initial_state, action=f"search[{i}]")
        for i in range(n)
    ]


def test_answers_from_the_callable_in_order_and_counts(webshop_task):
    model = ScriptedExperienceModel(
        lambda r: Transition(next_state=r.action.upper(), reward=1, terminated=True)
    )
    try:
        transitions = model.predict_sync(make_requests(webshop_task, 3))
        assert [t.next_state for t in transitions] == ["SEARCH[0]", "SEARCH[1]", "SEARCH[2]"]
        assert all(t.reward == 1.0 and t.terminated for t in transitions)
        assert all(t.usage.model == "scripted" for t in transitions)
        assert model.predict_one(make_requests(webshop_task, 1)[0]).next_state == "SEARCH[0]"
        assert (model.calls, model.batches) == (4, 2)
        assert [r.action for r in model.requests] == ["search[0]", "search[1]", "search[2]", "search[0]"]
    finally:
        model.close()
    assert isinstance(model, ExperienceModel)


def test_default_echo(webshop_task):
    (request,) = make_requests(webshop_task, 1)
    assert echo_transition(request).next_state == f"{webshop_task.initial_state}\n[after] search[0]"


def test_latency_is_concurrent_within_a_batch(webshop_task):
    model = ScriptedExperienceModel(latency_s=0.05)
    transitions = asyncio.run(model.predict(make_requests(webshop_task, 16)))
    assert model.peak_in_flight == 16 and model.in_flight == 0
    assert all(t.usage.latency_s >= 0.05 for t in transitions)


def test_errors_propagate(webshop_task):
    def fail(request: ExperienceRequest) -> Transition:
        raise ModelTimeoutError("scripted timeout", backend="scripted", attempts=2)

    model = ScriptedExperienceModel(fail)
    with pytest.raises(ModelTimeoutError, match="scripted timeout"):
        asyncio.run(model.predict(make_requests(webshop_task, 2)))
    assert model.calls == 2 and model.in_flight == 0


def test_repr_names_the_double():
    assert (
        repr(ScriptedExperienceModel(model_id="m", latency_s=0.5))
        == "ScriptedExperienceModel(model_id='m', latency_s=0.5)"
    )
