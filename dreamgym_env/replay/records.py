"""What the replay buffer stores and answers: transition records, search hits, statistics."""

from __future__ import annotations

from dataclasses import dataclass, field

from dreamgym_env.types import Demonstration, Source, Step

SOURCES: tuple[Source, ...] = ("offline", "real", "synthetic")
EVICTION_ORDER: tuple[Source, ...] = ("synthetic", "real", "offline")
"""Which transitions go first when the buffer is full: synthetic, then real, offline last."""
GROUNDING_SOURCES: tuple[Source, ...] = ("offline", "real")
"""The sources retrieved by default: real transitions, as in the paper."""
SOURCE_LABELS: dict[Source, str] = {
    "offline": "offline real transitions (loaded from JSONL)",
    "real": "real transitions of a reference env",
    "synthetic": "synthetic transitions of an experience model",
}
"""What each source means, as README.md and docs/data-format.md describe it (``buffer stats``)."""


@dataclass(frozen=True, slots=True)
class ReplayRecord:
    """One stored transition: a step of an episode, with where it came from and when."""

    id: int
    domain: str
    source: Source
    task_id: str
    episode_id: str
    step_index: int
    state: str
    action: str
    next_state: str
    reward: float
    done: bool
    action_valid: bool
    reasoning: str
    timestamp: float
    task_instruction: str = ""

    def to_step(self) -> Step:
        """The transition as a :class:`~dreamgym_env.types.Step`."""
        return Step(
            state=self.state,
            action=self.action,
            next_state=self.next_state,
            reward=self.reward,
            done=self.done,
            action_valid=self.action_valid,
            reasoning=self.reasoning,
        )

    def to_demonstration(self) -> Demonstration:
        """The transition as an example for the experience model."""
        return Demonstration(
            state=self.state,
            action=self.action,
            next_state=self.next_state,
            reward=self.reward,
            done=self.done,
            task_instruction=self.task_instruction,
        )


@dataclass(frozen=True, slots=True)
class ReplayHit:
    """A retrieved transition and its cosine similarity to the query key."""

    record: ReplayRecord
    score: float


@dataclass(frozen=True)
class BufferStats:
    """A summary of a buffer: sizes by source and domain, and how it is stored and indexed."""

    path: str
    transitions: int
    by_source: dict[str, int]
    by_domain: dict[str, int]
    episodes: int
    tasks: int
    capacity: int | None
    embedder: str
    file_bytes: int = 0
    index_kinds: dict[str, str] = field(default_factory=dict)

    def format(self) -> str:
        """A human-readable multi-line summary (what ``dreamgym buffer stats`` prints)."""
        capacity = "unbounded" if self.capacity is None else f"{self.capacity:,}"
        lines = [
            f"buffer      {self.path}",
            f"size        {self.file_bytes / 1e6:,.1f} MB on disk"
            if self.file_bytes
            else "size        in memory",
            f"embedder    {self.embedder or '(none yet)'}",
            f"capacity    {capacity}",
            f"transitions {self.transitions:,}",
        ]
        lines += [
            f"  {source:<10}{self.by_source.get(source, 0):<10,}{SOURCE_LABELS[source]}" for source in SOURCES
        ]
        lines.append(f"episodes    {self.episodes:,}")
        lines.append(f"tasks       {self.tasks:,}")
        if self.by_domain:
            lines.append("by domain   " + ", ".join(f"{d}={n:,}" for d, n in sorted(self.by_domain.items())))
        if self.index_kinds:
            lines.append("index       " + ", ".join(f"{k}={v}" for k, v in sorted(self.index_kinds.items())))
        return "\n".join(lines)
