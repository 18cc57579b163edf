"""The ALFWorld domain pack: seeded household rooms, ALFWorld's commands, tasks, reference env, expert.

It imitates ALFWorld 0.3.5 (github.com/alfworld/alfworld, tag 0.3.5) played through TextWorld's
PDDL env: the commands and texts of ``alfworld/data/alfred.twl2``, the preconditions of
``alfworld/data/alfred.pddl`` and ALFRED's object tables of ``alfworld/gen/constants.py``
(see docs/envs/alfworld.md).

Importing the pack registers it: ``DreamGym/ALFWorld-v0`` and ``DreamGym/ALFWorld-Ref-v0``.
"""

from dreamgym_env.envs.alfworld.domain import ALFWorldDomain
from dreamgym_env.envs.registry import register_domain

ALFWORLD = register_domain(ALFWorldDomain())

__all__ = ["ALFWORLD", "ALFWorldDomain"]
