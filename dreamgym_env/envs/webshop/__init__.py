"""The WebShop domain pack: grammar, prompt, generated catalog and tasks, reference env, expert.

Importing the pack registers it: ``DreamGym/WebShop-v0`` and ``DreamGym/WebShop-Ref-v0``.
"""

from dreamgym_env.envs.registry import register_domain
from dreamgym_env.envs.webshop.domain import WebShopDomain

WEBSHOP = register_domain(WebShopDomain())

__all__ = ["WEBSHOP", "WebShopDomain"]
