"""The task generator: asks the LLM for variations of seed tasks and keeps only the valid ones.

Each call shows the model ``m`` seed tasks (with their domain context, e.g. product attributes
for WebShop) and asks for new variations as JSON. Every candidate is checked before use:

1. it parses into the domain's task shape (:meth:`TaskVariations.build`; else *malformed*);
2. it is not a duplicate of a seed, a task of the domain's splits, a task generated before or
   another candidate: neither the same fingerprint (for WebShop the same goal, however it is
   worded) nor an instruction whose embedding has cosine similarity of at least
   ``duplicate_threshold`` with a known one (else *duplicate*);
3. where the domain's world can score it, it is feasible (else *infeasible*).

Accepted tasks keep their seed's id in ``parent_id``; their initial state is the seed's, with
the new instruction (the paper's setting).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from dreamgym_env.curriculum.chat import ChatModel
from dreamgym_env.errors import ConfigurationError, excerpt
from dreamgym_env.replay.embedders import Embedder, HashedEmbedder, make_embedder
from dreamgym_env.task_variations import (
    REJECTION_KINDS,
    InstructionVariations,
    Rejection,
    TaskVariations,
    VariedDomain,
)
from dreamgym_env.types import Task

logger = logging.getLogger(__name__)

DEFAULT_DUPLICATE_THRESHOLD: Final = 0.97
"""Cosine of the default hashed embedder above which two instructions count as the same text.

With hashed n-grams a changed option value or price still scores 0.90-0.96, a reworded opening
about 0.89; the fingerprint (same goal) catches rewordings, the embedding near-verbatim copies.
"""
DEFAULT_PER_CALL: Final = 8
DEFAULT_CONCURRENCY: Final = 4
MAX_SHOWN_KNOWN: Final = 20
"""At most this many already-accepted instructions are listed in a prompt as "do not repeat"."""

_SYSTEM = """You write new tasks for an agent that learns by trial and error in a text \
environment ({domain}).

# Environment
{describe}

# What to write
{guidance}
A task must be solvable: only ask for things that exist in this environment, as the seed \
contexts show. The instruction must state every requirement of the task, in the style of the \
seed instructions.

