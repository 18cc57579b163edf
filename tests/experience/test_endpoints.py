"""Item 2 of issue 17: several endpoints of one model, the fewest in flight chosen, failed ones left out.

The pool's choice is tested on its own with a fake clock; the transport against two (or three)
local scripted servers, one of which fails, refuses or is killed while requests are in flight.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.errors import ConfigurationError, ModelServerError
from dreamgym_env.experience.config import EndpointConfig, RetryPolicy
from dreamgym_env.experience.endpoints import EndpointPool
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedOpenAIServer, delay, echo_responder, http_error, ok, request_action
from dreamgym_env.types import EndpointCounts, Step

SECRET = "sk-test-ENDPOINTS-SECRET"
QUICK_RETRY = RetryPolicy(max_attempts=3, backoff_base_s=0.001, backoff_max_s=0.01, jitter=0.5)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def servers() -> Iterator[list[ScriptedOpenAIServer]]:
    """Two scripted servers (a third is started by the tests that need one)."""
    started = [ScriptedOpenAIServer().start() for _ in range(2)]
    yield started
    for server in started:
        server.close()


@pytest.fixture
def model_at() -> Iterator[Callable[..., OpenAIExperienceModel]]:
    made: list[OpenAIExperienceModel] = []

    def build(servers: list[ScriptedOpenAIServer], **settings: Any) -> OpenAIExperienceModel:
        defaults = {"model": "m", "api_key": None, "retry": QUICK_RETRY, "timeout_s": 5.0}
        model = OpenAIExperienceModel(base_url=[s.url for s in servers], **{**defaults, **settings})
        made.append(model)
        return model

    yield build
    for model in made:
        model.close()


def counts(model: OpenAIExperienceModel, servers: list[ScriptedOpenAIServer]) -> list[tuple[int, int]]:
    """(requests, failures) of each server's endpoint, as the model counted them."""
    totals = model.transport.counts()
    return [(totals[s.url].requests, totals[s.url].failures) for s in servers]


# -- the list of endpoints -------------------------------------------------------------------


def test_the_variable_takes_a_comma_separated_list():
    env = {"DREAMGYM_BASE_URL": " http://a:8000/v1 , b:9000,, http://c/v1/ ", "DREAMGYM_MODEL": "m"}
    config = EndpointConfig.resolve(environ=env)
    assert config.base_urls == ("http://a:8000/v1", "http://b:9000/v1", "http://c/v1")
    assert config.base_url == "http://a:8000/v1"  # the first, for code that names one
    assert config.describe() == "m@http://a:8000/v1,http://b:9000/v1,http://c/v1"
    assert EndpointConfig.resolve(environ={"DREAMGYM_BASE_URL": "a:1"}).base_urls == ("http://a:1/v1",)


def test_the_constructor_takes_a_list_and_replace_a_new_one():
    config = EndpointConfig.resolve(base_url=["a:1", "http://b:2/v1"], environ={})
    assert config.base_urls == ("http://a:1/v1", "http://b:2/v1")
    assert EndpointConfig(base_url="a:1,b:2").base_urls == config.base_urls
    assert config.replace(base_url="c:3").base_urls == ("http://c:3/v1",)
    assert config.replace(max_concurrency=3).base_urls == config.base_urls
    model = OpenAIExperienceModel(base_url="a:1,b:2", model="m", api_key=None)
    assert model.config.base_urls == config.base_urls and len(model.transport.pool) == 2


@pytest.mark.parametrize(
    ("base_url", "problem"),
    [
        ("a:1,http://a:1/v1", "listed twice"),
        (" , ", "base_url is empty"),
        ([], "base_url is empty"),
        (["a:1", 5], "list of URLs"),
        ("a:1,http://", "no host"),
    ],
)
def test_bad_lists_are_configuration_errors(base_url, problem):
    with pytest.raises(ConfigurationError, match=problem):
        EndpointConfig.resolve(base_url=base_url, environ={})


