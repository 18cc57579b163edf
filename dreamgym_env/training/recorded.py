"""SFT examples from recorded trajectories: an experience model for a domain known only from its episodes.

A file in the offline format (docs/data-format.md: one :class:`~dreamgym_env.types.Trajectory`
a line) is all that is read, with the domain's grammar, prompt and state schema. Each valid step
becomes the request a synthetic env with ``supply="none"`` sends (the fields an action cannot
change carried, nothing of the pack's world: no given fields, no world lines; see
:func:`~dreamgym_env.bench.fidelity.reference_transitions`), and the recorded next state,
reward and episode end are its answer. No reference env, expert or world data is asked for, so
a domain without a simulator trains as a pack does, and every example says so
(``"supply": "none"``).

The split is by task, as in :mod:`.dataset`: a held-out file holds the test episodes, or a
seeded share of the file's tasks is held out (:func:`split_by_task`; a curriculum variation
stays with its parent). The reasoning is the template one (:func:`~.dataset.reference_reasoning`)
or a teacher's (:class:`~.dataset.TeacherReasoning`).

Example::

    split = RecordedSplit.read("webshop", "data/webshop-episodes.jsonl", seed=0)
    summary = build_recorded_dataset(split, "runs/webshop_recorded_sft.jsonl")
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from dreamgym_env.bench.fidelity import DEFAULT_HISTORY_LEN, ReferenceTransition, reference_transitions
from dreamgym_env.domain import Domain, Split, Supply
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.experience.trained import file_sha256
from dreamgym_env.replay.jsonl import numbered_trajectories
from dreamgym_env.training.dataset import (
    DEFAULT_TEST_FRACTION,
    DatasetSummary,
    ReasoningSource,
    StateMode,
    TeacherReasoning,
    ends_episode,
    reference_reasoning,
    sft_example,
    write_examples,
)
from dreamgym_env.types import ExperienceRequest, Trajectory, Transition

if TYPE_CHECKING:
    from dreamgym_env.curriculum.chat import ChatModel

RECORDED_SUPPLY: Final[Supply] = "none"
"""What a request made from a recorded step carries: the structural fields only."""
RECORDED_POLICY: Final = "recorded"
"""The policy of an example whose trajectory names none."""


@dataclass(frozen=True)
class RecordedFile:
    """A trajectories file as read: its episodes (all of one domain and state mode) and its SHA-256."""

    path: Path
    trajectories: tuple[Trajectory, ...]
    sha256: str

    @classmethod
    def read(cls, path: str | Path, domain: Domain | str) -> RecordedFile:
        """Read ``path``; a bad line, or an episode of another domain, raises :class:`DataError` naming the line."""
        pack, path = get_domain(domain), Path(path)
        trajectories: list[Trajectory] = []
        for number, trajectory in numbered_trajectories(path):
            if trajectory.task.domain != pack.name:
                raise DataError(
                    f"{path}:{number}: an episode of domain {trajectory.task.domain!r}, not {pack.name!r}"
                )
            mode = state_mode_of(trajectory)
            if trajectories and mode != state_mode_of(trajectories[0]):
                raise DataError(
                    f"{path}:{number}: a {mode} episode after {state_mode_of(trajectories[0])} ones "
                    "(metadata.state_mode): record a file in one state mode"
                )
            trajectories.append(trajectory)
        if not trajectories:
            raise DataError(f"{path} holds no episode")
        if not any(step.action_valid for trajectory in trajectories for step in trajectory.steps):
            raise DataError(f"{path} holds no valid step: nothing to learn from")
        return cls(path, tuple(trajectories), file_sha256(path))

    @property
    def transitions(self) -> int:
        """The valid steps: one request each (the synthetic env answers invalid actions itself)."""
        return sum(step.action_valid for trajectory in self.trajectories for step in trajectory.steps)

    def record(self) -> dict[str, Any]:
        """What a build's recipe and manifest keep of it: file name, SHA-256, episodes, transitions."""
        return {
            "file": self.path.name,
            "sha256": self.sha256,
            "episodes": len(self.trajectories),
            "transitions": self.transitions,
        }


def file_domain(path: str | Path) -> str:
    """The domain of a trajectories file's first episode (:class:`DataError` where it holds none)."""
    for _, trajectory in numbered_trajectories(path):
        return trajectory.task.domain
    raise DataError(f"{path} holds no episode")


