"""The registry of domain packs, and the Gymnasium ids each pack gets when it registers.

A pack registers itself with one call, from its own ``__init__`` (the built-in packs) or from a
user's package::

    from dreamgym_env.envs import register_domain

    register_domain(MyDomain())   # DreamGym/MyDomain-v0 and, with a reference env, -Ref-v0

The synthetic id is built with a ``vector_entry_point`` (``gym.make_vec`` gives a
:class:`~dreamgym_env.envs.vector.DreamVectorEnv`) and ``state_mode="structured"`` where the
domain has a state schema (``gym.make(id, state_mode="text")`` for pages); the reference id exists when the domain
overrides :meth:`~dreamgym_env.domain.Domain.make_reference_env`, and the real-server id
(``DreamGym/<Name>-Real-v0``, ``docs/real-servers.md``) when it overrides
:meth:`~dreamgym_env.domain.Domain.make_real_env`. Gymnasium ids live in one
process: a subprocess (``AsyncVectorEnv``) re-registers them by importing the pack's module,
which ``gym.make("my_package:DreamGym/MyDomain-v0")`` does.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from dreamgym_env.domain import Domain
from dreamgym_env.errors import ConfigurationError, UnknownNameError

NAMESPACE = "DreamGym"
_DOMAINS: dict[str, Domain] = {}


def synthetic_id(domain: Domain) -> str:
    """The synthetic Gymnasium id of a domain: ``DreamGym/<Name>-v0``."""
    return f"{NAMESPACE}/{domain.id_name}-v0"


def reference_id(domain: Domain) -> str:
    """The reference Gymnasium id of a domain: ``DreamGym/<Name>-Ref-v0``."""
    return f"{NAMESPACE}/{domain.id_name}-Ref-v0"


def real_id(domain: Domain) -> str:
    """The real-server Gymnasium id of a domain: ``DreamGym/<Name>-Real-v0``."""
    return f"{NAMESPACE}/{domain.id_name}-Real-v0"


def _ids(domain: Domain) -> tuple[str, str, str]:
    return synthetic_id(domain), reference_id(domain), real_id(domain)


def _overrides(domain: Domain, method: str) -> bool:
    """Whether the domain overrides the :class:`Domain` method ``method``."""
    return getattr(type(domain), method) is not getattr(Domain, method)


def register_domain(domain: Domain, *, replace: bool = False) -> Domain:
    """Register a domain pack and its Gymnasium ids; returns the domain.

    Registering the same instance again does nothing; another domain of the same name is
    refused unless ``replace`` (then its ids are registered anew).
    """
    if not isinstance(domain, Domain):
        raise ConfigurationError(f"register_domain takes a Domain instance, got {type(domain).__name__}")
    name = getattr(domain, "name", "")
    if not isinstance(name, str) or not name or name != name.lower():
        raise ConfigurationError(f"a domain's name must be a non-empty lower-case string, got {name!r}")
    known = _DOMAINS.get(name)
    if known is domain:
        return domain
    if known is not None and not replace:
        raise ConfigurationError(
            f"a domain named {name!r} is registered already ({known!r}); pass replace=True to replace it"
        )
    _DOMAINS[name] = domain
    ids = _ids(domain)
    for env_id in ids:
        gym.registry.pop(env_id, None)
    gym.register(
        id=ids[0],
        entry_point="dreamgym_env.envs.synthetic:DreamEnv",
        vector_entry_point="dreamgym_env.envs.vector:make_vector_env",
        # Structured where the domain has a state schema: on the embedded model it gives valid
        # states where text mode gave unusable pages (docs/results.md, "Text vs structured").
        kwargs={"domain": name, "state_mode": "structured" if domain.state_schema is not None else "text"},
        max_episode_steps=domain.max_episode_steps,
        nondeterministic=True,
    )
    # The reference and real-server ids exist where the domain builds those envs; their entry
    # points below have the Domain method's name.
    for env_id, method in ((ids[1], "make_reference_env"), (ids[2], "make_real_env")):
        if _overrides(domain, method):
            gym.register(
                id=env_id,
                entry_point=f"dreamgym_env.envs.registry:{method}",
                kwargs={"domain": name},
                max_episode_steps=domain.max_episode_steps,
            )
    return domain


def unregister_domain(name: str) -> None:
    """Remove a domain and its Gymnasium ids (for tests and for replacing a pack)."""
    domain = _DOMAINS.pop(name, None)
    if domain is not None:
        for env_id in _ids(domain):
            gym.registry.pop(env_id, None)


def get_domain(name: str | Domain) -> Domain:
    """The registered domain called ``name`` (a ``Domain`` is returned as it is)."""
    if isinstance(name, Domain):
        return name
    try:
        return _DOMAINS[name.lower()]
    except (KeyError, AttributeError):
        raise UnknownNameError("domain", str(name), _DOMAINS) from None


def default_domain() -> Domain:
    """The first registered domain: what commands use when no ``--domain`` is given."""
    if not _DOMAINS:
        raise ConfigurationError("no domain pack is registered")
    return next(iter(_DOMAINS.values()))


def registered_domains() -> dict[str, Domain]:
    """The registered domains by name (a copy)."""
    return dict(_DOMAINS)


def make_reference_env(domain: str | Domain, **kwargs: Any) -> gym.Env:
    """Build a domain's reference env (the entry point of every ``-Ref-v0`` id)."""
    return get_domain(domain).make_reference_env(**kwargs)


def make_real_env(domain: str | Domain, **kwargs: Any) -> gym.Env:
    """Build a domain's real-server env (the entry point of every ``-Real-v0`` id)."""
    return get_domain(domain).make_real_env(**kwargs)
