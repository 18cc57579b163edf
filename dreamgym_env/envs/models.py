"""Which experience model a domain's synthetic env gets: the pack's trained model by default, or one named.

A pack keeps its trained experience models in its ``experience_model/`` folder
(:attr:`~dreamgym_env.domain.Domain.experience_model_dir`), trained on the pack's reference
transitions: a LoRA adapter of the embedded base model (``dreamgym experience build --kind
adapter``) and, in ``distilled/``, a small model trained from scratch (``dreamgym experience
build --kind distilled``); either may be missing (docs/experience-models.md lists what ships). With
no endpoint configured the synthetic envs use the one the pack prefers
(:attr:`~dreamgym_env.domain.Domain.preferred_experience_model`); ``experience_model=
"local:adapter"`` or ``"local:distilled"`` names one, ``"local:base"`` asks for the prompted
base model, and ``"oracle[:error_rate]"`` for the reference env behind the model interface
(an analysis tool, never a default).

Example::

    model, trained = experience_model_for(get_domain("webshop"), "local:base")
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from dreamgym_env.domain import Domain
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.trained import PackModels, TrainedModel

ORACLE_SPEC = "oracle"
MODEL_KINDS = ("local", "endpoint", "oracle", "auto")
"""The kinds of an experience model's name, ``kind[:value]``: ``local:distilled``, ``endpoint:<model>``,
``oracle:0.1``; ``auto`` is what ``gym.make`` chooses (an endpoint if configured, else the pack's model)."""


def model_kind(spec: str) -> str:
    """The kind of the model name ``spec`` (lower case), or :class:`~dreamgym_env.errors.UnknownNameError`."""
    kind = spec.partition(":")[0].strip().lower()
    if kind not in MODEL_KINDS:
        raise UnknownNameError("experience model kind", spec, MODEL_KINDS)
    return kind


def pack_models(domain: Domain) -> PackModels:
    """The trained experience models ``domain`` ships, with the one it prefers."""
    return PackModels.find(domain.experience_model_dir, domain.preferred_experience_model)


def pack_trained_model(domain: Domain) -> TrainedModel | None:
    """The trained experience model ``domain``'s synthetic envs use by default, or ``None`` when it ships none."""
    return pack_models(domain).default


def experience_model_for(
    domain: Domain,
    model: ExperienceModel | str | None = None,
    settings: dict[str, Any] | None = None,
    *,
    seed: int = 0,
    owner: str = "the env",
    arguments: Sequence[str] = (),
) -> ExperienceModel:
    """The model an env of ``domain`` uses: ``model`` itself, the one its name gives, or the default.

    ``settings`` configure a model built here (``gym.make(id, timeout_s=5)``); passing them with
    a model instance is an error, since they would be silently ignored. A keyword that no backend
    takes is refused, naming ``owner`` and its own ``arguments`` beside the model settings.
    """
    settings = dict(settings or {})
    from dreamgym_env.experience.selection import (
        check_model_settings,
        default_experience_model,
        model_from_spec,
    )

    check_model_settings(settings, owner=owner, arguments=arguments)
    if isinstance(model, ExperienceModel):
        if settings:
            raise ConfigurationError(
                f"{sorted(settings)} configure the model an env builds itself; pass them to your "
                "experience model instead, or pass no experience_model"
            )
        return model
    if isinstance(model, str) and model.strip().lower() == "auto":
        model = None
    if model is None:
        return default_experience_model(trained=pack_trained_model(domain), domain=domain.name, **settings)
    if not isinstance(model, str):
        raise ConfigurationError(
            f"experience_model must be an ExperienceModel or a name, got {type(model).__name__}"
        )
    kind, _, value = model.partition(":")
    if kind.strip().lower() == ORACLE_SPEC:
        from dreamgym_env.envs.oracle import OracleExperienceModel

        try:
            error_rate = float(value) if value.strip() else 0.0
        except ValueError:
            raise ConfigurationError(f"oracle:<error_rate> needs a number in [0, 1], got {value!r}") from None
        return OracleExperienceModel(domain, error_rate=error_rate, seed=seed)
    return model_from_spec(model, models=pack_models(domain), domain=domain.name, **settings)


def env_experience_model(
    env_class: type, domain: Domain, model: ExperienceModel | str | None, settings: dict[str, Any]
) -> tuple[ExperienceModel, bool]:
    """:func:`experience_model_for` an env of ``env_class``, and whether the env owns the model.

    A model the env chose itself is the env's to close; a passed one may be shared.
    """
    chosen = experience_model_for(
        domain,
        model,
        settings,
        owner=f"{env_class.__name__} ({domain.id_name})",
        arguments=own_arguments(env_class.__init__),  # type: ignore[misc]
    )
    return chosen, not isinstance(model, ExperienceModel)


def own_arguments(function: Callable[..., Any]) -> list[str]:
    """The named parameters of ``function`` (an ``__init__``), for the error of an unknown keyword."""
    skipped = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return [
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if name != "self" and parameter.kind not in skipped
    ]
