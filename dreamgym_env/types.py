"""The data that crosses module boundaries: tasks, requests, transitions, trajectories.

All are pydantic v2 models and round-trip through JSON (``model_dump_json`` /
``model_validate_json``); the offline data format (docs/data-format.md) is a JSON line per
:class:`Trajectory`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Source = Literal["offline", "real", "synthetic"]
"""Where a transition came from: offline data, a real (reference) env, or the experience model."""
Policy = Callable[[str, dict], str]
"""A text policy: ``(observation, info) -> action``."""


def state_text(observation: Any, info: Mapping[str, Any]) -> str:
    """A step's model-facing state text.

    ``info["state"]`` where the env reports one (its agent sees another text, as WebShop's real
    pages), else the observation; ``""`` for a non-text observation.
    """
    state = info.get("state", observation)
    return state if isinstance(state, str) else ""


Split = Literal["train", "test"]
"""A task split: the tasks an agent trains on, and the held-out ones it is tested on."""


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


class DomainPrompt(BaseModel):
    """The domain-specific parts of the experience-model system prompt.

    Every :class:`ExperienceRequest` carries its domain's prompt, so a backend needs nothing
    but the request (an unregistered domain works as well as a registered one).
    """

    model_config = ConfigDict(frozen=True)

    rules: str
    state_format: str
    reward_rubric: str


class Task(BaseModel):
    """One task: what the agent is asked to do and where it starts.

    ``metadata`` holds domain data kept for scoring (for WebShop the goal: attributes, options,
    price bound, product type). ``parent_id`` is set on tasks the curriculum generated from a seed.
    ``world`` is what the environment knows of the task and the agent does not (ALFWorld: what
    each receptacle holds at the start), as a simulator knows its game file: the experience model
    reads it, no observation shows it, and without it the model can only guess what a receptacle
    holds. Which of its lines a request shows is the domain's choice
    (the ``world`` of :meth:`~dreamgym_env.domain.Domain.supplies`; by default all of them).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    domain: str
    instruction: str
    initial_state: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    parent_id: str | None = None
    world: str = ""

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Task:
        # Frozen: a copy would be equal in every way. SB3's vector envs deep-copy every step's
        # infos, and copying the task's goal metadata was about a tenth of a rollout's time.
        return self


class Step(BaseModel):
    """One recorded step of an episode: the state, the action taken, and what followed."""

    state: str
    action: str
    next_state: str
    reward: float = 0.0
    done: bool = False
    action_valid: bool = True
    reasoning: str = ""


class Demonstration(BaseModel):
    """A real transition shown to the experience model as an example (retrieved from replay)."""

    state: str
    action: str
    next_state: str
    reward: float = 0.0
    done: bool = False
    task_instruction: str = ""


class ExperienceRequest(BaseModel):
    """What the experience model is asked: what happens after ``action`` in this context.

    ``history`` holds the most recent steps of the episode (bounded by the env's
    ``history_len``); ``demonstrations`` are filled by context providers such as replay grounding;
    ``prompt`` holds the domain's rules, state format and reward rubric.

    ``state_schema`` (the JSON schema of the domain's abstract state) asks for structured mode:
    ``state``, the history's and the demonstrations' states are JSON objects of that schema, and
    the model answers the next state as one (validated against it). ``None``: text mode.

    The next four come from ``Domain.supplied_fields`` (:class:`~dreamgym_env.domain.SuppliedFields`).
    ``carried_fields`` (structured mode) names the state's top-level fields that the action
    cannot change: the model does not write them, and the next state takes them from ``state``.
    Every token the model need not write costs nothing on a CPU. ``updated_fields`` names object
    fields whose entries the action can add or change but never removes: the model writes only
    the entries that are new or different, and the next state takes the others from ``state``.

    ``world`` holds the lines of what the environment knows and the agent does not that this
    action touches (ALFWorld's starting places of the receptacles it names); the prompt shows
    them after the action. ``given_fields`` (structured mode) holds next-state fields that the
    environment's own data fixes for this action (WebShop's search results, an item's facts):
    the model does not write them, and the next state takes these values, as it takes the
    carried fields' from ``state``.
    """

    prompt: DomainPrompt
    state_schema: dict[str, Any] | None = None
    carried_fields: list[str] = Field(default_factory=list)
    updated_fields: list[str] = Field(default_factory=list)
    given_fields: dict[str, Any] = Field(default_factory=dict)
    task: Task
    history: list[Step] = Field(default_factory=list)
    state: str
    action: str
    world: list[str] = Field(default_factory=list)
    demonstrations: list[Demonstration] = Field(default_factory=list)


class EndpointCounts(BaseModel):
    """Running totals of one model endpoint: HTTP requests sent, and those that failed.

    A failure is a connection error, a timeout, HTTP 429 or 5xx, or an HTTP 200 that is not a
    chat completion (each was retried, on another endpoint where there are several).
    """

    requests: int = 0
    failures: int = 0


class Usage(BaseModel):
    """Cost accounting of one model answer.

    ``cached`` says whether the answer came from the transition cache (then no tokens were
    spent); ``cache_hits`` / ``cache_misses`` are that cache's running totals (0 without one).
    ``cached_prompt_tokens`` counts the prompt tokens the model server reused from its KV cache
    (a prefix shared with an earlier call) instead of evaluating them; the evaluated ones are
    ``prompt_tokens - cached_prompt_tokens``. Behind HTTP endpoints, ``endpoint`` names the one
    that answered (its URL, never with credentials) and ``endpoints`` holds the running
    :class:`EndpointCounts` of each endpoint of the model (empty for in-process models).
    """

    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False
    model: str = ""
    cache_hits: int = 0
    cache_misses: int = 0
    endpoint: str = ""
    endpoints: dict[str, EndpointCounts] = Field(default_factory=dict)


class Transition(BaseModel):
    """The experience model's answer: its reasoning, the next state, the reward, the episode end."""

    reasoning: str = ""
    next_state: str
    reward: float = 0.0
    terminated: bool = False
    usage: Usage = Field(default_factory=Usage)


class Trajectory(BaseModel):
    """A whole recorded episode; the unit of the offline JSONL format."""

    task: Task
    steps: list[Step] = Field(default_factory=list)
    source: Source = "real"
    policy: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def total_reward(self) -> float:
        return sum(step.reward for step in self.steps)

    @property
    def won(self) -> bool:
        return bool(self.metadata.get("won", self.total_reward >= 1.0))
