from __future__ import annotations

import random

import pytest

from dreamgym_env.errors import ConfigurationError
from dreamgym_env.experience.config import (
    DEFAULT_BASE_URL,
    DEFAULT_DEADLINE_S,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT_S,
    NO_KEY,
    UNSET,
    EndpointConfig,
    RetryPolicy,
    normalise_base_url,
)

SECRET = "sk-test-SECRET123"
ENV = {
    "DREAMGYM_BASE_URL": "http://dream:8000/v1",
    "DREAMGYM_MODEL": "dream-model",
    "DREAMGYM_API_KEY": "dream-key",
    "OPENAI_BASE_URL": "http://openai-compatible:9000/v1",
    "OPENAI_MODEL": "openai-model",
    "OPENAI_API_KEY": "openai-key",
}


def test_defaults_without_environment():
    config = EndpointConfig.resolve(environ={})
    assert (config.base_url, config.model, config.api_key.get_secret_value()) == (
        DEFAULT_BASE_URL,
        DEFAULT_MODEL,
        NO_KEY,
    )
    assert config.temperature == 0 and not config.has_key


def test_dreamgym_variables_win_over_openai_ones():
    config = EndpointConfig.resolve(environ=ENV)
    assert (config.base_url, config.model, config.api_key.get_secret_value()) == (
        "http://dream:8000/v1",
        "dream-model",
        "dream-key",
    )


def test_openai_variables_are_the_fallback():
    env = {k: v for k, v in ENV.items() if k.startswith("OPENAI_")} | {"DREAMGYM_MODEL": ""}
    config = EndpointConfig.resolve(environ=env)
    assert (config.base_url, config.model, config.api_key.get_secret_value()) == (
        "http://openai-compatible:9000/v1",
        "openai-model",
        "openai-key",
    )


def test_openai_key_never_goes_to_a_dreamgym_endpoint():
    env = {"DREAMGYM_BASE_URL": "http://third-party:8000/v1", "OPENAI_API_KEY": "openai-key"}
    assert not EndpointConfig.resolve(environ=env).has_key
    assert not EndpointConfig.resolve(base_url="http://elsewhere/v1", environ=env).has_key
    assert EndpointConfig.resolve(environ={"OPENAI_API_KEY": "openai-key"}).has_key


def test_arguments_win_over_environment():
    config = EndpointConfig.resolve(
        base_url="http://arg:1/v1", model="arg-model", api_key="arg-key", environ=ENV
    )
    assert (config.base_url, config.model, config.api_key.get_secret_value()) == (
        "http://arg:1/v1",
        "arg-model",
        "arg-key",
    )


def test_explicit_none_differs_from_not_passed():
    config = EndpointConfig.resolve(api_key=None, base_url=None, model=None, environ=ENV)
    assert config.api_key.get_secret_value() == NO_KEY  # "send no key", not the environment's key
    assert config.base_url == DEFAULT_BASE_URL and config.model == DEFAULT_MODEL
    passed_unset = EndpointConfig.resolve(api_key=UNSET, environ=ENV)
    assert passed_unset.api_key.get_secret_value() == "dream-key"
    assert EndpointConfig.resolve(timeout_s=None, environ={}).timeout_s is None  # no timeout


