"""The agent interface the benchmark uses: a batch of turns in, one decision per turn out.

A *policy* (:data:`~dreamgym_env.domain.Policy`) maps one observation to one action; an
:class:`Agent` decides for several episodes at once (the lanes of a benchmark run), so an LLM
agent sends its requests together, and it reports what each decision cost (tokens) and whether
its output held a usable action at all.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dreamgym_env.types import Task


@dataclass(frozen=True)
class Turn:
    """What an agent sees when it must act in one lane.

    Attributes:
        lane: which of the run's concurrent episodes this is (an agent may keep state per lane).
        observation: the current observation.
        info: the env's last ``info`` (``admissible_actions`` where the domain lists them).
        task: the episode's task (``None`` where the env reports none).
        history: the episode's earlier steps, oldest first, as ``(action, observation after it)``.
    """

    lane: int
    observation: str
    info: Mapping[str, Any] = field(default_factory=dict)
    task: Task | None = None
    history: Sequence[tuple[str, str]] = ()


@dataclass(frozen=True)
class Decision:
    """An agent's answer to one :class:`Turn`.

    Attributes:
        action: the action to step (for an invalid output, the agent's documented fallback).
        thought: the agent's reasoning, where it gives one.
        output_valid: False when the agent's output held no usable action (counted by the bench).
        problem: why the output was not usable (empty when it was).
        prompt_tokens: prompt tokens the decision cost (0 for scripted agents).
        completion_tokens: completion tokens the decision cost.
    """

    action: str
    thought: str = ""
    output_valid: bool = True
    problem: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Agent(ABC):
    """Decides actions for a batch of episodes; subclasses implement :meth:`act`.

    The caller announces each new episode of a lane with :meth:`start_episode` before its first
    :meth:`act`, and calls :meth:`close` when done.
    """

    name: str = "agent"
    """How reports name the agent (``random``, ``expert``, ``llm:<model>``)."""

    def start_episode(self, lane: int, seed: int | None = None) -> None:
        """Forget what the agent kept of ``lane``'s previous episode (nothing by default)."""
        return None

    @abstractmethod
    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        """One decision per turn, in order."""

    def close(self) -> None:
        """Release what the agent holds (clients, model weights); nothing by default."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
