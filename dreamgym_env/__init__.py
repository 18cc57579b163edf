"""dreamgym-env: Gymnasium environments whose experience an LLM synthesizes (DreamGym).

Importing the package registers the ``DreamGym/*`` ids::

    import gymnasium as gym
    import dreamgym_env

    env = gym.make("DreamGym/WebShop-v0", experience_model=model)
"""

from dreamgym_env.agents import NoisyPolicy, RandomPolicy, make_policy
from dreamgym_env.bench.fidelity import FidelityReport, measure_fidelity, reference_transitions
from dreamgym_env.curriculum import Curriculum, EndpointChat, TaskGenerator, TaskStats, TaskVariations
from dreamgym_env.envs.domain import ActionError, Domain, DomainPrompt, ParsedAction
from dreamgym_env.envs.domains import get_domain
from dreamgym_env.envs.registration import register_envs
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.vector import DreamVectorEnv
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
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
from dreamgym_env.experience.cache import CachedExperienceModel
from dreamgym_env.experience.config import EndpointConfig, RetryPolicy
from dreamgym_env.experience.local import LocalExperienceModel
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.experience.oracle import OracleExperienceModel
from dreamgym_env.experience.selection import default_experience_model
from dreamgym_env.replay import (
    ExperienceReplayBuffer,
    HashedEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
)
from dreamgym_env.replay.offline import collect, collect_trajectories, read_trajectories, write_trajectories
from dreamgym_env.spaces import UnicodeText
from dreamgym_env.types import Demonstration, ExperienceRequest, Step, Task, Trajectory, Transition, Usage
from dreamgym_env.wrappers import (
    ChoiceActions,
    CurriculumReset,
    EmbedObservation,
    RealWithProbability,
    ReplayGrounding,
    SimToReal,
    SyntheticFirst,
)

__version__ = "0.1.0"

__all__ = [
    "ActionError",
    "CachedExperienceModel",
    "ChoiceActions",
    "ConfigurationError",
    "Curriculum",
    "CurriculumReset",
    "DataError",
    "Demonstration",
    "Domain",
    "DomainPrompt",
    "DreamEnv",
    "DreamGymError",
    "DreamVectorEnv",
    "EmbedObservation",
    "EndpointChat",
    "EndpointConfig",
    "ExperienceModel",
    "ExperienceModelError",
    "ExperienceReplayBuffer",
    "ExperienceRequest",
    "FidelityReport",
    "HashedEmbedder",
    "LocalExperienceModel",
    "ModelOutputError",
    "ModelRateLimitError",
    "ModelRequestError",
    "ModelServerError",
    "ModelTimeoutError",
    "ModelTransportError",
    "NoisyPolicy",
    "OpenAIExperienceModel",
    "OracleExperienceModel",
    "ParsedAction",
    "RandomPolicy",
    "RealWithProbability",
    "ReplayGrounding",
    "RetryPolicy",
    "SentenceTransformerEmbedder",
    "SimToReal",
    "SpaceMismatchError",
    "Step",
    "SyntheticFirst",
    "Task",
    "TaskGenerator",
    "TaskStats",
    "TaskVariations",
    "Trajectory",
    "Transition",
    "UnicodeText",
    "UnknownNameError",
    "Usage",
    "WebShopRefEnv",
    "collect",
    "collect_trajectories",
    "default_experience_model",
    "get_domain",
    "make_embedder",
    "make_policy",
    "measure_fidelity",
    "read_trajectories",
    "reference_transitions",
    "write_trajectories",
]

register_envs()
