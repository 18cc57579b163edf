"""The WebArena domain pack: five programmatic web sites with accessibility-tree observations.

Importing the pack registers it: ``DreamGym/WebArena-v0`` and ``DreamGym/WebArena-Ref-v0``.
"""

from dreamgym_env.envs.registry import register_domain
from dreamgym_env.envs.webarena.domain import WebArenaDomain

WEBARENA = register_domain(WebArenaDomain())

__all__ = ["WEBARENA", "WebArenaDomain"]
