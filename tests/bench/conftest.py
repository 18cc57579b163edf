"""Fixtures of the fidelity tests."""

from __future__ import annotations

import pytest

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.bench.fidelity import reference_transitions
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.types import Trajectory


@pytest.fixture(scope="module")
def alfworld_expert_episodes() -> list[Trajectory]:
    """4 expert episodes of ALFWorld's test tasks, structured states."""
    domain = get_domain("alfworld")
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    return collect_trajectories(env, make_policy("expert", domain), 4, progress=False, state_mode="structured")


@pytest.fixture(scope="module")
def alfworld_expert(alfworld_expert_episodes):
    """ALFWorld's domain, the structured reference transitions of 4 expert episodes, and each one's truth by request."""
    domain = get_domain("alfworld")
    references = reference_transitions(alfworld_expert_episodes, domain)
    truths = {(r.request.task.id, r.request.state, r.request.action): r.truth for r in references}
    return domain, references, truths
