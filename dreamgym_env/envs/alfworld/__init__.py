"""The ALFWorld domain pack: seeded household rooms, ALFWorld's commands, tasks, reference env, expert.

Importing the pack registers it: ``DreamGym/ALFWorld-v0`` and ``DreamGym/ALFWorld-Ref-v0``.
"""

from dreamgym_env.envs.alfworld.domain import ALFWorldDomain
from dreamgym_env.envs.registry import register_domain

ALFWORLD = register_domain(ALFWorldDomain())

__all__ = ["ALFWORLD", "ALFWorldDomain"]
