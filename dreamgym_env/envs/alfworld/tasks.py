"""ALFWorld tasks: goals generated in seeded rooms, with a fixed train/test split by room.

:data:`NUM_WORLDS` rooms (seeds ``0 ..``; see :data:`SCENE_CYCLE`) give :data:`TASKS_PER_WORLD` distinct goals each. A task's ``metadata`` holds its
goal and its room (``scene``, ``world_seed``), so that any env can rebuild the room. Every goal
is solvable by construction: the room has the objects, the receptacle (and sinkbasin,
microwave, fridge or lamp) it needs, and no object of the type starts in a receptacle of the
target type. Rooms whose block of six seeds is the 8th of every 8 are test rooms: a test
task never shares its room with a train task.
"""

from __future__ import annotations

import json
import random
from functools import cache

from dreamgym_env.envs.alfworld.goal import PROCESS, Goal
from dreamgym_env.envs.alfworld.state import start_text
from dreamgym_env.envs.alfworld.world import World, kind_of, load_world, make_world, object_types
from dreamgym_env.envs.tasksets import TaskSet
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

NUM_WORLDS = 1008
TASKS_PER_WORLD = 4
SCENE_CYCLE = ("kitchen", "bedroom", "kitchen", "bathroom", "kitchen", "livingroom")
"""Room ``seed`` has scene ``SCENE_CYCLE[seed % 6]``: half are kitchens, as in ALFWorld, whose
clean, heat and cool tasks need one."""
TEST_BLOCK = 8
"""One block of six rooms in this many is a test block (126 test rooms of 1,008)."""
NO_TARGET = frozenset({"sinkbasin", "microwave"})
"""Receptacle types that are never a goal's target (ALFWorld's goals do not ask to put things there)."""
SCENE_FAMILIES: dict[str, tuple[str, ...]] = {
    "kitchen": (
        "pick_and_place",
        "pick_clean_then_place",
        "pick_heat_then_place",
        "pick_cool_then_place",
        "pick_two_obj_and_place",
    ),
    "bathroom": ("pick_and_place", "pick_clean_then_place", "pick_two_obj_and_place"),
    "bedroom": ("pick_and_place", "look_at_obj_in_light", "pick_two_obj_and_place"),
    "livingroom": ("pick_and_place", "look_at_obj_in_light", "pick_two_obj_and_place"),
}
"""The families each scene offers, as in ALFWorld (heat and cool need a kitchen)."""


def scene_of(seed: int) -> str:
    """The scene of room ``seed`` (see :data:`SCENE_CYCLE`)."""
    return SCENE_CYCLE[seed % len(SCENE_CYCLE)]


