"""Issue 30, item 6: an endpoint model whose model nothing names asks the endpoint which one it serves."""

from __future__ import annotations

import logging
import re

import pytest

from dreamgym_env.errors import ConfigurationError, ModelRequestError, ModelTransportError
from dreamgym_env.experience.config import DEFAULT_MODEL
from dreamgym_env.experience.discovery import resolve_config
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedOpenAIServer


def test_the_one_served_model_is_used(webshop_request, caplog):
    with ScriptedOpenAIServer(served_models=["qwen-served"]) as server:
        with caplog.at_level(logging.INFO, logger="dreamgym_env.experience.discovery"):
            model = OpenAIExperienceModel(base_url=server.url, api_key=None, environ={})
        try:
            assert model.model_id == model.config.model == "qwen-served"
            model.predict_one(webshop_request)
        finally:
            model.close()
        assert server.requests[0]["model"] == "qwen-served"  # not gpt-4o-mini
    assert "using 'qwen-served', the one model" in caplog.text


@pytest.mark.parametrize(
    ("served", "said"),
    [(["a", "b"], "serves 2 models (a, b)"), ([], "serves no model")],
    ids=["several", "none"],
)
def test_several_or_no_served_models_are_a_clear_error(served, said):
    with ScriptedOpenAIServer(served_models=served) as server:
        with pytest.raises(
            ConfigurationError, match=rf"^no model named .*{re.escape(said)}: name the one to use$"
        ):
            OpenAIExperienceModel(base_url=server.url, api_key=None, environ={})
        assert server.requests_total == 0  # no chat request for a model the server lacks


def test_a_named_model_asks_nothing():
    with ScriptedOpenAIServer(served_models=["a", "b"]) as server:  # would be an error if asked
        for settings in (
            {"model": "b"},
            {"environ": {"DREAMGYM_MODEL": "a"}},
            {"environ": {"OPENAI_MODEL": "a"}},
        ):
            config = resolve_config(base_url=server.url, **{"environ": {}, **settings})
            assert config.model in ("a", "b")


def test_openais_own_api_keeps_its_default_model_without_asking():
    assert resolve_config(environ={"OPENAI_API_KEY": "sk-test"}).model == DEFAULT_MODEL  # no network


def test_an_endpoint_that_cannot_be_asked_is_a_typed_error_without_the_key():
    with ScriptedOpenAIServer() as server:
        url = server.url
    with pytest.raises(
        ModelTransportError, match=r"asking http://127\.0\.0\.1:\d+/v1/models .*DREAMGYM_MODEL"
    ):
        OpenAIExperienceModel(base_url=url, api_key="sk-SECRET-KEY", environ={})
    with ScriptedOpenAIServer() as server, pytest.raises(ModelRequestError) as refused:
        server_url = server.url.replace("/v1", "/nothing-here")  # GET there: HTTP 404
        OpenAIExperienceModel(base_url=server_url, api_key="sk-SECRET-KEY", environ={})
    assert "HTTP 404" in str(refused.value) and "sk-SECRET-KEY" not in str(refused.value)


def test_the_next_endpoint_is_asked_when_the_first_is_down():
    with ScriptedOpenAIServer() as gone:
        down = gone.url
    with ScriptedOpenAIServer(served_models=["m"]) as server:
        assert resolve_config(base_url=[down, server.url], environ={}).model == "m"
