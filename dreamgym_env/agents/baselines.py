"""The scripted baselines as agents: :class:`RandomAgent` and :class:`ExpertAgent`.

They wrap the policies of :mod:`dreamgym_env.agents.random` and the domain's expert with a fresh
policy per episode, so the benchmark runs them exactly like an LLM agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dreamgym_env.agents.agent import Agent, Decision, Turn
from dreamgym_env.agents.random import RandomPolicy
from dreamgym_env.domain import Domain, Policy
from dreamgym_env.envs.registry import get_domain


class PolicyAgent(Agent):
    """An agent that runs one policy per lane, built anew for each episode by ``make_policy(seed)``.

    Its decisions are always valid outputs and cost no tokens.

    Example:
        >>> agent = PolicyAgent(lambda seed: (lambda obs, info: "look"), name="looker")
        >>> agent.start_episode(0, seed=0)
        >>> agent.act([Turn(lane=0, observation="a room")])[0].action
        'look'
    """

    def __init__(self, make_policy: Callable[[int | None], Policy], *, name: str = "policy") -> None:
        self.make_policy = make_policy
        self.name = name
        self._policies: dict[int, Policy] = {}

    def start_episode(self, lane: int, seed: int | None = None) -> None:
        """Give ``lane`` a fresh policy (seeded with the episode's seed where it takes one)."""
        self._policies[lane] = self.make_policy(seed)

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        decisions = []
        for turn in turns:
            if turn.lane not in self._policies:
                self.start_episode(turn.lane)
            action = self._policies[turn.lane](turn.observation, dict(turn.info))
            decisions.append(Decision(action=action))
        return decisions


class RandomAgent(PolicyAgent):
    """A uniformly random admissible action (:class:`~dreamgym_env.agents.random.RandomPolicy`).

    Episode ``seed`` seeds the policy, so a run is reproducible whatever its batch size.
    """

    def __init__(self) -> None:
        super().__init__(lambda seed: RandomPolicy(seed=seed), name="random")


class ExpertAgent(PolicyAgent):
    """The domain's scripted expert (:meth:`~dreamgym_env.domain.Domain.expert_policy`)."""

    def __init__(self, domain: Domain | str) -> None:
        pack = get_domain(domain)
        pack.expert_policy()  # a domain without an expert fails here, before any episode
        super().__init__(lambda seed: pack.expert_policy(), name="expert")
