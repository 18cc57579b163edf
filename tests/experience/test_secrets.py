"""Item 7 of issue 14: no formatted traceback of a backend error, repr or log line shows a secret.

The secrets are the API key and a password in the base URL. The scripted server echoes them in
its error bodies, as servers that echo the ``Authorization`` header do.
"""

from __future__ import annotations

import base64
import logging
import traceback
from urllib.parse import urlsplit, urlunsplit

import pytest

from dreamgym_env.errors import ExperienceModelError, ModelRequestError
from dreamgym_env.experience.config import EndpointConfig
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.experience.selection import default_experience_model
from dreamgym_env.experience.transport import EndpointTransport
from dreamgym_env.testing import delay, drop, http_error, raw

KEY = "sk-test-SECRET-KEY-0123456789"
PASSWORD = "hunter2-PASSWORD"


BASIC = base64.b64encode(f"user:{PASSWORD}".encode()).decode()
"""The credential the HTTP client sends for ``user:PASSWORD@`` in the base URL."""


def echo(status: int) -> object:
    """An error body quoting every secret, as a server echoing the request's headers would."""
    message = f"Invalid header Authorization: Bearer {KEY} (or Basic {BASIC}) for user:{PASSWORD}"
    return http_error(status, {"error": {"message": message, "type": "invalid_request_error"}})


FAILURES = {
    "401-echo": [echo(401)],
    "400-echo": [echo(400)],
    "429-echo": [echo(429)] * 3,
    "500-echo": [echo(500)] * 3,
    "200-html-echo": [raw(f"<html>Bearer {KEY} Basic {BASIC} {PASSWORD}</html>", content_type="text/html")]
    * 3,
    "timeout": [delay(3.0)] * 3,
    "dropped": [drop()] * 3,
}


def with_password(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, f"user:{PASSWORD}@{parts.netloc}", parts.path, "", ""))


def shown(error: BaseException) -> str:
    """Everything a user or a log may see of ``error``: its traceback with the chain, str and repr."""
    return "".join(traceback.format_exception(error)) + str(error) + repr(error)


@pytest.mark.parametrize("password_in_url", [False, True], ids=["key", "key-and-url-password"])
@pytest.mark.parametrize("replies", FAILURES.values(), ids=FAILURES.keys())
def test_no_traceback_of_a_backend_error_contains_a_secret(
    server, endpoint_model, webshop_request, replies, password_in_url
):
    server.enqueue(*replies)
    url = with_password(server.url) if password_in_url else server.url
    model = endpoint_model(base_url=url, api_key=KEY, timeout_s=0.3)
    with pytest.raises(ExperienceModelError) as caught:
        model.predict_one(webshop_request)
    sent = server.request_headers[0]["authorization"]
    assert sent == (f"Basic {BASIC}" if password_in_url else f"Bearer {KEY}")  # what a server may echo
    text = shown(caught.value)
    secrets = [KEY, PASSWORD, BASIC] if password_in_url else [KEY]
    assert not [secret for secret in secrets if secret in text]
    assert caught.value.__cause__ is None  # the library's error, which holds the key, is not chained
    assert caught.value.attempts == len(replies) == server.requests_total


def test_the_masked_detail_is_kept(server, endpoint_model, webshop_request):
    server.enqueue(echo(401))
    with pytest.raises(
        ModelRequestError, match=r"HTTP 401.*Bearer \*\*\* \(or Basic \*\*\*\) for user:\*\*\*"
    ):
        endpoint_model(base_url=with_password(server.url), api_key=KEY).predict_one(webshop_request)


def test_password_in_the_base_url_never_shows(server, caplog):
    url = with_password(server.url)
    config = EndpointConfig.resolve(base_url=url, api_key=KEY, model="m", environ={})
    with caplog.at_level(logging.INFO, logger="dreamgym_env.experience.selection"):
        model = default_experience_model(base_url=url, api_key=KEY, model="m")
    try:
        assert isinstance(model, OpenAIExperienceModel) and model.config.base_url == url  # still used
        announced = [r.getMessage() for r in caplog.records if r.getMessage().startswith("experience model:")]
        assert len(announced) == 1
        texts = [repr(model), str(model), repr(config), str(config), config.describe(), config.display_url]
        texts += [config.model_dump_json(), repr(EndpointTransport(config)), announced[0]]
        for text in texts:
            assert PASSWORD not in text and KEY not in text, text
        assert "user:***@127.0.0.1" in repr(model) and "user:***@" in repr(config)
    finally:
        model.close()
