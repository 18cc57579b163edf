"""What the task generator needs to know about a domain: the per-domain hook.

A domain pack returns a :class:`TaskVariations` from ``Domain.task_variations()``. It tells the
generator what to show the model about a seed task (for WebShop the goal and the attribute and
option vocabulary of its product type), what shape a candidate has (its JSON schema), and how
to turn a candidate into a :class:`~dreamgym_env.types.Task`, rejecting it when it is malformed
or, where the domain can tell, infeasible. The default, :class:`InstructionVariations`, fits any
domain: a candidate is a new instruction and nothing can be checked beyond its shape.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from dreamgym_env.errors import excerpt
from dreamgym_env.types import DomainPrompt, Split, Task


class VariedDomain(Protocol):
    """What the task generator reads of a domain; every :class:`~dreamgym_env.domain.Domain` is one."""

    name: str

    @property
    def prompt(self) -> DomainPrompt: ...

    def tasks(self, split: Split = "train") -> Sequence[Task]: ...

    def task_variations(self) -> TaskVariations | None: ...


RejectionKind = Literal["malformed", "duplicate", "infeasible"]
REJECTION_KINDS: tuple[RejectionKind, ...] = ("malformed", "duplicate", "infeasible")
MAX_INSTRUCTION_CHARS = 600
MIN_INSTRUCTION_WORDS = 3


@dataclass(frozen=True)
class Rejection:
    """Why a candidate task was not accepted.

    ``kind``: ``"malformed"`` (does not parse into the domain's task shape), ``"duplicate"``
    (repeats a known task) or ``"infeasible"`` (the domain's world cannot satisfy it).
    """

    kind: RejectionKind
    reason: str
    parent_id: str | None = None
    candidate: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason}"


def generated_task_id(domain: str, instruction: str) -> str:
    """A stable id for a generated task: the domain and a digest of its instruction."""
    digest = hashlib.sha1(" ".join(instruction.lower().split()).encode("utf-8")).hexdigest()[:12]
    return f"{domain}-gen-{digest}"


def normalise_instruction(text: str) -> str:
    """The words of ``text``, lower case, without apostrophes and punctuation: its exact-duplicate key."""
    return " ".join(
        re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", text.lower().replace("'", "").replace("\u2019", ""))
    )


INSTRUCTION_PROPERTY: dict[str, Any] = {"type": "string", "maxLength": MAX_INSTRUCTION_CHARS}
"""The JSON schema of a candidate's instruction."""


def candidate_object(properties: Mapping[str, Any], required: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of a candidate: ``parent_id`` and ``properties``, all of ``required`` needed, no others."""
    return {
        "type": "object",
        "properties": {"parent_id": {"type": "string"}, **properties},
        "required": ["parent_id", *required],
        "additionalProperties": False,
    }


class TaskVariations(ABC):
    """Builds and checks the generated tasks of one domain (one subclass per domain pack)."""

    def __init__(self, domain: VariedDomain) -> None:
        self.domain = domain

    @property
    def name(self) -> str:
        return self.domain.name

    def describe(self) -> str:
        """What the task writer is told about the environment (default: the domain's rules)."""
        return self.domain.prompt.rules

    def guidance(self) -> str:
        """How a variation may differ from its seed."""
        return (
            "Each new task varies one seed task: make it harder (more requirements, tighter "
            "limits, more steps) or different (other objects or values of the same kind), so "
            "that it is still solvable in this environment. Never repeat a seed or another task."
        )

    def seed_context(self, task: Task) -> str:
        """What the task writer is shown about one seed besides its instruction (default: nothing)."""
        return ""

    @abstractmethod
    def candidate_schema(self) -> dict[str, Any]:
        """The JSON schema of one candidate (an object with at least ``parent_id`` and ``instruction``)."""

    @abstractmethod
    def build(self, candidate: Mapping[str, Any], parent: Task) -> Task | Rejection:
        """Turn a candidate into a Task (keeping ``parent_id``), or say why it is rejected."""

    def fingerprint(self, task: Task) -> str:
        """A key that two tasks asking for the same thing share (default: the normalised instruction)."""
        return normalise_instruction(task.instruction)

    # -- helpers for subclasses ----------------------------------------------------------------
    def instruction_of(self, candidate: Mapping[str, Any], parent: Task) -> str | Rejection:
        """The candidate's instruction, checked for shape."""
        instruction = candidate.get("instruction")
        if not isinstance(instruction, str) or len(instruction.split()) < MIN_INSTRUCTION_WORDS:
            return Rejection(
                "malformed", "no instruction of at least three words", parent.id, excerpt(str(candidate))
            )
        instruction = " ".join(instruction.split())
        if len(instruction) > MAX_INSTRUCTION_CHARS:
            return Rejection(
                "malformed", f"instruction longer than {MAX_INSTRUCTION_CHARS} characters", parent.id
            )
        return instruction

    def initial_state_from(self, parent: Task, instruction: str) -> str | Rejection:
        """The seed's initial state with the instruction replaced (the paper's setting)."""
        if parent.instruction and parent.instruction in parent.initial_state:
            return parent.initial_state.replace(parent.instruction, instruction)
        if not parent.initial_state.strip():
            return ""
        return Rejection(
            "malformed", f"seed {parent.id!r} does not show its instruction in its initial state", parent.id
        )

    def new_task(self, parent: Task, instruction: str, initial_state: str, metadata: dict[str, Any]) -> Task:
        """A generated task: a stable id, the parent's id, ``metadata["generated"] = True``."""
        return Task(
            id=generated_task_id(self.name, instruction),
            domain=self.name,
            instruction=instruction,
            initial_state=initial_state,
            metadata={**metadata, "generated": True},
            parent_id=parent.id,
        )


class InstructionVariations(TaskVariations):
    """The default for any domain: a candidate is a new instruction in the seed's initial state.

    Nothing beyond the shape can be checked (no goal, no feasibility); domains whose reference
    env can score a task provide their own :class:`TaskVariations`.
    """

    def candidate_schema(self) -> dict[str, Any]:
        return candidate_object({"instruction": INSTRUCTION_PROPERTY}, ["instruction"])

    def build(self, candidate: Mapping[str, Any], parent: Task) -> Task | Rejection:
        instruction = self.instruction_of(candidate, parent)
        if isinstance(instruction, Rejection):
            return instruction
        state = self.initial_state_from(parent, instruction)
        if isinstance(state, Rejection):
            return state
        return self.new_task(parent, instruction, state, {})
