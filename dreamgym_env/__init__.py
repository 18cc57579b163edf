"""dreamgym-env: Gymnasium environments whose experience an LLM synthesizes (DreamGym).

Importing the package registers the built-in domain packs and their ``DreamGym/*`` ids::

    import gymnasium as gym
    import dreamgym_env

    env = gym.make("DreamGym/WebShop-v0")          # synthetic: an experience model answers
    ref = gym.make("DreamGym/WebShop-Ref-v0")      # reference: the programmatic ground truth

The names below are what a user types besides an env id: the experience-model backends, the
wrappers, the replay buffer, the curriculum, the domain-pack contract and the error base
classes. Everything else lives in its subpackage (``dreamgym_env.envs``, ``.experience``,
``.replay``, ``.curriculum``, ``.wrappers``, ``.agents``, ``.rl``, ``.bench``, ``.testing``).
Backends and wrappers are imported on first use, so ``import dreamgym_env`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dreamgym_env.envs import Domain, get_domain, register_domain
from dreamgym_env.errors import ConfigurationError, DreamGymError, ExperienceModelError
from dreamgym_env.types import Task

if TYPE_CHECKING:
    from dreamgym_env.curriculum import Curriculum
    from dreamgym_env.envs.oracle import OracleExperienceModel
    from dreamgym_env.experience.base import ExperienceModel
    from dreamgym_env.experience.cache import CachedExperienceModel
    from dreamgym_env.experience.local import LocalExperienceModel
    from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
    from dreamgym_env.experience.selection import default_experience_model
    from dreamgym_env.replay.buffer import ExperienceReplayBuffer
    from dreamgym_env.wrappers import (
        ChoiceActions,
        CurriculumReset,
        CurriculumResetVector,
        EmbedObservation,
        ReplayGrounding,
        SimToReal,
        VectorReplayGrounding,
    )

__version__ = "0.1.0"

_LAZY = {
    "ExperienceModel": "dreamgym_env.experience.base",
    "OpenAIExperienceModel": "dreamgym_env.experience.openai_backend",
    "LocalExperienceModel": "dreamgym_env.experience.local",
    "CachedExperienceModel": "dreamgym_env.experience.cache",
    "default_experience_model": "dreamgym_env.experience.selection",
    "OracleExperienceModel": "dreamgym_env.envs.oracle",
    "ExperienceReplayBuffer": "dreamgym_env.replay.buffer",
    "Curriculum": "dreamgym_env.curriculum",
    "ChoiceActions": "dreamgym_env.wrappers",
    "CurriculumReset": "dreamgym_env.wrappers",
    "CurriculumResetVector": "dreamgym_env.wrappers",
    "EmbedObservation": "dreamgym_env.wrappers",
    "ReplayGrounding": "dreamgym_env.wrappers",
    "SimToReal": "dreamgym_env.wrappers",
    "VectorReplayGrounding": "dreamgym_env.wrappers",
}

__all__ = [
    "CachedExperienceModel",
    "ChoiceActions",
    "ConfigurationError",
    "Curriculum",
    "CurriculumReset",
    "CurriculumResetVector",
    "Domain",
    "DreamGymError",
    "EmbedObservation",
    "ExperienceModel",
    "ExperienceModelError",
    "ExperienceReplayBuffer",
    "LocalExperienceModel",
    "OpenAIExperienceModel",
    "OracleExperienceModel",
    "ReplayGrounding",
    "SimToReal",
    "Task",
    "VectorReplayGrounding",
    "default_experience_model",
    "get_domain",
    "register_domain",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dreamgym_env' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
