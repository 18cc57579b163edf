"""Which model an endpoint serves, for settings that name none (``GET /models``).

Nothing names the model when neither ``model=`` nor ``DREAMGYM_MODEL`` / ``OPENAI_MODEL`` is
set. OpenAI's own API then gets :data:`~dreamgym_env.experience.config.DEFAULT_MODEL`; any other
endpoint (vLLM, SGLang, llama.cpp, Ollama ...) is asked which models it serves, and the one it
serves is used. Several or none raise :class:`~dreamgym_env.errors.ConfigurationError` listing
them: a request for a model the server does not have would only fail later, less clearly.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from dreamgym_env.errors import ConfigurationError, ExperienceModelError, ModelServerError
from dreamgym_env.experience.config import (
    DEFAULT_TIMEOUT_S,
    UNSET,
    EndpointConfig,
    endpoint_name,
    model_is_named,
)
from dreamgym_env.experience.transport import HTTPStatusError, _route, translate_error

logger = logging.getLogger(__name__)

SHOWN_MODELS = 10
"""How many of the served models an error lists."""


def resolve_config(**settings: Any) -> EndpointConfig:
    """:meth:`EndpointConfig.resolve`, with the endpoint's one model when nothing names the model."""
    config = EndpointConfig.resolve(**settings)
    if config.is_openai or model_is_named(settings.get("model", UNSET), settings.get("environ")):
        return config
    return config.replace(model=served_model(config))


def served_model(config: EndpointConfig) -> str:
    """The one model that the endpoints of ``config`` serve, as the first that answers lists it.

    Raises:
        ConfigurationError: the endpoint serves several models, or none.
        ModelTransportError: no endpoint could be asked (unreachable, timed out, an HTTP error; a
            subclass says which), or ``ModelServerError``: the answer is no model list.
    """
    key = config.api_key.get_secret_value()
    failure: ExperienceModelError | None = None
    for url in config.base_urls:
        name = endpoint_name(url)
        context = f"asking {name}/models which model it serves (name one with DREAMGYM_MODEL or model=)"
        try:
            body = _get(url, key, config.timeout_s)
        except OSError as exc:  # urllib's errors, timeouts included
            failure = translate_error(
                _plain(exc), backend=name, attempts=1, context=context, secrets=config.secrets
            )
            continue  # another endpoint of the same model may answer
        models = _model_ids(body)
        if models is None:
            raise ModelServerError(
                f"{context}: the answer is not a model list (JSON with a 'data' list)",
                backend=name,
                attempts=1,
            )
        if len(models) == 1:
            logger.info("no model named: using %r, the one model %s serves", models[0], name)
            return models[0]
        shown = ", ".join(models[:SHOWN_MODELS]) + (" ..." if len(models) > SHOWN_MODELS else "")
        served = f"{len(models)} models ({shown})" if models else "no model"
        raise ConfigurationError(
            f"no model named (model=, DREAMGYM_MODEL or OPENAI_MODEL) and {name} serves {served}: "
            "name the one to use"
        )
    assert failure is not None, "a config has at least one base URL"
    raise failure from None  # urllib's error may hold the request's credentials


def _get(base_url: str, api_key: str, timeout_s: float | None) -> bytes:
    """The body of ``GET <base_url>/models``, with the credentials and proxy of chat requests."""
    route = _route(base_url, api_key, "/models")
    proxies = {urlsplit(route.url).scheme: route.proxy} if route.proxy else {}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies))
    request = urllib.request.Request(route.url, headers=dict(route.headers))
    with opener.open(request, timeout=timeout_s or DEFAULT_TIMEOUT_S) as response:
        return bytes(response.read())


def _plain(exc: OSError) -> BaseException:
    """Urllib's error as the transport's: an HTTP answer as :class:`HTTPStatusError`, else its reason."""
    if isinstance(exc, urllib.error.HTTPError):
        return HTTPStatusError.of(exc.code, exc.read(), dict(exc.headers or {}))
    if isinstance(exc, urllib.error.URLError):
        return exc.reason if isinstance(exc.reason, BaseException) else OSError(str(exc.reason))
    return exc


def _model_ids(body: bytes) -> list[str] | None:
    """The model ids of an OpenAI ``/models`` answer, or ``None`` when it is not one."""
    try:
        data = json.loads(body).get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, list) or not all(
        isinstance(m, dict) and isinstance(m.get("id"), str) for m in data
    ):
        return None
    return [m["id"] for m in data]
