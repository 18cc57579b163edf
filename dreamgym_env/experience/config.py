"""Settings of endpoint backends: where the model is, how long to wait, how to retry.

Each setting is resolved in this order: a constructor argument (also through
``default_experience_model(...)``), then ``DREAMGYM_BASE_URL`` / ``DREAMGYM_API_KEY`` /
``DREAMGYM_MODEL``, then ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL``, then the
named defaults below. An argument left out (:data:`UNSET`) is distinct from an explicit ``None``:
``api_key=None`` means "send no key" (a local server needs none) and never falls back to a key
from the environment; ``timeout_s=None`` means "no timeout".

How long a call may take:

| setting | variable | default | meaning |
|---|---|---|---|
| ``timeout_s`` | ``DREAMGYM_TIMEOUT`` | 60 s | one HTTP attempt |
| ``deadline_s`` | ``DREAMGYM_DEADLINE`` | 120 s | one request in total: retries, backoff and re-asks |

The variables take seconds, or ``none``/``off`` for no limit. When the deadline passes,
:class:`~dreamgym_env.errors.ModelTimeoutError` is raised even if retries remain.

The model: ``model``, else ``DREAMGYM_MODEL``, else ``OPENAI_MODEL``; when none is set, OpenAI's
own API gets :data:`DEFAULT_MODEL` and any other endpoint is asked which model it serves
(:mod:`dreamgym_env.experience.discovery`; the backends do that, :meth:`EndpointConfig.resolve`
itself never goes to the network).

Several endpoints serving the same model: ``base_url`` takes a list, or a comma-separated
string (``DREAMGYM_BASE_URL=http://a:8000/v1,http://b:8000/v1``); each request goes to the one
with the fewest requests in flight, and one that fails is left out for ``cooldown_s`` (see
:mod:`dreamgym_env.experience.endpoints`). ``base_urls`` holds them all, ``base_url`` the first.

The API key is a :class:`pydantic.SecretStr`: it never shows in ``repr``, ``str``, logs, errors
or ``model_dump()``; nor does a password in the base URL (``http://user:pass@host/v1``), which
shows as ``***`` (in ``model_dump()`` and ``model_dump_json()`` too: ``base_urls`` holds the real one).
"""

from __future__ import annotations

import base64
import enum
import math
import os
import random
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from dreamgym_env.errors import ConfigurationError

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
DEFAULT_MODEL: Final = "gpt-4o-mini"
NO_KEY: Final = "not-needed"
"""Sent as the key when none is configured: local servers (llama.cpp, vLLM, Ollama) ignore it."""
DEFAULT_TIMEOUT_S: Final = 60.0
DEFAULT_DEADLINE_S: Final = 120.0
DEFAULT_MAX_CONCURRENCY: Final = 64
DEFAULT_TEMPERATURE: Final = 0.0
DEFAULT_MAX_TOKENS: Final = 2048
"""Enough for the schema's longest answer (1,200 + 4,000 characters); the local backend's default too."""
DEFAULT_MAX_ATTEMPTS: Final = 4
DEFAULT_BACKOFF_BASE_S: Final = 0.5
DEFAULT_BACKOFF_MAX_S: Final = 8.0
DEFAULT_JITTER: Final = 0.5
DEFAULT_MAX_OUTPUT_REASKS: Final = 2
DEFAULT_COOLDOWN_S: Final = 5.0
"""How long an endpoint that failed (connection, timeout, 5xx) is left out when there are several."""

ENV_PREFIXES: Final = ("DREAMGYM_", "OPENAI_")
"""Environment variable prefixes, in the order they are read."""
SECONDS_VARIABLES: Final = {"timeout_s": "DREAMGYM_TIMEOUT", "deadline_s": "DREAMGYM_DEADLINE"}
"""Settings in seconds that a ``DREAMGYM_*`` variable sets when no argument does."""
_NO_LIMIT: Final = frozenset({"none", "off", "no", "inf"})


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset.UNSET
"""The value of an argument that was not passed (distinct from ``None``)."""


class RetryPolicy(BaseModel):
    """How often and how patiently failed calls (timeouts, 429, 5xx, connection errors) are retried.

    The wait before retry ``n`` (1-based) is ``min(backoff_max_s, backoff_base_s * 2**(n-1))``,
    shortened by a random share of up to ``jitter`` so that many clients do not retry in step.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1)
    backoff_base_s: float = Field(default=DEFAULT_BACKOFF_BASE_S, ge=0)
    backoff_max_s: float = Field(default=DEFAULT_BACKOFF_MAX_S, ge=0)
    jitter: float = Field(default=DEFAULT_JITTER, ge=0, le=1)

    def delay(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first retry)."""
        base = min(self.backoff_max_s, self.backoff_base_s * 2 ** max(0, retry - 1))
        return base * (1.0 - self.jitter * (rng or random).random())


