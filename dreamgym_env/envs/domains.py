"""The registry of domain packs, by name."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from dreamgym_env.envs.domain import Domain
from dreamgym_env.envs.webshop.domain import WebShopDomain
from dreamgym_env.errors import UnknownNameError

DOMAIN_FACTORIES: dict[str, Callable[[], Domain]] = {
    "webshop": WebShopDomain,
}


@cache
def get_domain(name: str) -> Domain:
    """Return the (shared, stateless) domain pack called ``name``."""
    try:
        factory = DOMAIN_FACTORIES[name.lower()]
    except KeyError:
        raise UnknownNameError("domain", name, DOMAIN_FACTORIES) from None
    return factory()
