"""What the packs' reference envs share: the train/test task set, the checks of their arguments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar, cast

import numpy as np

from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.experience.prompt import utf8_safe
from dreamgym_env.types import Task

A = TypeVar("A")


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


def utf8_action(action: A) -> A:
    r"""A string action with its lone surrogates as U+FFFD (other values as they are).

    A reference env echoes actions into its pages and errors (``search[shoes \ud800]``); text
    that UTF-8 cannot encode would fail wherever the page goes next (JSON, a file, a terminal).
    The synthetic env replaces them the same way (:func:`~dreamgym_env.experience.prompt.utf8_safe`).
    """
    return cast("A", utf8_safe(action)) if isinstance(action, str) else action


def check_reference_arguments(
    reward: str, max_steps: int | None, render_mode: str | None, render_modes: Sequence[str]
) -> None:
    """The arguments every reference env takes, checked the same way (``ConfigurationError``)."""
    if reward not in ("outcome", "score"):
        raise ConfigurationError(f"reward must be 'outcome' or 'score', got {reward!r}")
    if max_steps is not None and max_steps < 1:
        raise ConfigurationError(f"max_steps must be >= 1 or None, got {max_steps}")
    if render_mode is not None and render_mode not in render_modes:
        raise ConfigurationError(f"render_mode must be one of {list(render_modes)}")


def resolve_reference_task(
    spec: object,
    tasks: Sequence[Task],
    known: Mapping[str, Task],
    rng: np.random.Generator,
    *,
    needs: str,
) -> Task:
    """A reference env's task from ``options["task"]``: a Task, a task id, or ``None`` (drawn with ``rng``).

    ``known`` holds the ids the env can look up; ``needs`` says what a reference task carries
    that a free instruction lacks (e.g. "a goal"), for the error. The caller checks a passed
    ``Task`` further against its own world.
    """
    if spec is None:
        if not tasks:
            raise ConfigurationError("this env has no tasks to draw from")
        return tasks[int(rng.integers(len(tasks)))]
    if isinstance(spec, str):
        task = known.get(spec)
        if task is None:
            if " " in spec.strip():
                raise ConfigurationError(
                    f"the reference env needs a task with {needs}; free instructions are for the synthetic env"
                )
            raise UnknownNameError("task id", spec, known)
        return task
    if not isinstance(spec, Task):
        raise ConfigurationError(f"options['task'] must be a Task or a task id, got {type(spec).__name__}")
    return spec