def state_mode_of(trajectory: Trajectory) -> StateMode:
    """``structured`` where the trajectory recorded abstract states (``metadata.state_mode``), else ``text``."""
    return "structured" if trajectory.metadata.get("state_mode") == "structured" else "text"


def task_groups(trajectories: Sequence[Trajectory]) -> dict[str, str]:
    """Each task id's group: the task it was varied from, through every parent the file holds, else itself.

    A split keeps a group together, so that no variation of a test task is trained on.
    """
    parents = {t.task.id: t.task.parent_id for t in trajectories}
    groups: dict[str, str] = {}
    for task_id in parents:
        root, seen = task_id, {task_id}
        while (parent := parents.get(root)) is not None and parent not in seen:
            root = parent
            seen.add(parent)
        groups[task_id] = root
    return groups


def split_by_task(
    trajectories: Sequence[Trajectory], *, seed: int = 0, test_fraction: float = DEFAULT_TEST_FRACTION
) -> tuple[list[Trajectory], list[Trajectory]]:
    """The episodes of a seeded ``test_fraction`` of the task groups (:func:`task_groups`) held out, and the rest.

    Groups are drawn from their sorted ids, so the same file and ``seed`` give the same split
    whatever the order of its lines; at least one group lands on each side.
    """
    groups = task_groups(trajectories)
    names = sorted(set(groups.values()))
    if len(names) < 2:
        raise ConfigurationError(
            f"holding tasks out needs episodes of at least two tasks, the file has {len(names)}: "
            "pass a held-out file of other tasks' episodes"
        )
    held = min(len(names) - 1, max(1, round(len(names) * test_fraction)))
    order = np.random.default_rng(seed).permutation(len(names))
    test = {names[int(i)] for i in order[:held]}
    train = [t for t in trajectories if groups[t.task.id] not in test]
    return train, [t for t in trajectories if groups[t.task.id] in test]


@dataclass(frozen=True)
class RecordedSplit:
    """Recorded episodes of one domain, split by task into train and test, and the files they came from.

    ``files``: the trajectories file, then the held-out file where one was given; ``seed`` drew
    the split where none was.
    """

    domain: Domain
    train: tuple[Trajectory, ...]
    test: tuple[Trajectory, ...]
    files: tuple[RecordedFile, ...]
    seed: int
    history_len: int = DEFAULT_HISTORY_LEN

    @classmethod
    def read(
        cls,
        domain: Domain | str,
        trajectories: str | Path,
        held_out: str | Path | None = None,
        *,
        seed: int = 0,
        history_len: int = DEFAULT_HISTORY_LEN,
    ) -> RecordedSplit:
        """Read ``trajectories`` (and ``held_out``, the test episodes) and split them by task."""
        pack = get_domain(domain)
        recorded = RecordedFile.read(trajectories, pack)
        if held_out is None:
            train, test = split_by_task(recorded.trajectories, seed=seed)
            return cls(pack, tuple(train), tuple(test), (recorded,), seed, history_len)
        other = RecordedFile.read(held_out, pack)
        modes = {state_mode_of(t) for t in (*recorded.trajectories, *other.trajectories)}
        if len(modes) > 1:
            raise DataError(
                f"{recorded.path} and {other.path} hold states of different modes: record both alike"
            )
        groups = task_groups([*recorded.trajectories, *other.trajectories])
        trained_on = {groups[t.task.id] for t in recorded.trajectories}
        shared = trained_on & {groups[t.task.id] for t in other.trajectories}
        if shared:
            raise ConfigurationError(
                f"{other.path} holds episodes of tasks {recorded.path} trains on (or variations of them): "
                f"{sorted(shared)[:5]}; held-out tasks must be new to the model"
            )
        return cls(pack, recorded.trajectories, other.trajectories, (recorded, other), seed, history_len)

    @property
    def state_mode(self) -> StateMode:
        return state_mode_of(self.files[0].trajectories[0])

    def transitions(self, split: Split) -> list[tuple[str, ReferenceTransition]]:
        """The requests of ``split``'s valid steps with their recorded answers, each with its episode's policy."""
        out: list[tuple[str, ReferenceTransition]] = []
        for trajectory in self.train if split == "train" else self.test:
            references = reference_transitions(
                [trajectory], self.domain, history_len=self.history_len, supply=RECORDED_SUPPLY
            )
            out += [(trajectory.policy or RECORDED_POLICY, reference) for reference in references]
        return out

    def held_out_transitions(self, n: int) -> list[ReferenceTransition]:
        """``n`` of the test split's transitions (all where it has fewer), drawn with the seed, in episode order."""
        pool = [reference for _, reference in self.transitions("test")]
        if len(pool) <= n:
            return pool
        picks = np.random.default_rng(self.seed).choice(len(pool), size=n, replace=False)
        return [pool[int(i)] for i in sorted(picks)]

    def recipe(self) -> dict[str, Any]:
        """What decides the examples: the files, the seed of the split, and the requests they make today.

        The requests' SHA-256 changes with anything the domain's structural rules (carried and
        updated fields) or its prompt put in them, so data made before such a change is made again.
        """
        digest = hashlib.sha256()
        for split in ("train", "test"):
            for _, reference in self.transitions(split):
                digest.update(reference.request.model_dump_json().encode("utf-8"))
        return {
            "trajectories": self.files[0].record(),
            "held_out": self.files[1].record() if len(self.files) > 1 else None,
            "seed": self.seed,
            "supply": RECORDED_SUPPLY,
            "requests_sha256": digest.hexdigest(),
        }

    def examples(
        self,
        split: Split,
        reasoning: Callable[[ExperienceRequest, Transition], str],
        source: ReasoningSource,
    ) -> tuple[list[dict[str, Any]], int]:
        """``split``'s SFT examples (each recording ``"supply": "none"``), and how many steps were left out.

        A step is left out where its answer cannot give the recorded next state back: the
        recording changed a field the domain's rules call carried (the env that recorded it
        broke a rule the domain claims).
        """
        rows: list[dict[str, Any]] = []
        left_out = 0
        for policy, reference in self.transitions(split):
            why = reasoning(reference.request, reference.truth)
            try:
                row = sft_example(
                    reference.request,
                    reference.truth,
                    why,
                    split=split,
                    policy=policy,
                    reasoning_source=source,
                )
            except DataError:
                left_out += 1
                continue
            rows.append({**row, "supply": RECORDED_SUPPLY})
        return rows, left_out