class EndpointConfig(BaseModel):
    """Settings of an OpenAI-compatible endpoint backend.

    Build it with :meth:`resolve` to read the environment; the constructor takes values as given.
    ``base_url`` accepts shorthand: ``localhost:8000`` becomes ``http://localhost:8000/v1``; and
    several endpoints of the same model, as a list or comma-separated (stored in ``base_urls``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_urls: tuple[str, ...] = (DEFAULT_BASE_URL,)
    api_key: SecretStr = SecretStr(NO_KEY)
    model: str = DEFAULT_MODEL
    timeout_s: float | None = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    deadline_s: float | None = Field(default=DEFAULT_DEADLINE_S, gt=0)
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1)
    temperature: float = Field(default=DEFAULT_TEMPERATURE, ge=0)
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    max_output_reasks: int = Field(default=DEFAULT_MAX_OUTPUT_REASKS, ge=0)
    cooldown_s: float = Field(default=DEFAULT_COOLDOWN_S, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _base_url_is_base_urls(cls, values: Any) -> Any:
        if isinstance(values, dict) and "base_url" in values:
            if "base_urls" in values:
                raise ValueError("pass base_url or base_urls, not both")
            values = {**values, "base_urls": values["base_url"]}
            del values["base_url"]
        return values

    @field_validator("base_urls", mode="before")
    @classmethod
    def _normalise_base_urls(cls, value: Any) -> Any:
        urls = split_base_urls(value)
        if not urls:
            raise ValueError("base_url is empty")
        if not all(isinstance(url, str) for url in urls):
            raise ValueError("base_url must be a URL, a comma-separated list of URLs or a list of URLs")
        normalised = [normalise_base_url(url) for url in urls]
        names = [endpoint_name(url) for url in normalised]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"endpoint listed twice: {', '.join(twice)}")
        return tuple(normalised)

    @field_validator("api_key", mode="before")
    @classmethod
    def _key_or_placeholder(cls, value: Any) -> Any:
        return NO_KEY if value is None or value == "" else value

    @field_validator("model")
    @classmethod
    def _model_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model name is empty")
        return value.strip()

    @field_validator("retry", mode="before")
    @classmethod
    def _retry_shorthand(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return RetryPolicy(max_attempts=value)
        return value

    @field_serializer("base_urls")  # JSON and Python mode: a dump is shown, logged, written
    def _urls_without_password(self, value: tuple[str, ...]) -> list[str]:
        return [masked_url(url) for url in value]

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            yield name, tuple(map(masked_url, value)) if name == "base_urls" else value

    @property
    def base_url(self) -> str:
        """The first endpoint (the only one, unless several were given)."""
        return self.base_urls[0]

    @property
    def is_openai(self) -> bool:
        """Whether every endpoint is OpenAI's own API, which serves :data:`DEFAULT_MODEL`."""
        return all(url == DEFAULT_BASE_URL for url in self.base_urls)

    @property
    def has_key(self) -> bool:
        """Whether a real key (not the placeholder) is configured."""
        return self.api_key.get_secret_value() != NO_KEY

    @property
    def display_url(self) -> str:
        """The base URLs as shown to people (comma-separated): a password in one as ``***``."""
        return ",".join(map(masked_url, self.base_urls))

    @property
    def secrets(self) -> tuple[str, ...]:
        """What must never show in an error or a log: the key, and a password in the base URL.

        The password in each form a server may echo it: as written, decoded, and inside the
        ``Basic`` credential that the HTTP client builds from the URL.
        """
        found = [self.api_key.get_secret_value() if self.has_key else ""]
        for url in self.base_urls:
            parts = urlsplit(url)
            if parts.password:
                user, password = unquote(parts.username or ""), unquote(parts.password)
                found += [parts.password, password, base64.b64encode(f"{user}:{password}".encode()).decode()]
        return tuple(dict.fromkeys(secret for secret in found if secret))

    def describe(self) -> str:
        """``model@base_url`` (the URLs comma-separated): how errors and logs name the endpoints.

        Never with the key, nor credentials embedded in a URL.
        """
        return f"{self.model}@{','.join(map(endpoint_name, self.base_urls))}"

    @classmethod
    def resolve(
        cls,
        *,
        base_url: str | Sequence[str] | _Unset | None = UNSET,
        api_key: str | SecretStr | _Unset | None = UNSET,
        model: str | _Unset | None = UNSET,
        environ: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> EndpointConfig:
        """Resolve settings from arguments, then the environment, then the defaults.

        ``base_url`` (and the variables) may name several endpoints, as a list or comma-separated.
        ``environ`` replaces ``os.environ`` (for tests). ``settings`` are the other fields
        (``timeout_s``, ``deadline_s``, ``max_concurrency``, ``retry`` ...); an explicit ``None``
        for ``base_url`` or ``model`` means "use the default", for ``api_key`` "send no key".
        ``timeout_s`` and ``deadline_s`` not passed come from ``DREAMGYM_TIMEOUT`` and
        ``DREAMGYM_DEADLINE`` (seconds, or ``none``).
        """
        env = os.environ if environ is None else environ
        resolved_url = _pick(base_url, env, "BASE_URL", DEFAULT_BASE_URL)
        values: dict[str, Any] = {
            "base_url": resolved_url,
            "api_key": _pick(api_key, env, "API_KEY", None, prefixes=_key_prefixes(resolved_url, env)),
            "model": _pick(model, env, "MODEL", DEFAULT_MODEL),
        }
        for name, variable in SECONDS_VARIABLES.items():
            if settings.get(name, UNSET) is UNSET and env.get(variable, "").strip():
                values[name] = _seconds(variable, env[variable])
        values.update({name: value for name, value in settings.items() if value is not UNSET})
        return cls._build(values)

    def replace(self, **changes: Any) -> EndpointConfig:
        """Return a copy with ``changes`` applied and validated; :data:`UNSET` values are ignored."""
        # The fields themselves, not model_dump(): a dump masks the password of a base URL.
        current = {name: getattr(self, name) for name in type(self).model_fields}
        if changes.get("base_url", UNSET) is not UNSET:
            del current["base_urls"]  # replaced by the new base_url
        return self._build({**current, **changes})

    @classmethod
    def _build(cls, values: dict[str, Any]) -> EndpointConfig:
        try:
            return cls(**{name: value for name, value in values.items() if value is not UNSET})
        except ValidationError as exc:
            # Report field names and reasons only: the rejected input may hold the key.
            reasons = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigurationError(f"invalid endpoint settings: {reasons}") from None


def model_is_named(model: Any = UNSET, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``model`` (a :meth:`EndpointConfig.resolve` argument) or a ``*_MODEL`` variable names the model.

    When nothing does, the endpoint is asked which model it serves
    (:func:`~dreamgym_env.experience.discovery.resolve_config`).
    """
    return _pick(model, os.environ if environ is None else environ, "MODEL", None) is not None


def _key_prefixes(base_url: Any, env: Mapping[str, str]) -> tuple[str, ...]:
    """Where a key may come from: ``OPENAI_API_KEY`` only goes to OpenAI's URL or ``OPENAI_BASE_URL``.

    A user's OpenAI key must not leak to a third-party server named by ``DREAMGYM_BASE_URL``:
    with several endpoints, every one of them must be OpenAI's or ``OPENAI_BASE_URL``'s.
    """
    openai_urls = {url.rstrip("/") for url in split_base_urls(env.get("OPENAI_BASE_URL", ""))}
    urls = [str(url).rstrip("/") for url in split_base_urls(base_url)] if base_url is not None else []
    if urls and all(url == DEFAULT_BASE_URL or url in openai_urls for url in urls):
        return ENV_PREFIXES
    return ("DREAMGYM_",)


def _pick(
    passed: Any, env: Mapping[str, str], name: str, default: Any, prefixes: tuple[str, ...] = ENV_PREFIXES
) -> Any:
    """Return the passed value, else the first non-empty prefixed variable, else ``default``."""
    if passed is not UNSET:
        return default if passed is None and default is not None else passed
    for prefix in prefixes:
        value = env.get(prefix + name, "").strip()
        if value:
            return value
    return default


def _seconds(variable: str, raw: str) -> float | None:
    """The value of a seconds variable: a positive number, or ``None`` for ``none``/``off``."""
    text = raw.strip().lower()
    if text in _NO_LIMIT:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise ConfigurationError(f"{variable} must be a number of seconds > 0 or 'none', got {raw!r}")
    return value


def split_base_urls(value: Any) -> list[Any]:
    """The endpoints of a ``base_url`` setting: a comma-separated string, or a list of strings.

    Blank entries are dropped; items that are not text are kept, for the validator to refuse.
    """
    items = (
        value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [value]
    )
    return [item.strip() if isinstance(item, str) else item for item in items if not _blank(item)]


def _blank(item: Any) -> bool:
    return isinstance(item, str) and not item.strip()


def endpoint_name(url: str) -> str:
    """How usage counts, logs and errors name one endpoint: its URL without any credentials."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def masked_url(url: str) -> str:
    """``url`` with a password in it replaced by ``***`` (``http://user:***@host/v1``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    userinfo, _, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit((parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment))


def normalise_base_url(url: str) -> str:
    """Add a missing scheme (``http``) and a missing path (``/v1``); drop a trailing slash."""
    url = url.strip()
    if not url:
        raise ValueError("base_url is empty")
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if not parts.netloc:
        raise ValueError(f"base_url has no host: {url!r}")
    path = parts.path.rstrip("/") or "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))