def test_passwords_of_every_endpoint_are_secrets_and_never_shown():
    config = EndpointConfig.resolve(
        base_url="http://u:pw-one@a:1/v1,http://b:2/v1,http://v:pw-two@c:3/v1", api_key=SECRET, environ={}
    )
    assert {"pw-one", "pw-two", SECRET} <= set(config.secrets)
    shown = [repr(config), str(config), config.describe(), config.display_url, config.model_dump_json()]
    model = OpenAIExperienceModel(config)
    shown += [repr(model), repr(model.transport), repr(model.transport.pool), *model.transport.counts()]
    for text in shown:
        assert "pw-one" not in text and "pw-two" not in text and SECRET not in text, text
    assert config.display_url == "http://u:***@a:1/v1,http://b:2/v1,http://v:***@c:3/v1"
    assert list(model.transport.counts()) == ["http://a:1/v1", "http://b:2/v1", "http://c:3/v1"]


def test_the_openai_key_goes_only_to_a_list_of_openai_urls():
    env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://proxy-a/v1,http://proxy-b/v1"}
    mixed = EndpointConfig.resolve(base_url="http://proxy-a/v1,http://elsewhere/v1", environ=env)
    assert not mixed.has_key
    assert EndpointConfig.resolve(base_url="http://proxy-b/v1,http://proxy-a/v1", environ=env).has_key
    assert EndpointConfig.resolve(environ=env).base_urls == ("http://proxy-a/v1", "http://proxy-b/v1")


# -- the pool's choice -----------------------------------------------------------------------


def test_the_endpoint_with_the_fewest_in_flight_is_chosen():
    pool = EndpointPool(["http://a/v1", "http://b/v1", "http://c/v1"], cooldown_s=5.0, clock=FakeClock())
    a, b, c = pool.endpoints
    for endpoint in (a, a, b, c, c, c):
        pool.begin(endpoint)
    assert pool.choose() is b
    pool.end(c)
    pool.end(c)  # now c has 1 in flight, as b: ties go round in turn
    assert {pool.choose().name for _ in range(4)} == {"http://b/v1", "http://c/v1"}
    assert (a.requests, a.in_flight, c.requests, c.in_flight) == (2, 2, 3, 1)


def test_ties_go_round_in_turn():
    pool = EndpointPool(["http://a/v1", "http://b/v1", "http://c/v1"], cooldown_s=5.0)
    chosen = [pool.choose().name for _ in range(30)]
    assert {name: chosen.count(name) for name in set(chosen)} == {e.name: 10 for e in pool.endpoints}


def test_a_failed_endpoint_cools_down_and_returns():
    clock = FakeClock()
    pool = EndpointPool(["http://a/v1", "http://b/v1"], cooldown_s=5.0, clock=clock)
    a, b = pool.endpoints
    pool.begin(a)
    pool.end(a, failed=True, cool_down=True)
    assert pool.cooling() == ["http://a/v1"] and not pool.available_besides(b)
    assert all(pool.choose() is b for _ in range(10))
    clock.now += 4.9
    assert pool.choose() is b
    clock.now += 0.2  # the cooldown is over
    assert pool.cooling() == [] and {pool.choose().name for _ in range(4)} == {a.name, b.name}
    assert pool.counts() == {a.name: EndpointCounts(requests=1, failures=1), b.name: EndpointCounts()}


def test_when_all_cool_down_the_first_to_return_is_chosen():
    clock = FakeClock()
    pool = EndpointPool(["http://a/v1", "http://b/v1"], cooldown_s=5.0, clock=clock)
    a, b = pool.endpoints
    pool.begin(b)
    pool.end(b, failed=True, cool_down=True)
    clock.now += 1
    pool.begin(a)
    pool.end(a, failed=True, cool_down=True)
    assert pool.choose() is b  # back 1 s before a: never refused here, the retry budget decides


def test_a_retry_avoids_the_endpoint_that_just_failed():
    pool = EndpointPool(["http://a/v1", "http://b/v1"], cooldown_s=5.0)
    a, b = pool.endpoints
    pool.begin(a)
    pool.end(a, failed=True)  # a 429: counted, not cooled down
    assert pool.cooling() == [] and all(pool.choose(avoid=a) is b for _ in range(5))
    single = EndpointPool(["http://a/v1"], cooldown_s=5.0)
    (only,) = single.endpoints
    single.begin(only)
    single.end(only, failed=True, cool_down=True)
    assert single.cooling() == [] and single.choose(avoid=only) is only  # one endpoint: never left out


