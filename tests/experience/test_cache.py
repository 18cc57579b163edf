from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.domain import PROMPT as WEBSHOP_PROMPT
from dreamgym_env.errors import ModelTimeoutError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.cache import (
    CachedExperienceModel,
    cache_enabled,
    default_cache_path,
    request_key,
)
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer
from dreamgym_env.types import ExperienceRequest, Transition


@pytest.fixture
def request_() -> ExperienceRequest:
    task = get_domain("webshop").tasks("train")[0]
    return ExperienceRequest(
        prompt=WEBSHOP_PROMPT, task=task, state=task.initial_state, action="search[red shirt]"
    )


@pytest.fixture
def endpoint(server: ScriptedOpenAIServer) -> Iterator[OpenAIExperienceModel]:
    model = OpenAIExperienceModel(base_url=server.url, model="test-model", api_key=None, timeout_s=5.0)
    yield model
    model.close()


@pytest.fixture
def cached() -> Iterator[Callable[[ExperienceModel, Path], CachedExperienceModel]]:
    """Builds cache wrappers and closes them (and their backends' clients) after the test."""
    made: list[CachedExperienceModel] = []

    def build(inner: ExperienceModel, path: Path) -> CachedExperienceModel:
        made.append(CachedExperienceModel(inner, path))
        return made[-1]

    yield build
    for model in made:
        model.close()


def test_hit_returns_the_stored_transition_without_a_server_call(
    server, endpoint, request_, tmp_path, cached
):
    model = cached(endpoint, tmp_path / "t.sqlite")
    first = model.predict_one(request_)
    second = model.predict_one(request_)
    assert server.requests_total == 1
    assert second.model_dump(exclude={"usage"}) == first.model_dump(exclude={"usage"})
    assert (first.usage.cached, first.usage.cache_hits, first.usage.cache_misses) == (False, 0, 1)
    assert (second.usage.cached, second.usage.cache_hits, second.usage.cache_misses) == (True, 1, 1)
    assert second.usage.prompt_tokens == second.usage.completion_tokens == 0
    assert second.usage.model == "test-model"


def test_cache_persists_across_instances(server, endpoint, request_, tmp_path, cached):
    path = tmp_path / "t.sqlite"
    first = cached(endpoint, path).predict_one(request_)
    again = cached(endpoint, path).predict_one(request_)
    assert server.requests_total == 1 and again.usage.cached
    assert again.next_state == first.next_state


def test_changed_prompt_version_or_model_misses(server, endpoint, request_, tmp_path, cached):
    path = tmp_path / "t.sqlite"
    cached(endpoint, path).predict_one(request_)
    endpoint.prompt_version = "changed"
    assert not cached(endpoint, path).predict_one(request_).usage.cached
    assert server.requests_total == 2
    other = OpenAIExperienceModel(base_url=server.url, model="other-model", api_key=None)
    assert not cached(other, path).predict_one(request_).usage.cached
    assert server.requests_total == 3


def test_changed_request_content_misses(request_, tmp_path, cached):
    inner = ScriptedExperienceModel()
    model = cached(inner, tmp_path / "t.sqlite")
    model.predict_one(request_)
    model.predict_one(request_.model_copy(update={"action": "search[blue shirt]"}))
    model.predict_one(request_.model_copy(update={"state": request_.state + "\n[Next >]"}))
    assert inner.calls == 3 and model.misses == 3 and model.hits == 0


def test_batch_mixes_hits_and_misses_in_order_and_deduplicates(request_, tmp_path, cached):
    inner = ScriptedExperienceModel()
    model = cached(inner, tmp_path / "t.sqlite")
    other = request_.model_copy(update={"action": "search[socks]"})
    model.predict_one(request_)
    answers = model.predict_sync([other, request_, other])
    assert inner.calls == 2  # the first request once, `other` once for both of its copies
    assert all(
        a.next_state.endswith(r.action) for a, r in zip(answers, [other, request_, other], strict=True)
    )
    assert [a.usage.cached for a in answers] == [False, True, True]
    assert answers[-1].usage.cache_hits == 2 and answers[-1].usage.cache_misses == 2


def test_disabled_cache_passes_through_and_writes_nothing(request_, tmp_path):
    inner = ScriptedExperienceModel()
    model = CachedExperienceModel(inner, tmp_path / "t.sqlite", enabled=False)
    model.predict_one(request_)
    model.predict_one(request_)
    model.close()
    assert inner.calls == 2 and not (tmp_path / "t.sqlite").exists() and model.store is None


def test_sampling_backend_bypasses_the_cache(server, request_, tmp_path, caplog, cached):
    sampling = OpenAIExperienceModel(base_url=server.url, model="m", api_key=None, temperature=0.7)
    model = cached(sampling, tmp_path / "t.sqlite")
    with caplog.at_level(logging.INFO, logger="dreamgym_env.experience.cache"):
        model.predict_one(request_)
        model.predict_one(request_)
    assert server.requests_total == 2 and model.store is not None and len(model.store) == 0
    assert sum("bypassed" in r.message for r in caplog.records) == 1


def test_failures_are_not_cached(request_, tmp_path, cached):
    calls = []

    def flaky(request: ExperienceRequest) -> Transition:
        calls.append(request)
        if len(calls) == 1:
            raise ModelTimeoutError("timed out", backend="scripted", attempts=1)
        return Transition(next_state="page")

    model = cached(ScriptedExperienceModel(flaky), tmp_path / "t.sqlite")
    with pytest.raises(ModelTimeoutError):
        model.predict_one(request_)
    assert model.predict_one(request_).next_state == "page" and len(calls) == 2


def test_key_covers_request_model_and_prompt_version(request_):
    key = request_key(request_, model_id="m", prompt_version="1")
    assert key == request_key(request_.model_copy(), model_id="m", prompt_version="1")
    assert key != request_key(request_, model_id="m2", prompt_version="1")
    assert key != request_key(request_, model_id="m", prompt_version="2")
    assert len(key) == 64


def test_unreadable_entry_is_a_miss(request_, tmp_path, cached):
    path = tmp_path / "t.sqlite"
    inner = ScriptedExperienceModel()
    model = cached(inner, path)
    model.predict_one(request_)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE transitions SET transition = ?", (json.dumps({"not": "a transition"}),))
    assert not model.predict_one(request_).usage.cached and inner.calls == 2


def test_flag_and_default_location():
    assert cache_enabled({"DREAMGYM_CACHE": "1"}) and cache_enabled({"DREAMGYM_CACHE": "on"})
    assert not cache_enabled({}) and not cache_enabled({"DREAMGYM_CACHE": "0"})
    assert default_cache_path({"DREAMGYM_CACHE_DIR": "/x"}) == Path("/x/transitions.sqlite")


def test_key_of_a_request_with_lone_surrogates_is_the_key_of_what_the_model_sees(request_):
    lone = request_.model_copy(update={"action": "search[shoes \ud800]", "state": "page \udfff"})
    seen = request_.model_copy(update={"action": "search[shoes \ufffd]", "state": "page \ufffd"})
    key = request_key(lone, model_id="m", prompt_version="1")
    assert key == request_key(seen, model_id="m", prompt_version="1")
    assert key != request_key(request_, model_id="m", prompt_version="1")
