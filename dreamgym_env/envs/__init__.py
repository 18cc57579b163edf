"""Environments: the registry, the synthetic env, the vector env, the packs (the pack contract is :mod:`dreamgym_env.domain`).

Importing this package registers the built-in packs (each registers itself in its own
``__init__``) and their ``DreamGym/*`` Gymnasium ids.
"""

# The packs register themselves on import; the first registered is the commands' default domain.
# isort: off
from dreamgym_env.envs import webshop  # noqa: F401
from dreamgym_env.envs import alfworld  # noqa: F401
from dreamgym_env.envs import webarena  # noqa: F401

# isort: on
from dreamgym_env.domain import Domain
from dreamgym_env.envs.registry import (
    get_domain,
    real_id,
    reference_id,
    register_domain,
    registered_domains,
    synthetic_id,
    unregister_domain,
)

__all__ = [
    "Domain",
    "get_domain",
    "real_id",
    "reference_id",
    "register_domain",
    "registered_domains",
    "synthetic_id",
    "unregister_domain",
]