# -- requests over HTTP ----------------------------------------------------------------------


def test_concurrent_requests_spread_over_the_endpoints(servers, model_at, webshop_request):
    for server in servers:
        server.responder = lambda body: delay(0.3, then=echo_responder(body))
    model = model_at(servers, max_concurrency=64)
    transitions = model.predict_sync([webshop_request] * 8)
    assert [s.requests_total for s in servers] == [4, 4]
    assert counts(model, servers) == [(4, 0), (4, 0)]
    assert {t.usage.endpoint for t in transitions} == {s.url for s in servers}


def test_a_busy_endpoint_gets_no_more_until_it_answers(servers, model_at, webshop_request):
    busy, free = servers

    def hold_until_the_other_served_all(body: dict[str, Any]) -> Any:
        deadline = time.monotonic() + 20
        while free.requests_total < 11 and time.monotonic() < deadline:
            time.sleep(0.01)
        return echo_responder(body)

    busy.responder = hold_until_the_other_served_all
    model = model_at(servers, max_concurrency=2)
    model.predict_sync([webshop_request] * 12)
    assert (busy.requests_total, free.requests_total) == (1, 11)
    assert counts(model, servers) == [(1, 0), (11, 0)]


def test_a_failing_endpoint_is_left_out_and_the_request_retried_at_once(servers, model_at, webshop_request):
    failing, healthy = servers
    failing.responder = lambda body: http_error(503)
    slow_backoff = QUICK_RETRY.model_copy(
        update={"backoff_base_s": 30.0, "backoff_max_s": 30.0, "jitter": 0.0}
    )
    # A 30 s backoff would outlast the 5 s deadline at once: the success shows the retry did not wait.
    model = model_at(servers, retry=slow_backoff, deadline_s=5.0, cooldown_s=60.0)
    transitions = [model.predict_one(webshop_request) for _ in range(6)]
    assert failing.requests_total == 1 and healthy.requests_total == 6
    assert counts(model, servers) == [(1, 1), (6, 0)]
    first, last = transitions[0].usage, transitions[-1].usage
    assert first.attempts == 2 and first.endpoint == healthy.url  # the first endpoint is tried first
    assert [t.usage.attempts for t in transitions[1:]] == [1] * 5
    assert last.endpoints == {
        failing.url: EndpointCounts(requests=1, failures=1),
        healthy.url: EndpointCounts(requests=6),
    }


def test_the_endpoint_returns_after_its_cooldown(servers, model_at, webshop_request):
    flaky, other = servers
    flaky.enqueue(http_error(500))
    model = model_at(servers, cooldown_s=1.0)
    for _ in range(4):
        model.predict_one(webshop_request)
    assert flaky.requests_total == 1 and other.requests_total == 4  # left out while cooling down
    time.sleep(1.05)
    for _ in range(4):
        model.predict_one(webshop_request)
    assert flaky.requests_total == 3 and other.requests_total == 6  # back in turn
    assert counts(model, servers) == [(3, 1), (6, 0)]


def test_a_refusal_is_not_an_endpoint_failure(servers, model_at, webshop_request):
    refusal = {"error": {"message": "response_format type json_schema is not supported"}}
    arrivals = itertools.count()

    def refuse_the_first(body: dict[str, Any]) -> Any:
        return http_error(400, refusal) if next(arrivals) == 0 else echo_responder(body)

    for server in servers:
        server.responder = refuse_the_first
    model = model_at(servers)
    model.predict_one(webshop_request)
    assert model.format_mode == "json_object"
    assert sum(s.requests_total for s in servers) == 2 and model.transport.pool.cooling() == []
    assert [failures for _, failures in counts(model, servers)] == [0, 0]


