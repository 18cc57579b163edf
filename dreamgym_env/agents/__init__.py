"""Baseline text policies ``(observation, info) -> action``: random, expert, noisy expert; and agents.

An :class:`Agent` decides for a batch of episodes at once (``dreamgym bench`` runs them all
alike): :class:`RandomAgent`, :class:`ExpertAgent` and :class:`LLMAgent` (any OpenAI-compatible
endpoint or the embedded model).
"""

from dreamgym_env.agents.agent import Agent, Decision, Turn
from dreamgym_env.agents.baselines import ExpertAgent, PolicyAgent, RandomAgent
from dreamgym_env.agents.expert import expert_policy
from dreamgym_env.agents.llm import AgentChat, LLMAgent, parse_agent_output
from dreamgym_env.agents.make import AGENT_KINDS, make_agent, make_chat_client
from dreamgym_env.agents.noisy import NoisyPolicy
from dreamgym_env.agents.random import RandomPolicy
from dreamgym_env.agents.registry import POLICY_NAMES, make_policy

__all__ = [
    "AGENT_KINDS",
    "POLICY_NAMES",
    "Agent",
    "AgentChat",
    "Decision",
    "ExpertAgent",
    "LLMAgent",
    "NoisyPolicy",
    "PolicyAgent",
    "RandomAgent",
    "RandomPolicy",
    "Turn",
    "expert_policy",
    "make_agent",
    "make_chat_client",
    "make_policy",
    "parse_agent_output",
]
