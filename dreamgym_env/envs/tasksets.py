"""The train/test task set every pack's tasks come in, and the ids of tasks built from free instructions."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.types import Task


@dataclass(frozen=True)
class TaskSet:
    """Tasks split into train and test (fixed splits: a task is in one of them only)."""

    train: tuple[Task, ...]
    test: tuple[Task, ...]

    def split(self, split: str) -> tuple[Task, ...]:
        """The tasks of ``"train"`` or ``"test"``."""
        if split == "train":
            return self.train
        if split == "test":
            return self.test
        raise UnknownNameError("split", str(split), ("train", "test"))

    @cached_property
    def by_id(self) -> dict[str, Task]:
        """Every task by id."""
        return {task.id: task for task in (*self.train, *self.test)}


def free_task_id(domain: str, instruction: str) -> str:
    """The id of the task ``Domain.make_task`` builds for a free instruction: the domain and a digest."""
    return f"{domain}-free-{hashlib.sha1(instruction.encode('utf-8')).hexdigest()[:10]}"


RESET_OPTIONS = ("task",)
"""The keys a single env's ``reset(options=...)`` takes."""


def reset_task(options: Mapping[str, Any] | None, owner: str, known: Iterable[str] = RESET_OPTIONS) -> Any:
    """``options["task"]`` (``None`` when absent); an option ``owner`` does not know is a ConfigurationError.

    A misspelt key (``{"tsk": 1}``) would otherwise be ignored and a random task drawn.
    """
    known = list(known)
    unknown = sorted(map(str, set(options or {}) - set(known)))
    if unknown:
        raise ConfigurationError(f"unknown reset option(s) {unknown}: {owner} takes {known}")
    return (options or {}).get("task")
