"""Wrappers: replay grounding, curriculum resets, sim-to-real, model failures and RL-library adapters."""

from dreamgym_env.wrappers.choice_actions import ChoiceActions
from dreamgym_env.wrappers.curriculum_reset import CurriculumReset, CurriculumResetVector
from dreamgym_env.wrappers.embed_observation import EmbedObservation
from dreamgym_env.wrappers.replay_grounding import ReplayGrounding, VectorReplayGrounding
from dreamgym_env.wrappers.sim_to_real import RealWithProbability, SimToReal, SourceCounts, SyntheticFirst

__all__ = [
    "ChoiceActions",
    "CurriculumReset",
    "CurriculumResetVector",
    "EmbedObservation",
    "RealWithProbability",
    "ReplayGrounding",
    "SimToReal",
    "SourceCounts",
    "SyntheticFirst",
    "VectorReplayGrounding",
]
