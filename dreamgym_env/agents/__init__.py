"""Baseline text policies ``(observation, info) -> action``: random, expert, noisy expert."""

from dreamgym_env.agents.expert import expert_policy
from dreamgym_env.agents.noisy import NoisyPolicy
from dreamgym_env.agents.random import RandomPolicy
from dreamgym_env.agents.registry import POLICY_NAMES, make_policy

__all__ = ["POLICY_NAMES", "NoisyPolicy", "RandomPolicy", "expert_policy", "make_policy"]
