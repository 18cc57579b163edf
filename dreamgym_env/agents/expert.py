"""The expert policy of a domain (each domain pack provides its own)."""

from __future__ import annotations

from dreamgym_env.envs.domain import Domain, Policy
from dreamgym_env.errors import ConfigurationError


def expert_policy(domain: Domain) -> Policy:
    """A fresh expert policy for ``domain`` (from its ``expert_policy()``)."""
    factory = getattr(domain, "expert_policy", None)
    if not callable(factory):
        raise ConfigurationError(f"domain {domain.name!r} has no expert policy")
    policy: Policy = factory()
    return policy