# Answer
Answer with one JSON object and nothing else: {{"tasks": [<task>, ...]}} where each <task> \
follows this JSON schema:
{schema}
"parent_id" is the id of the seed task the new task varies."""


@dataclass
class GenerationReport:
    """What one generation produced: the accepted tasks, the rejected candidates and the cost."""

    accepted: list[Task] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    note: str = ""

    def counts(self) -> dict[str, int]:
        """How many candidates were accepted and how many rejected, by kind."""
        by_kind = Counter(r.kind for r in self.rejected)
        return {"accepted": len(self.accepted), **{kind: by_kind.get(kind, 0) for kind in REJECTION_KINDS}}

    def merge(self, other: GenerationReport) -> None:
        self.accepted += other.accepted
        self.rejected += other.rejected
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens


class DuplicateIndex:
    """Known tasks, by fingerprint and by instruction embedding, to reject repeats."""

    def __init__(self, variations: TaskVariations, embedder: Embedder, threshold: float) -> None:
        self.variations, self.embedder, self.threshold = variations, embedder, threshold
        self.by_fingerprint: dict[str, str] = {}
        self._ids: list[str] = []
        self._id_set: set[str] = set()
        self._blocks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def _embed(self, tasks: Sequence[Task]) -> np.ndarray:
        return self.embedder.embed([(task.instruction, "") for task in tasks])

    def add(self, tasks: Iterable[Task]) -> None:
        new: list[Task] = []
        for task in tasks:
            if task.id not in self._id_set:
                self._id_set.add(task.id)
                new.append(task)
        if not new:
            return
        for task in new:
            self.by_fingerprint.setdefault(self.variations.fingerprint(task), task.id)
        self._ids += [t.id for t in new]
        self._blocks.append(self._embed(new))
        self._matrix = None

    def duplicate_of(self, task: Task) -> str | None:
        """Why ``task`` repeats a known one, or ``None``."""
        same = self.by_fingerprint.get(self.variations.fingerprint(task))
        if same is not None:
            return f"asks for the same as {same!r}"
        if not self._ids:
            return None
        if self._matrix is None:
            self._matrix = np.concatenate(self._blocks) if len(self._blocks) > 1 else self._blocks[0]
            self._blocks = [self._matrix]
        similarity = self._matrix @ self._embed([task])[0]
        best = int(np.argmax(similarity))
        if similarity[best] >= self.threshold:
            return f"instruction nearly repeats {self._ids[best]!r} (cosine {similarity[best]:.3f})"
        return None


def parse_candidates(text: str) -> list[Any] | str:
    """The list under ``"tasks"`` in a reply (a bare list is accepted too), or why there is none."""
    stripped = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", stripped, re.DOTALL)
    if fenced:
        stripped = fenced.group(1)
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0 or end <= start:
            return f"the reply is not JSON ({exc.msg})"
        try:
            data = json.loads(stripped[start : end + 1])
        except json.JSONDecodeError:
            return f"the reply is not JSON ({exc.msg})"
    if isinstance(data, Mapping):
        data = data.get("tasks")
    if not isinstance(data, list):
        return 'the reply has no "tasks" list'
    return data


class TaskGenerator:
    """Writes new tasks of one domain by asking a chat model for variations of seed tasks.

    Args:
        chat: the model (a :class:`~dreamgym_env.curriculum.chat.ChatModel`, e.g.
            :class:`~dreamgym_env.curriculum.chat.EndpointChat`).
        domain: the domain (a registered or unregistered Domain) whose :meth:`task_variations` hook builds and checks
            candidates, or a :class:`TaskVariations` directly.
        embedder: embeds instructions for duplicate detection (default: the hashed embedder,
            no model needed); an :class:`~dreamgym_env.replay.embedders.Embedder` or a spec.
        duplicate_threshold: cosine at or above which an instruction repeats a known one.
        known_tasks: tasks a candidate must not repeat (default: the domain's train and test
            tasks); seeds and accepted tasks are added as they come.
        per_call: candidates asked for in one call.
        concurrency: calls in flight at once.
        max_calls: calls per :meth:`generate` at most (default: three times the calls needed).
    """

    def __init__(
        self,
        chat: ChatModel,
        domain: VariedDomain | TaskVariations,
        *,
        embedder: Embedder | str | None = None,
        duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
        known_tasks: Iterable[Task] | None = None,
        per_call: int = DEFAULT_PER_CALL,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_calls: int | None = None,
    ) -> None:
        if per_call < 1 or concurrency < 1 or (max_calls is not None and max_calls < 1):
            raise ConfigurationError("per_call, concurrency and max_calls must be >= 1")
        if not 0.0 < duplicate_threshold <= 1.0:
            raise ConfigurationError(f"duplicate_threshold must be in (0, 1], got {duplicate_threshold}")
        self.chat = chat
        self.variations = variations_of(domain)
        self.embedder = HashedEmbedder() if embedder is None else make_embedder(embedder)
        self.per_call, self.concurrency, self.max_calls = per_call, concurrency, max_calls
        self.index = DuplicateIndex(self.variations, self.embedder, duplicate_threshold)
        if known_tasks is None:
            known_tasks = [t for split in ("train", "test") for t in self.variations.domain.tasks(split)]  # type: ignore[arg-type]
        self.index.add(known_tasks)
        self._accepted_texts: list[str] = []

    @property
    def domain_name(self) -> str:
        return self.variations.name

    def remember(self, tasks: Iterable[Task]) -> None:
        """Add tasks that later candidates must not repeat (e.g. generated in an earlier run)."""
        self.index.add(tasks)

    # -- prompt ------------------------------------------------------------------------------
    def response_schema(self) -> dict[str, Any]:
        """The JSON schema of a whole answer."""
        return {
            "type": "object",
            "properties": {"tasks": {"type": "array", "items": self.variations.candidate_schema()}},
            "required": ["tasks"],
            "additionalProperties": False,
        }

    def messages(self, seeds: Sequence[Task], count: int) -> list[dict[str, str]]:
        """The conversation asking for ``count`` variations of ``seeds``."""
        system = _SYSTEM.format(
            domain=self.domain_name,
            describe=self.variations.describe(),
            guidance=self.variations.guidance(),
            schema=json.dumps(self.variations.candidate_schema()),
        )
        parts = [
            "Seed tasks: the agent now solves each of them in some attempts and fails in others.",
        ]
        for seed in seeds:
            context = self.variations.seed_context(seed)
            parts.append(
                f"## Seed {seed.id}\nInstruction: {seed.instruction}" + (f"\n{context}" if context else "")
            )
        if self._accepted_texts:
            shown = self._accepted_texts[-MAX_SHOWN_KNOWN:]
            parts.append("Tasks already written (do not repeat them):\n" + "\n".join(f"- {t}" for t in shown))
        parts.append(f"Write {count} new tasks, spread over the seeds. Answer with the JSON object only.")
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]

    # -- generation --------------------------------------------------------------------------
    def check(self, candidate: Any, seeds: Mapping[str, Task]) -> Task | Rejection:
        """Validate one candidate against the seeds and every known task."""
        if not isinstance(candidate, Mapping):
            return Rejection("malformed", "a candidate is not a JSON object", None, excerpt(str(candidate)))
        parent_id = candidate.get("parent_id")
        if parent_id not in seeds:
            if len(seeds) != 1 or parent_id is not None:
                return Rejection(
                    "malformed",
                    f"parent_id {parent_id!r} is not one of the seeds",
                    None,
                    excerpt(json.dumps(candidate)),
                )
            parent_id = next(iter(seeds))
        parent = seeds[str(parent_id)]
        built = self.variations.build(candidate, parent)
        if isinstance(built, Rejection):
            return built
        repeat = self.index.duplicate_of(built)
        if repeat is not None:
            return Rejection("duplicate", repeat, parent.id, excerpt(built.instruction))
        return built

    async def generate(self, seeds: Sequence[Task], n: int) -> GenerationReport:
        """Ask for variations of ``seeds`` until ``n`` are accepted or the call budget is spent.

        Transport failures of the model raise (after the chat model's retries); unusable replies
        are counted as malformed and asked again.
        """
        report = GenerationReport()
        if n <= 0:
            return report
        if not seeds:
            report.note = "no seed tasks"
            return report
        by_id = {seed.id: seed for seed in seeds}
        self.index.add(seeds)
        budget = self.max_calls if self.max_calls is not None else 3 * -(-n // self.per_call)
        schema = self.response_schema()
        while len(report.accepted) < n and report.calls < budget:
            missing = n - len(report.accepted)
            wave = min(self.concurrency, budget - report.calls, -(-missing // self.per_call))
            count = min(self.per_call, missing)
            conversation = self.messages(seeds, count)
            replies = await asyncio.gather(
                *(self.chat.complete(conversation, schema=schema) for _ in range(wave))
            )
            for reply in replies:
                report.calls += 1
                report.prompt_tokens += reply.prompt_tokens
                report.completion_tokens += reply.completion_tokens
                text = reply.text or ""  # an answer without a choice is malformed like an empty one
                candidates = parse_candidates(text)
                if isinstance(candidates, str):
                    cut = " (cut at the token limit)" if reply.finish_reason == "length" else ""
                    report.rejected.append(Rejection("malformed", candidates + cut, None, excerpt(text)))
                    continue
                for candidate in candidates:
                    outcome = self.check(candidate, by_id)
                    if isinstance(outcome, Rejection):
                        report.rejected.append(outcome)
                    elif len(report.accepted) < n:
                        report.accepted.append(outcome)
                        self.index.add([outcome])
                        self._accepted_texts.append(outcome.instruction)
        if len(report.accepted) < n:
            report.note = f"{len(report.accepted)} of {n} accepted after {report.calls} calls"
        logger.info("task generation: %s in %d calls", report.counts(), report.calls)
        return report

    def generate_sync(self, seeds: Sequence[Task], n: int) -> GenerationReport:
        """Blocking form of :meth:`generate` (on the chat model's own loop where it has one)."""
        run = getattr(self.chat, "run", None)
        return run(self.generate(seeds, n)) if callable(run) else asyncio.run(self.generate(seeds, n))


def variations_of(domain: VariedDomain | TaskVariations) -> TaskVariations:
    """The domain's task-variation hook (a :class:`TaskVariations` is returned as is).

    A domain without its own hook gets :class:`InstructionVariations` (new instructions in the
    seed's initial state, checked for shape only).
    """
    if isinstance(domain, TaskVariations):
        return domain
    return domain.task_variations() or InstructionVariations(domain)
