"""The Domain interface that every domain pack (webshop, alfworld, webarena) implements.

A domain is everything the domain-agnostic :class:`~dreamgym_env.envs.synthetic.DreamEnv` needs
to know about one kind of environment: the action grammar, the experience-model prompt parts,
the tasks with their initial states, and the reference env that is ground truth.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from dreamgym_env.types import Task

if TYPE_CHECKING:
    import gymnasium as gym

    from dreamgym_env.curriculum.variations import TaskVariations

Split = Literal["train", "test"]
Policy = Callable[[str, dict], str]
"""A text policy: ``(observation, info) -> action``."""


@dataclass(frozen=True)
class ParsedAction:
    """A valid action: its verb (``search``, ``click``, ...), its argument and the normalised text."""

    verb: str
    argument: str
    text: str


@dataclass(frozen=True)
class ActionError:
    """Why an action text is not a valid action; shown to the agent as failure feedback."""

    message: str


@dataclass(frozen=True)
class DomainPrompt:
    """The domain-specific parts of the experience-model system prompt."""

    rules: str
    state_format: str
    reward_rubric: str


class Domain(ABC):
    """Everything the synthetic env needs to know about one domain.

    Subclasses set :attr:`name` and :attr:`max_episode_steps` and implement the abstract methods;
    the other methods have defaults that fit domains without admissible-action lists.
    """

    name: str
    max_episode_steps: int = 15
    ends_only_on_terminal_actions: bool = False
    """When True, only :meth:`is_terminal_action` actions end an episode: a model's "done" on any
    other action is ignored (WebShop ends at ``Buy Now`` and nowhere else)."""

    @abstractmethod
    def parse_action(self, text: str) -> ParsedAction | ActionError:
        """Parse an agent's action text. Must never raise, whatever the text."""

    @property
    @abstractmethod
    def prompt(self) -> DomainPrompt:
        """The environment rules, state format and reward rubric for the experience model."""

    @abstractmethod
    def tasks(self, split: Split = "train") -> Sequence[Task]:
        """The domain's tasks of a split, each with its initial state."""

    def make_task(self, instruction: str) -> Task:
        """Build a task from a free instruction (no goal kept for scoring)."""
        from dreamgym_env.errors import ConfigurationError

        raise ConfigurationError(f"domain {self.name!r} cannot build a task from a free instruction")

    def expert_policy(self) -> Policy:
        """A fresh expert policy of this domain (for offline data and baselines)."""
        from dreamgym_env.errors import ConfigurationError

        raise ConfigurationError(f"domain {self.name!r} has no expert policy")

    def make_reference_env(self, **kwargs: object) -> gym.Env:
        """Return the programmatic ground-truth env of this domain."""
        raise NotImplementedError(f"domain {self.name!r} has no reference env yet")

    def task_variations(self) -> TaskVariations:
        """How the curriculum's task generator builds and checks new tasks of this domain.

        The default takes a new instruction in the seed's initial state and checks its shape
        only; domains whose world can score a task return their own (see
        :mod:`dreamgym_env.curriculum.variations`).
        """
        from dreamgym_env.curriculum.variations import InstructionVariations

        return InstructionVariations(self)

    def admissible_actions(self, state: str) -> list[str] | None:
        """The actions valid in ``state``, or ``None`` where the domain has no such list."""
        return None

    def validate_action(self, action: ParsedAction, state: str) -> ActionError | None:
        """Check a well-formed action against the state (e.g. a label that is not on the page)."""
        return None

    def is_terminal_action(self, action: ParsedAction) -> bool:
        """Whether taking ``action`` always ends the episode (e.g. WebShop's ``Buy Now``)."""
        return False

    def invalid_action_feedback(self, state: str, error: ActionError) -> str:
        """The observation after an invalid action: the same state with an error line."""
        return f"{state}\nInvalid action: {error.message}"
