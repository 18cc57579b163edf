"""The expert policy of a domain (each domain pack provides its own)."""

from __future__ import annotations

from dreamgym_env.domain import Domain, Policy


def expert_policy(domain: Domain) -> Policy:
    """A fresh expert policy for ``domain``; a domain without one raises ``ConfigurationError``."""
    return domain.expert_policy()
