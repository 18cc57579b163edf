"""The contract of a domain pack: the :class:`Domain` interface and the :class:`ReferenceEnv` protocol.

A domain is everything generic code needs to know about one kind of environment: the action
grammar, the experience-model prompt parts, the tasks with their initial states, the reference
env that is ground truth, and the conventions that adapters need (how to fill an action's free
slot, the LLM agent's prompt, the features an RL adapter may use, the episode horizon). Generic
code (experience/, replay/, curriculum/, wrappers/, rl/, agents/, bench/, the demo and the CLI)
asks the domain through these methods and never parses one domain's syntax.

A pack is one folder (or one package of its own) that subclasses :class:`Domain` and registers
an instance with :func:`~dreamgym_env.envs.registry.register_domain`, which also registers its
Gymnasium ids. docs/domains.md walks through a whole pack.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import ActionError, DomainPrompt, ParsedAction, Policy, Split, Task

if TYPE_CHECKING:
    import gymnasium as gym

    from dreamgym_env.task_variations import TaskVariations

__all__ = [
    "ACTION_SLOT",
    "FIELD_SOURCES",
    "GENERIC_STOPWORDS",
    "ActionError",
    "Domain",
    "DomainPrompt",
    "FieldSource",
    "ObservationFeatures",
    "ParsedAction",
    "Policy",
    "RecordedLookup",
    "ReferenceEnv",
    "RewardMode",
    "Split",
    "StepResult",
    "SuppliedFields",
    "Supply",
    "changed_content",
    "changed_text_content",
    "fill_with_instruction",
    "share_of_model",
]

RewardMode = Literal["outcome", "score"]
"""``"outcome"``: 1 when the task is won, else 0 (the paper's reward, every domain has it);
``"score"``: the domain's shaped score in [0, 1] (``info["score"]``), where it has one."""
StepResult = tuple[str, float, bool, bool, dict[str, Any]]
"""What a text env's ``step`` returns: observation, reward, terminated, truncated, info."""
Supply = Literal["pack", "replay", "none"]
"""What may fix next-state fields before the experience model answers (a synthetic env's ``supply``).

``"pack"`` (the grounded default): the domain's structural rules and its world data and code
(catalogue and search engine, sites, household, scoring and the verdict lines it prints);
``"replay"``: the structural rules, and the next state of a recorded real transition of the
same state and action where the replay buffer holds one (the pack's world is not read);
``"none"``: the structural rules only (the fields an action cannot change), and the model writes
everything else, as for a domain known only from recorded trajectories."""
SUPPLIES: tuple[Supply, ...] = ("pack", "replay", "none")
FieldSource = Literal["model", "carried", "pack", "replay"]
"""Who wrote a next-state field: the experience ``model``, a structural rule that ``carried`` it
from the state, the ``pack``'s world data and code, or a recorded real transition (``replay``)."""
FIELD_SOURCES: tuple[FieldSource, ...] = ("model", "carried", "pack", "replay")
RecordedLookup = Callable[[Task, str, str], str | None]
"""Returns the next state of a recorded real transition of ``(task, state, action)``, or ``None``
where none is stored: what ``supply="replay"`` fills in (a replay buffer's lookup)."""


def changed_content(
    state: dict[str, Any], next_state: dict[str, Any], sources: dict[str, FieldSource]
) -> dict[FieldSource, int]:
    """The characters of ``next_state`` that differ from ``state``, by who wrote them.

    A field counts its JSON's length when it changed; an object field (ALFWorld's ``seen``)
    counts only its new or changed entries, as the model writes only those of an updated field.
    """
    out: dict[FieldSource, int] = dict.fromkeys(FIELD_SOURCES, 0)
    for name, value in next_state.items():
        old = state.get(name)
        if old == value:
            continue
        if isinstance(value, dict) and isinstance(old, dict):
            size = sum(len(json.dumps({k: v})) for k, v in value.items() if old.get(k) != v)
        else:
            size = len(json.dumps(value))
        out[sources.get(name, "model")] += size
    return out


def changed_text_content(state: str, next_state: str, world: Sequence[str]) -> dict[FieldSource, int]:
    """Text mode's :func:`changed_content`: the next state's lines that ``state`` lacks.

    A line that repeats one of the request's world lines verbatim is the pack's (the model
    copied a fact it was shown); every other new line is the model's.
    """
    old, facts = set(state.splitlines()), {line.strip() for line in world}
    out: dict[FieldSource, int] = dict.fromkeys(FIELD_SOURCES, 0)
    for line in next_state.splitlines():
        if line not in old:
            out["pack" if line.strip() in facts else "model"] += len(line) + 1
    return out


def share_of_model(counts: dict[FieldSource, int]) -> float | None:
    """The model's share of changed content (:func:`changed_content`); ``None`` when nothing changed."""
    total = sum(counts.values())
    return counts["model"] / total if total else None


@dataclass(frozen=True)
class SuppliedFields:
    """What fixes the next state of one valid action before the model answers, and right after, by source.

    A pack returns it from :meth:`Domain.supplies`; generic code reads it from
    :meth:`Domain.supplied_fields`. Source ``carried`` (structural rules, kept with
    ``supply="none"``): ``carried``, top-level fields the action cannot change, which the next
    state keeps; ``updated``, object fields whose entries the action can add or change, never
    remove, of which the model writes only the new or changed entries. Source ``pack`` (the
    pack's world data and code): ``given``, fields the pack's world data fixes (WebShop's search
    results), with their values; ``world``, lines of world facts shown in the request for the
    model to read (a verdict line the pack's scoring code printed counts here); ``settle``, a
    function that writes into the model's answered next state what its verdict implies
    (ALFWorld's message and inventory after a ``take`` that works), ``None`` where the answer
    stands as written. Source ``replay`` (``supply="replay"``): ``replayed``, the next-state
    fields of a recorded real transition of the same state and action, with their values.
    """

    carried: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    given: dict[str, Any] = field(default_factory=dict)
    world: tuple[str, ...] = ()
    settle: Callable[[BaseModel], BaseModel] | None = None
    settled_fields: tuple[str, ...] = ()
    """The fields :attr:`settle` writes when it applies (when it returns a new state): the pack's,
    whether or not the model had written the same values."""
    replayed: dict[str, Any] = field(default_factory=dict)

    @property
    def settles(self) -> bool:
        """Whether the pack writes part of the answered next state (:attr:`settle`)."""
        return self.settle is not None

    def settled(self, answered: BaseModel) -> BaseModel:
        """The next state the model answered (carried and given fields filled in), settled where the pack settles it."""
        return self.settle(answered) if self.settle is not None else answered

    def sources(self, answered: BaseModel, settled: BaseModel) -> dict[str, FieldSource]:
        """Who wrote each top-level field of a next state.

        ``answered``: the state as the model's answer came back (the carried and given fields
        filled in); ``settled``: :meth:`settled` of it (the same object when the pack settles
        nothing). A field the settling wrote (:attr:`settled_fields`) or changed is the pack's.
        """
        before, after = answered.model_dump(), settled.model_dump()
        written = set(self.settled_fields) if settled is not answered else set()
        return {
            name: "carried"
            if name in self.carried
            else "replay"
            if name in self.replayed
            else "pack"
            if name in self.given or name in written or before.get(name) != value
            else "model"
            for name, value in after.items()
        }

    def request_fields(self) -> dict[str, Any]:
        """The :class:`~dreamgym_env.types.ExperienceRequest` fields that carry these."""
        return {
            "carried_fields": list(self.carried),
            # a replayed field is given whole: the model writes none of its entries
            "updated_fields": [name for name in self.updated if name not in self.replayed],
            "given_fields": {**self.given, **self.replayed},
            "world": list(self.world),
        }


ACTION_SLOT = re.compile(r"<[A-Za-z_][A-Za-z0-9_ ]*>")
"""A free slot in an admissible action, such as ``<query>`` in ``search[<query>]``: the one
convention every domain shares. :meth:`Domain.fill_slots` fills it."""

GENERIC_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "with",
        "you",
    ]
)
"""English words that tell no candidate action from another."""


