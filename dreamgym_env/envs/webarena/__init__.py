"""The WebArena domain pack: five programmatic web sites with accessibility-tree observations.

It imitates web-arena-x/webarena at commit ``f62e0b99bc7d9e0cd996d0cf5ebb2225780ec279``: the
tree text of ``browser_env/processors.py``, the action parser of ``browser_env/actions.py``, the
evaluators of ``evaluation_harness/evaluators.py`` and the episode end of ``run.py`` (only
``stop`` ends an episode); see docs/envs/webarena.md.

Importing the pack registers it: ``DreamGym/WebArena-v0`` and ``DreamGym/WebArena-Ref-v0``.
"""

from dreamgym_env.envs.registry import register_domain
from dreamgym_env.envs.webarena.domain import WebArenaDomain

WEBARENA = register_domain(WebArenaDomain())

__all__ = ["WEBARENA", "WebArenaDomain"]
