from __future__ import annotations

import re

import pytest

from dreamgym_env.envs.webarena.reference_env import WebArenaRefEnv
from dreamgym_env.envs.webarena.tasks import load_tasks
from dreamgym_env.types import Task


def find_id(observation: str, role: str, name: str) -> int:
    """The id of the element of ``role`` named ``name`` on the page (fails the test if absent)."""
    pattern = re.compile(rf"^\t*\[(\d+)\] {re.escape(role)} {re.escape(repr(name))}", re.MULTILINE)
    match = pattern.search(observation)
    assert match is not None, f"no {role} {name!r} on the page:\n{observation}"
    return int(match.group(1))


def first_task(template: str, split: str = "train") -> Task:
    """The first task of a template in a split."""
    return next(t for t in load_tasks().split(split) if t.metadata["template"] == template)


@pytest.fixture
def env() -> WebArenaRefEnv:
    return WebArenaRefEnv(split="test")


@pytest.fixture
def element_id():
    return find_id


@pytest.fixture
def task_of():
    return first_task