def fill_with_instruction(action: str, task: Task | None, observation: str = "") -> list[str]:
    """Fill every free slot of ``action`` with the task's instruction; ``[]`` without a task."""
    if task is None or not task.instruction:
        return []
    return [ACTION_SLOT.sub(lambda _: task.instruction, action)]


@dataclass(frozen=True)
class ObservationFeatures:
    """What :class:`~dreamgym_env.wrappers.EmbedObservation` may read into a domain's text.

    Attributes:
        stopwords: words left out of the word-overlap features.
        numeric_bounds: numbers in the instruction are upper bounds (a price limit); when
            False the ``numbers_within`` feature is 1 for every candidate (nothing to check).
    """

    stopwords: frozenset[str] = field(default=GENERIC_STOPWORDS)
    numeric_bounds: bool = False


@runtime_checkable
class ReferenceEnv(Protocol):
    """The ground-truth env of a domain, as generic code uses it (the oracle, fidelity, sim-to-real).

    A Gymnasium ``Env[str, str]`` built by :meth:`Domain.make_reference_env` with the keyword
    arguments ``split``, ``tasks``, ``reward`` (a :data:`RewardMode`) and ``max_steps``.
    ``reset(options={"task": Task | id})`` starts a task; every ``info`` carries ``task``,
    ``task_id``, ``source`` (``"real"``) and ``admissible_actions`` where the domain has them,
    and after a step ``action_valid``, ``won`` and ``score``. Where the observation is not the
    state's model-facing text (:meth:`Domain.render_observation` is not the identity), every
    ``info`` also carries ``state``: that text, which :meth:`restore` takes and offline
    trajectories and the oracle record.

    ``restorable`` says whether a state text alone determines the env's state (WebShop's pages
    are Markov): then :meth:`restore` puts the env there. Otherwise :meth:`restore` raises
    :class:`~dreamgym_env.errors.ConfigurationError` and callers replay an episode's actions
    from the task's start instead.
    """

    restorable: ClassVar[bool]
    domain: Domain
    # Domains with a state schema also give ``abstract_state``: the current state as an instance
    # of ``Domain.state_schema`` (``render_state(env.abstract_state) == env.state``).

    @property
    def tasks(self) -> Sequence[Task]: ...

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: str) -> StepResult: ...

    def restore(self, task: Task, state: str) -> None: ...