@pytest.mark.parametrize(
    ("given", "normalised"),
    [
        ("localhost:8000", "http://localhost:8000/v1"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1"),
        ("https://api.example.com/v1/", "https://api.example.com/v1"),
        ("https://host/openai/v1", "https://host/openai/v1"),
    ],
)
def test_base_url_shorthand(given, normalised):
    assert normalise_base_url(given) == normalised
    assert EndpointConfig.resolve(base_url=given, environ={}).base_url == normalised


def test_retry_shorthand_and_policy():
    assert EndpointConfig.resolve(retry=7, environ={}).retry == RetryPolicy(max_attempts=7)
    assert EndpointConfig.resolve(retry={"backoff_base_s": 0.1}, environ={}).retry.backoff_base_s == 0.1


def test_backoff_grows_exponentially_and_is_capped_with_jitter():
    policy = RetryPolicy(backoff_base_s=1.0, backoff_max_s=5.0, jitter=0.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    jittered = RetryPolicy(backoff_base_s=1.0, backoff_max_s=5.0, jitter=0.5)
    delays = {jittered.delay(3, random.Random(seed)) for seed in range(20)}
    assert len(delays) > 1 and all(2.0 <= d <= 4.0 for d in delays)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"timeout_s": -1}, "timeout_s"),
        ({"model": " "}, "model"),
        ({"base_url": "http://"}, "base_url"),
        ({"retry": {"jitter": 2}}, "retry.jitter"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_invalid_settings_are_configuration_errors(settings, field):
    with pytest.raises(ConfigurationError, match=field):
        EndpointConfig.resolve(environ={}, **settings)


def test_key_is_never_shown():
    config = EndpointConfig.resolve(api_key=SECRET, environ={})
    assert config.has_key and config.api_key.get_secret_value() == SECRET
    with pytest.raises(ConfigurationError) as caught:
        config.replace(max_concurrency=-1)
    for text in (repr(config), str(config), config.describe(), str(caught.value), config.model_dump_json()):
        assert SECRET not in text


def test_describe_hides_credentials_in_url():
    config = EndpointConfig.resolve(base_url="http://user:pw@host:1/v1", model="m", environ={})
    assert config.describe() == "m@http://host:1/v1"


def test_replace_validates_and_keeps_the_rest():
    config = EndpointConfig.resolve(api_key=SECRET, model="m", environ={})
    changed = config.replace(max_concurrency=3, timeout_s=UNSET)
    assert changed.max_concurrency == 3 and changed.timeout_s == config.timeout_s
    assert changed.api_key.get_secret_value() == SECRET and changed.model == "m"


def test_timeout_and_deadline_from_variables_arguments_win():
    env = {"DREAMGYM_TIMEOUT": " 5 ", "DREAMGYM_DEADLINE": "30.5"}
    config = EndpointConfig.resolve(environ=env)
    assert (config.timeout_s, config.deadline_s) == (5.0, 30.5)
    config = EndpointConfig.resolve(environ=env, timeout_s=2, deadline_s=None)
    assert (config.timeout_s, config.deadline_s) == (2, None)
    config = EndpointConfig.resolve(environ=env, timeout_s=UNSET)
    assert config.timeout_s == 5.0
    assert EndpointConfig.resolve(environ={"DREAMGYM_DEADLINE": "none"}).deadline_s is None
    defaults = EndpointConfig.resolve(environ={"OPENAI_TIMEOUT": "1"})  # only DREAMGYM_ variables
    assert (defaults.timeout_s, defaults.deadline_s) == (DEFAULT_TIMEOUT_S, DEFAULT_DEADLINE_S)


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "1e999"])
@pytest.mark.parametrize("variable", ["DREAMGYM_TIMEOUT", "DREAMGYM_DEADLINE"])
def test_bad_seconds_variables_are_configuration_errors(variable, value):
    with pytest.raises(ConfigurationError, match=variable):
        EndpointConfig.resolve(environ={variable: value})


def test_password_in_url_is_masked_but_used():
    config = EndpointConfig.resolve(base_url="http://user:p%40ss@host:1/v1", api_key=SECRET, environ={})
    assert config.base_url == "http://user:p%40ss@host:1/v1"  # the client still gets it
    assert config.display_url == "http://user:***@host:1/v1"
    for text in (repr(config), str(config), config.describe(), config.model_dump_json()):
        assert "p%40ss" not in text and "p@ss" not in text and SECRET not in text
    assert {"p%40ss", "p@ss", SECRET} <= set(config.secrets)
    assert EndpointConfig.resolve(environ={}).secrets == ()  # the placeholder key is no secret


def test_a_python_mode_dump_hides_the_password_and_the_key():
    """Issue 30, item 3: ``model_dump()`` is printed and logged like the JSON dump."""
    config = EndpointConfig.resolve(base_url="http://user:p%40ss@host:1/v1,b:2", api_key=SECRET, environ={})
    dumped = config.model_dump()
    assert dumped["base_urls"] == ["http://user:***@host:1/v1", "http://b:2/v1"]
    assert all(secret not in str(dumped) for secret in ("p%40ss", "p@ss", SECRET))
    changed = config.replace(timeout_s=3)  # replace still builds on the real settings
    assert changed.base_urls == config.base_urls and changed.api_key.get_secret_value() == SECRET
