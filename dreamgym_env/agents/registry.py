"""Baseline policies by name, for the CLI and scripts."""

from __future__ import annotations

from dreamgym_env.agents.expert import expert_policy
from dreamgym_env.agents.noisy import NoisyPolicy
from dreamgym_env.agents.random import RandomPolicy
from dreamgym_env.domain import Domain, Policy
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import UnknownNameError

POLICY_NAMES = ("expert", "noisy", "random")
DEFAULT_EPSILON = 0.3


def make_policy(
    name: str, domain: Domain | str, *, seed: int | None = 0, epsilon: float = DEFAULT_EPSILON
) -> Policy:
    """``expert``, ``noisy`` (the expert, epsilon-random) or ``random`` for ``domain``."""
    domain = get_domain(domain) if isinstance(domain, str) else domain
    if name == "expert":
        return expert_policy(domain)
    if name == "noisy":
        return NoisyPolicy(expert_policy(domain), epsilon=epsilon, seed=seed)
    if name == "random":
        return RandomPolicy(seed=seed)
    raise UnknownNameError("policy", name, POLICY_NAMES)