def build_recorded_dataset(
    split: RecordedSplit, out: str | Path, *, teacher: ChatModel | None = None
) -> DatasetSummary:
    """Write the SFT examples of every valid recorded step of ``split`` to the JSONL file ``out``.

    Train examples come from the train episodes, test examples from the held-out ones; the
    reasoning is ``teacher``'s where one is given, else the template one.
    """
    started = time.perf_counter()
    source: ReasoningSource = "teacher" if teacher is not None else "reference"
    reasoning: Callable[[ExperienceRequest, Transition], str] = (
        TeacherReasoning(teacher) if teacher is not None else partial(reference_reasoning, split.domain)
    )
    train, train_left_out = split.examples("train", reasoning, source)
    test, test_left_out = split.examples("test", reasoning, source)
    if not train:
        raise DataError(f"{split.files[0].path}: none of its train steps gives an example")
    write_examples([*train, *test], out)
    notes = [
        f"recorded in {f.path.name} (sha256 {f.sha256[:12]}): {len(f.trajectories)} episodes, "
        f"{f.transitions} transitions"
        for f in split.files
    ]
    notes.append(
        "test tasks: the held-out file's"
        if len(split.files) > 1
        else f"test tasks: a share of the file's drawn with seed {split.seed}"
    )
    if train_left_out or test_left_out:
        notes.append(
            f"{train_left_out + test_left_out} transitions left out: their answer does not give the "
            "recorded next state back (a field the domain calls carried changed)"
        )
    return DatasetSummary(
        domain=split.domain.name,
        state_mode=split.state_mode,
        train_examples=len(train),
        test_examples=len(test),
        train_tasks=len({row["task_id"] for row in train}),
        test_tasks=len({row["task_id"] for row in test}),
        generated_tasks=0,
        by_policy=dict(Counter(row["policy"] for row in train)),
        train_episode_ends=sum(map(ends_episode, train)),
        reasoning_source=source,
        seconds=round(time.perf_counter() - started, 2),
        out=str(Path(out)),
        notes=notes,
    )
