"""WebArena tasks: the templates instantiated over a data seed, with a fixed held-out split.

Each task starts on its site's home page. ``metadata`` holds what scoring and the expert need:
``site``, ``template`` (its id), ``slots``, ``eval`` (the evaluator spec, see
:mod:`~dreamgym_env.envs.webarena.evaluators`), ``kind`` (``info``, ``state`` or
``navigation``), ``start_url`` and ``data_seed``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache
from typing import Any

from dreamgym_env.envs.tasksets import TaskSet
from dreamgym_env.envs.webarena.browser import Browser
from dreamgym_env.envs.webarena.state import ObservationMode
from dreamgym_env.envs.webarena.templates import TEMPLATES, Slots, Template
from dreamgym_env.envs.webarena.world import DEFAULT_DATA_SEED, SITES, World, load_data
from dreamgym_env.errors import UnknownNameError
from dreamgym_env.types import Task

TEST_SIZE = 165
"""The held-out split's size (WebArena-Lite's)."""


@cache
def start_page(site: str, seed: int = DEFAULT_DATA_SEED, mode: ObservationMode = "axtree") -> str:
    """The first observation of a task on ``site``: its home page in a fresh world."""
    world = World(load_data(seed))
    return Browser(world, world.home(site)).render(mode)


def make_task(template: Template, slots: Slots, spec: dict[str, Any], task_id: str, seed: int) -> Task:
    """A task of ``template`` with resolved ``slots`` and evaluator ``spec``."""
    return Task(
        id=task_id,
        domain="webarena",
        instruction=template.instruction(slots),
        initial_state=start_page(template.site, seed),
        metadata={
            "site": template.site,
            "template": template.id,
            "kind": template.kind,
            "slots": dict(slots),
            "eval": spec,
            "start_url": World(load_data(seed)).home(template.site),
            "data_seed": seed,
        },
    )


@dataclass(frozen=True)
class SeededTaskSet(TaskSet):
    """The tasks of one data seed, split into train and test."""

    seed: int = 0


def generate_tasks(seed: int = DEFAULT_DATA_SEED) -> SeededTaskSet:
    """Every template's first ``limit`` feasible, distinct instances, then a seeded held-out sample.

    Deterministic for a seed: candidates come in a seeded order per template, and the test split
    is a seeded sample of :data:`TEST_SIZE` positions of the whole list.
    """
    data = load_data(seed)
    made: list[tuple[Template, Slots, dict[str, Any]]] = []
    for template in TEMPLATES:
        rng = random.Random(f"webarena-tasks-{seed}-{template.id}")
        seen: set[str] = set()
        for candidate in template.candidates(data, rng):
            resolved = template.resolve(data, candidate)
            if isinstance(resolved, str):
                continue
            slots, spec = resolved
            text = template.instruction(slots)
            if text not in seen:
                seen.add(text)
                made.append((template, slots, spec))
            if len(seen) == template.limit:
                break
    test_positions = set(random.Random(f"webarena-split-{seed}").sample(range(len(made)), TEST_SIZE))
    prefix = "webarena" if seed == DEFAULT_DATA_SEED else f"webarena-s{seed}"
    splits: dict[str, list[Task]] = {"train": [], "test": []}
    for i, (template, slots, spec) in enumerate(made):
        split = "test" if i in test_positions else "train"
        splits[split].append(
            make_task(template, slots, spec, f"{prefix}-{split}-{len(splits[split]):04d}", seed)
        )
    return SeededTaskSet(tuple(splits["train"]), tuple(splits["test"]), seed=seed)


def load_tasks(seed: int = DEFAULT_DATA_SEED) -> SeededTaskSet:
    """The tasks of data seed ``seed``, built once per process."""
    return _cached_tasks(int(seed))


@cache
def _cached_tasks(seed: int) -> SeededTaskSet:
    return generate_tasks(seed)


def tasks_of_sites(tasks: tuple[Task, ...], sites: tuple[str, ...] | None) -> tuple[Task, ...]:
    """The tasks of some sites (all when ``sites`` is None); unknown site names raise."""
    if sites is None:
        return tasks
    for site in sites:
        if site not in SITES:
            raise UnknownNameError("WebArena site", site, SITES)
    return tuple(t for t in tasks if t.metadata["site"] in sites)
