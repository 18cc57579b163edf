"""dreamgym-env: Gymnasium environments whose experience an LLM synthesizes (DreamGym).

Importing the package registers the ``DreamGym/*`` ids::

    import gymnasium as gym
    import dreamgym_env

    env = gym.make("DreamGym/WebShop-v0", experience_model=model)
"""

from dreamgym_env.envs.domain import ActionError, Domain, DomainPrompt, ParsedAction
from dreamgym_env.envs.domains import get_domain
from dreamgym_env.envs.registration import register_envs
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.errors import (
    ConfigurationError,
    DataError,
    DreamGymError,
    ExperienceModelError,
    ModelOutputError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    ModelTransportError,
    SpaceMismatchError,
    UnknownNameError,
)
from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.spaces import UnicodeText
from dreamgym_env.types import Demonstration, ExperienceRequest, Step, Task, Trajectory, Transition, Usage

__version__ = "0.1.0"

__all__ = [
    "ActionError",
    "ConfigurationError",
    "DataError",
    "Demonstration",
    "Domain",
    "DomainPrompt",
    "DreamEnv",
    "DreamGymError",
    "DreamVectorEnv",
    "ExperienceModel",
    "ExperienceModelError",
    "ExperienceRequest",
    "ModelOutputError",
    "ModelRateLimitError",
    "ModelRequestError",
    "ModelServerError",
    "ModelTimeoutError",
    "ModelTransportError",
    "ParsedAction",
    "SpaceMismatchError",
    "Step",
    "Task",
    "Trajectory",
    "Transition",
    "UnicodeText",
    "UnknownNameError",
    "Usage",
    "get_domain",
]

register_envs()