class Domain(ABC):
    """Everything generic code needs to know about one domain.

    Subclasses set :attr:`name`, :attr:`display_name` and :attr:`max_episode_steps` and implement
    the abstract methods; the other methods have defaults that fit a domain without
    admissible-action lists, reference env or expert.
    """

    name: str
    """The registry key and ``Task.domain`` value, lower case (``"webshop"``)."""
    display_name: str = ""
    """The name in Gymnasium ids (``DreamGym/<display_name>-v0``); default: ``name`` capitalised."""
    max_episode_steps: int = 15
    """The episode horizon: the registered ids' ``max_episode_steps``, and the RL adapters' horizon."""
    ends_only_on_terminal_actions: bool = False
    """When True, only :meth:`is_terminal_action` actions end an episode: a model's "done" on any
    other action is ignored (e.g. a shop that ends at its buy button and nowhere else)."""
    ends_when_won: bool = False
    """When True, the reference env ends an episode exactly when the task is won (or truncates
    it): with ``reward_mode="rubric"``, where :meth:`rubric_reward` scores the predicted state, its
    win ends the episode, not the model's "done" (e.g. a household task that ends once placed)."""
    reward_modes: tuple[RewardMode, ...] = ("outcome",)
    """The ``reward`` values the reference env accepts."""
    max_action_chars: int = 1_000
    """The longest action :meth:`parse_action` accepts; a longer one is invalid, and the synthetic
    env keeps a rejected action cut to this length in the episode's history (the model's requests
    and the replay buffer), so one junk action cannot flood the next requests."""
    state_schema: ClassVar[type[BaseModel] | None] = None
    """The pydantic model of the domain's abstract state, for structured mode (``None``: text only).

    In structured mode the experience model answers the next state as JSON of this model; the
    env renders it (:meth:`render_state`) into the observation the agent sees, and the reference
    env reports it as ``info["abstract_state"]``."""
    state_kind_field: ClassVar[str | None] = None
    """The abstract state's field that says what kind of state it is (a page kind, a location):
    fidelity reports its agreement separately."""
    experience_model_dir: ClassVar[Path | None] = None
    """The folder of the pack's trained experience models: a LoRA adapter (manifest and GGUF,
    written by ``dreamgym experience build``) and a distilled model in ``distilled/``
    (``dreamgym experience build --kind distilled``); ``None`` or a folder without a manifest: the pack ships
    none, and the prompted base model answers."""
    preferred_experience_model: ClassVar[Literal["adapter", "distilled"]] = "adapter"
    """Which trained model the synthetic envs use by default (the other where only it is shipped):
    the one the pack's held-out measurements favour (docs/results.md)."""

    @property
    def id_name(self) -> str:
        """The name used in Gymnasium ids."""
        return self.display_name or self.name.capitalize()

    # -- grammar -------------------------------------------------------------------------------
    @abstractmethod
    def parse_action(self, text: str) -> ParsedAction | ActionError:
        """Parse an agent's action text. Must never raise, whatever the text."""

    def action_arguments(self, action: str) -> tuple[str, ...]:
        """What an action names on the page (``click[Buy Now]`` -> ``("Buy Now",)``); ``()`` if it is not valid.

        Replay grounding keeps the demonstration lines and rows these name, and the observation
        embedding finds the line that shows them. The default is the parsed argument, whole; a
        pack whose actions name several things (WebArena's ``type [12] [text] [1]``, ALFWorld's
        ``put apple 1 in/on fridge 1``) splits it.
        """
        parsed = self.parse_action(action)
        return (parsed.argument,) if isinstance(parsed, ParsedAction) and parsed.argument else ()

    def validate_action(self, action: ParsedAction, state: str) -> ActionError | None:
        """Check a well-formed action against the state (e.g. a label that is not on the page)."""
        return None

    def admissible_actions(self, state: str) -> list[str] | None:
        """The actions valid in ``state`` (free slots as ``<name>``), or ``None`` where the domain has no list."""
        return None

    def is_terminal_action(self, action: ParsedAction) -> bool:
        """Whether taking ``action`` always ends the episode."""
        return False

    def render_observation(self, state: str, reward: float | None = None) -> str:
        """What the agent sees of a state's text (the experience model reads and writes ``state``).

        ``state`` is the model-facing text of a state (in structured mode, the abstract state
        rendered by :meth:`render_state`); ``reward`` is the reward of the step that reached it,
        for a final page that prints it. The default shows the state as it is; a domain whose
        real env prints its pages differently (WebShop's ``' [SEP] '`` text) returns that text,
        so the synthetic env and the reference env show the agent one protocol.
        """
        return state

    def invalid_action_feedback(self, state: str, error: ActionError) -> str:
        """The observation after an invalid action: the same state with an error line."""
        return f"{state}\nInvalid action: {error.message}"

    def fill_slots(self, action: str, task: Task | None, observation: str = "") -> list[str]:
        """Concrete actions for an admissible action with free slots (:data:`ACTION_SLOT`).

        The default fills every slot with the task's instruction (a search for the whole
        request); an empty list when there is no task to fill from.
        """
        return fill_with_instruction(action, task, observation)

    # -- experience model ------------------------------------------------------------------------
    @property
    @abstractmethod
    def prompt(self) -> DomainPrompt:
        """The environment rules, state format and reward rubric for the experience model."""

    # -- tasks -----------------------------------------------------------------------------------
    @abstractmethod
    def tasks(self, split: Split = "train") -> Sequence[Task]:
        """The domain's tasks of a split, each with its initial state."""

    def make_task(self, instruction: str) -> Task:
        """Build a task from a free instruction (no goal kept for scoring)."""
        raise ConfigurationError(f"domain {self.name!r} cannot build a task from a free instruction")

    def instruction_in(self, observation: str) -> str:
        """The task's instruction as a first observation of this domain shows it; ``""`` where it shows none (the default).

        A real server's reset and a recorded trajectory (AgentGym's) give an observation, not a
        task: this is where their task's instruction comes from.
        """
        return ""

    def task_variations(self) -> TaskVariations | None:
        """How the curriculum's task generator builds and checks new tasks of this domain.

        ``None`` (the default): a new task is a new instruction in the seed's initial state,
        checked for shape only (:class:`~dreamgym_env.task_variations.InstructionVariations`).
        Domains whose world can tell a feasible task return their own.
        """
        return None

    # -- structured states ------------------------------------------------------------------------
    @cached_property
    def state_json_schema(self) -> dict[str, Any] | None:
        """The JSON schema of :attr:`state_schema` (``None`` for a text-only domain)."""
        return self.state_schema.model_json_schema() if self.state_schema is not None else None

    def parse_state(self, text: str) -> BaseModel:
        """An abstract state from its JSON (``ValueError`` when it is not one of this domain)."""
        if self.state_schema is None:
            raise ConfigurationError(f"domain {self.name!r} has no state schema (text mode only)")
        return self.state_schema.model_validate_json(text)

    def render_state(self, state: BaseModel) -> str:
        """The observation text of an abstract state (what the agent sees)."""
        raise ConfigurationError(f"domain {self.name!r} has no state schema (text mode only)")

    def initial_abstract_state(self, task: Task) -> BaseModel:
        """The abstract state a task starts in (its ``initial_state`` is that state rendered)."""
        raise ConfigurationError(f"domain {self.name!r} has no state schema (text mode only)")

    def state_admissible_actions(self, state: BaseModel) -> list[str] | None:
        """The actions valid in an abstract state (default: those of its rendered text)."""
        return self.admissible_actions(self.render_state(state))

    def supplies(
        self, task: Task | None, state: str, abstract: BaseModel | None, action: ParsedAction
    ) -> SuppliedFields:
        """What fixes the next state of the valid ``action`` on ``state`` before the model answers, and right after.

        The one hook of this part of the contract: a pack overrides it, generic code asks
        :meth:`supplied_fields`. ``state`` is the request's state (JSON in structured mode, else
        text), ``abstract`` that state parsed (``None`` in text mode, where only ``world``
        reaches the model). ``task`` is ``None`` where the pack's world must not be read
        (``supply="none"``, or a caller without a task): the structural rules (``carried``,
        ``updated``) come whatever the task, the world's parts (``given``, ``world``,
        ``settle``) only with one.

        A pack supplies what it can tell itself, so that a small model writes less and cannot
        get it wrong: the fields an action never changes (each output token costs about 50 ms on
        a 2-core CPU), what its data answers (WebShop's search engine and catalogue: looked up,
        not made up), the facts an action touches shown next to it (a small model copies them
        where it would not find them in a long list), what a working action writes once the
        model judged that it works (rewards, episode ends and the verdict stay the model's).
        Each part must hold on the reference env; the pack's tests check it on its episodes.

        Default: no structural rules, and every line of :attr:`Task.world <dreamgym_env.types.Task.world>`.
        """
        return SuppliedFields(world=tuple(task.world.splitlines())) if task is not None else SuppliedFields()

    def supplied_fields(
        self,
        task: Task | None,
        state: str,
        action: ParsedAction,
        *,
        abstract: BaseModel | None = None,
        supply: Supply = "pack",
        recorded: str | None = None,
    ) -> SuppliedFields:
        """The next-state fields fixed before the model answers the valid ``action`` on ``state``, by source.

        The one place generic code asks what the environment supplies: the synthetic env, the
        training data and fidelity build their requests and settle the model's answers from it,
        and ``info["field_sources"]`` reports it. It asks :meth:`supplies` and keeps what
        ``supply`` allows: with ``"none"`` or ``"replay"`` (or without ``task``) only the
        structural rules, and the pack's world is not read. ``state`` is the request's state
        (JSON in structured mode, else text), ``abstract`` its parsed state where the caller has
        it; a state that does not parse as one of this domain's gets the world lines only.

        ``recorded`` (with ``supply="replay"``): the next state (JSON) of a recorded real
        transition of the same state and action, which the caller found in its replay buffer;
        its fields other than the carried ones become :attr:`SuppliedFields.replayed`. A text
        state, or a recorded state that is not one of this domain's, replays nothing.
        """
        if supply not in SUPPLIES:
            raise ConfigurationError(f"supply must be one of {', '.join(SUPPLIES)}, got {supply!r}")
        if abstract is None and self.state_schema is not None:
            try:
                abstract = self.parse_state(state)
            except ValueError:
                abstract = None
        world_readable = supply == "pack" and task is not None
        supplied = self.supplies(task if world_readable else None, state, abstract, action)
        if abstract is None:  # a text state: only lines reach the model
            return SuppliedFields(world=supplied.world) if world_readable else SuppliedFields()
        if world_readable:
            return supplied
        structural = SuppliedFields(supplied.carried, supplied.updated)
        if supply != "replay" or recorded is None:
            return structural
        try:
            fields = self.parse_state(recorded).model_dump(mode="json")
        except ValueError:
            return structural
        replayed = {name: value for name, value in fields.items() if name not in structural.carried}
        return SuppliedFields(structural.carried, structural.updated, replayed=replayed)

    def answer_fields(
        self, state: str, action: str, task: Task | None = None, *, supply: Supply = "pack"
    ) -> dict[str, Any]:
        """The request fields of :meth:`supplied_fields` for an action's text: ``carried_fields``, ``updated_fields``, ``given_fields``, ``world``.

        All empty when the action does not parse; the structured ones empty when the state does
        not parse as one of this domain's states.
        """
        parsed = self.parse_action(action)
        if isinstance(parsed, ActionError):
            return SuppliedFields().request_fields()
        return self.supplied_fields(task, state, parsed, supply=supply).request_fields()

    def rubric_reward(
        self, task: Task, state: BaseModel, action: ParsedAction, reward: RewardMode = "outcome"
    ) -> float | None:
        """The reward of kind ``reward`` the domain computes for reaching ``state`` by ``action``, where it can.

        ``reward``: as the reference env's (:data:`RewardMode`): ``"outcome"`` 1 for a won task,
        ``"score"`` its shaped score. ``None`` where the domain cannot score (no goal kept for the
        task, not a scorable state, a kind it cannot compute from a state): the model's reward
        stands. Used with ``reward_mode="rubric"``.
        """
        return None

    # -- ground truth ----------------------------------------------------------------------------
    def make_reference_env(self, **kwargs: Any) -> gym.Env:
        """Return the programmatic ground-truth env of this domain (a :class:`ReferenceEnv`)."""
        raise ConfigurationError(f"domain {self.name!r} has no reference env")

    def make_real_env(self, **kwargs: Any) -> gym.Env:
        """Return an env that plays this domain on a running real-benchmark server (``-Real-v0``).

        Its observation and action spaces and texts are the reference env's, so that
        :class:`~dreamgym_env.wrappers.SimToReal` pairs it with the synthetic env
        (:class:`~dreamgym_env.envs.real.RealServerEnv`, ``docs/real-servers.md``).
        """
        raise ConfigurationError(f"domain {self.name!r} has no real-server env")

    def expert_policy(self) -> Policy:
        """A fresh expert policy of this domain (for offline data and baselines)."""
        raise ConfigurationError(f"domain {self.name!r} has no expert policy")

    # -- adapters --------------------------------------------------------------------------------
    @property
    def agent_prompt(self) -> str:
        """The system prompt of an LLM agent acting in this domain (TRL rollouts, LLM baselines)."""
        return (
            "You are an agent acting in a text environment. Reply with exactly one action per turn.\n"
            f"{self.prompt.rules.strip()}"
        )

    def observation_features(self) -> ObservationFeatures:
        """What :class:`~dreamgym_env.wrappers.EmbedObservation` may use of this domain's text."""
        return ObservationFeatures()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