def test_when_every_endpoint_fails_the_typed_error_names_the_last(servers, model_at, webshop_request):
    for server in servers:
        server.responder = lambda body: http_error(502)
    model = model_at(servers)
    with pytest.raises(
        ModelServerError, match=r"at http://127\.0\.0\.1:\d+/v1: server error \(HTTP 502\)"
    ) as caught:
        model.predict_one(webshop_request)
    assert caught.value.attempts == QUICK_RETRY.max_attempts == sum(s.requests_total for s in servers)
    assert caught.value.backend == f"m@{servers[0].url},{servers[1].url}"


def test_an_unreachable_endpoint_is_failed_over(servers, model_at, webshop_request):
    with ScriptedOpenAIServer() as gone:
        url = gone.url  # the port is closed once the server stops
    model = OpenAIExperienceModel(
        base_url=[url, *(s.url for s in servers)], model="m", api_key=None, retry=QUICK_RETRY, cooldown_s=60.0
    )
    try:
        transitions = model.predict_sync([webshop_request] * 6)
        assert len(transitions) == 6 and sum(s.requests_total for s in servers) == 6
        assert model.transport.counts()[url].failures >= 1
    finally:
        model.close()


def test_info_usage_holds_the_counts_per_endpoint(servers, model_at, webshop_task):
    servers[0].enqueue(http_error(500))
    model = model_at(servers, cooldown_s=60.0)
    env = DreamEnv("webshop", model)
    env.reset(options={"task": webshop_task})
    _, _, _, _, info = env.step("search[navy shirt]")
    assert info["usage"]["endpoint"] == servers[1].url
    assert info["usage"]["endpoints"] == {
        servers[0].url: {"requests": 1, "failures": 1},
        servers[1].url: {"requests": 1, "failures": 0},
    }


def test_a_server_killed_mid_run_loses_no_step(servers, model_at, webshop_task):
    """Two servers; one is killed with requests in flight; the vector run records every step."""
    doomed, survivor = servers
    kill_at, arrivals = 12, itertools.count(1)

    def search_page(body: dict[str, Any]) -> Any:
        """A results page that still has the search box, so that every step asks the model."""
        page = f"WebShop [Search]\nresults of {request_action(body)}"
        return delay(0.05, then=ok({"reasoning": "r", "next_state": page, "reward": 0, "done": False}))

    def die_mid_run(body: dict[str, Any]) -> Any:
        if next(arrivals) == kill_at:  # this request and those in flight are cut
            threading.Thread(target=doomed.kill, daemon=True).start()
            return delay(30.0)
        return search_page(body)

    doomed_url = doomed.url
    doomed.responder = die_mid_run
    survivor.responder = search_page
    n, steps = 8, 6
    envs = DreamVectorEnv(n, "webshop", model_at(servers, cooldown_s=60.0), max_steps=100)
    heard: list[list[Step]] = [[] for _ in range(n)]
    for index, env in enumerate(envs.envs):
        env.add_step_listener(lambda task, step, i, index=index: heard[index].append(step))
    envs.reset(options={"task": webshop_task})
    for t in range(steps):
        _, _, terminated, truncated, infos = envs.step([f"search[item {t}]"] * n)
        assert not terminated.any() and not truncated.any()
    assert [len(h) for h in heard] == [steps] * n  # no step lost
    assert all([s.action for s in h] == [f"search[item {t}]" for t in range(steps)] for h in heard)
    assert all(s.next_state.endswith(f"results of {s.action}") for h in heard for s in h)
    totals = envs.experience_model.transport.counts()
    assert totals[doomed_url].failures >= 1 and doomed.requests_total >= kill_at
    assert totals[survivor.url].requests == survivor.requests_total
    assert sum(c.requests - c.failures for c in totals.values()) == n * steps  # one answer a step
    assert list(infos["usage"]["endpoint"]) == [survivor.url] * n  # the last step: only the survivor is up
    envs.close()


def test_a_single_endpoint_behaves_as_before(server, model_at, webshop_request):
    server.enqueue(http_error(500))
    model = model_at([server], cooldown_s=60.0)
    transition = model.predict_one(webshop_request)  # retried on the same endpoint, not left out
    assert transition.usage.attempts == 2 and server.requests_total == 2
    assert transition.usage.endpoints == {server.url: EndpointCounts(requests=2, failures=1)}