def is_test_world(seed: int) -> bool:
    return (seed // len(SCENE_CYCLE)) % TEST_BLOCK == TEST_BLOCK - 1


def world_of(task: Task) -> World:
    """The room of an ALFWorld task (from ``metadata["scene"]`` and ``metadata["world_seed"]``)."""
    scene, seed = task.metadata.get("scene"), task.metadata.get("world_seed")
    if not isinstance(scene, str) or not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigurationError(f"task {task.id!r} names no ALFWorld room (metadata scene and world_seed)")
    return load_world(scene, seed)


def starting_places(world: World) -> str:
    """What each receptacle holds at the start, one line each: ``"cabinet 5": ["bowl 2", "soapbottle 1"]``.

    The text of a task's :attr:`~dreamgym_env.types.Task.world`: a request shows the lines of
    the receptacles its action names. Each is written as the state's ``seen`` entry of a first
    look inside (the same JSON, the same order), so a model that looks copies it as it stands.
    """
    return "\n".join(f"{json.dumps(r)}: {json.dumps(objs)}" for r, objs in world.contents().items())


def candidate_goals(world: World) -> dict[str, list[Goal]]:
    """Family -> every goal this module would generate in ``world`` (solvable, not yet satisfied)."""
    kinds = {kind_of(r) for r in world.receptacles}
    counts: dict[str, int] = {}
    starts_in: dict[str, set[str]] = {}
    for obj, recep in world.placement:
        counts[kind_of(obj)] = counts.get(kind_of(obj), 0) + 1
        starts_in.setdefault(kind_of(obj), set()).add(kind_of(recep))
    lamps = sorted({kind_of(o) for o in world.objects} - set(object_types(world.scene)))
    goals: dict[str, list[Goal]] = {}
    for obj, places in object_types(world.scene).items():
        if obj not in counts:
            continue
        targets = [p for p in places if p in kinds and p not in starts_in[obj] and p not in NO_TARGET]
        for family in SCENE_FAMILIES[world.scene]:
            if family == "look_at_obj_in_light":
                goals.setdefault(family, []).extend(Goal(family, obj, lamp_type=lamp) for lamp in lamps)
                continue
            process = PROCESS.get(family)
            if process is not None:
                if obj not in process.objects or process.tool not in kinds:
                    continue
                allowed = [t for t in targets if t not in (process.tool, "garbagecan")]
            elif family == "pick_two_obj_and_place" and counts[obj] < 2:
                continue
            else:
                allowed = targets
            goals.setdefault(family, []).extend(Goal(family, obj, t) for t in allowed)
    return goals


def world_goals(world: World, count: int) -> list[tuple[Goal, int]]:
    """``count`` distinct goals of ``world`` spread over its families, each with a phrasing (0 or 1)."""
    rng = random.Random(f"alfworld-tasks-{world.scene}-{world.seed}")
    candidates = candidate_goals(world)
    families = [f for f in SCENE_FAMILIES[world.scene] if candidates.get(f)]
    rng.shuffle(families)
    chosen: list[tuple[Goal, int]] = []
    used: set[Goal] = set()
    while len(chosen) < count and families:
        for family in list(families):
            fresh = [g for g in candidates[family] if g not in used]
            if not fresh:
                families.remove(family)
                continue
            goal = rng.choice(fresh)
            used.add(goal)
            chosen.append((goal, rng.randrange(2)))
            if len(chosen) == count:
                break
    return chosen


def make_task(
    task_id: str, world: World, goal: Goal, phrasing: int = 0, instruction: str | None = None
) -> Task:
    """A task for ``goal`` in ``world``: instruction, first observation and metadata.

    The instruction is the goal's template ``phrasing`` unless ``instruction`` is given.
    """
    instruction = goal.instruction(phrasing) if instruction is None else instruction
    return Task(
        id=task_id,
        domain="alfworld",
        instruction=instruction,
        initial_state=start_text(world.receptacles, instruction),
        metadata={"goal": goal.to_dict(), "scene": world.scene, "world_seed": world.seed},
        world=starting_places(world),
    )


def generate_tasks(num_worlds: int = NUM_WORLDS, tasks_per_world: int = TASKS_PER_WORLD) -> TaskSet:
    """The tasks of rooms ``0 .. num_worlds - 1`` (deterministic; see the module docstring)."""
    if num_worlds < len(SCENE_CYCLE) * TEST_BLOCK:
        raise ConfigurationError(f"num_worlds must be >= {len(SCENE_CYCLE) * TEST_BLOCK}, got {num_worlds}")
    splits: dict[str, list[Task]] = {"train": [], "test": []}
    for seed in range(num_worlds):
        world = make_world(scene_of(seed), seed)
        split = "test" if is_test_world(seed) else "train"
        for goal, phrasing in world_goals(world, tasks_per_world):
            number = len(splits[split])
            splits[split].append(make_task(f"alfworld-{split}-{number:05d}", world, goal, phrasing))
    return TaskSet(tuple(splits["train"]), tuple(splits["test"]))


def load_tasks() -> TaskSet:
    """The default tasks (3,528 train and 504 test), built once per process."""
    return _cached_tasks()


@cache
def _cached_tasks() -> TaskSet:
    return generate_tasks()
