"""How the curriculum writes and checks new ALFWorld tasks.

A candidate is a goal in the seed task's room: ``family``, ``object_type``,
``receptacle_type`` (``null`` for ``look_at_obj_in_light``) and ``lamp_type`` (only for
that family). The instruction is written from the family's ALFWorld template, so it always
states the goal. A candidate is rejected as malformed when it does not parse into a goal,
and as infeasible when the room cannot satisfy it (no object of the type, fewer than two for
``pick_two``, no receptacle of the target type, no sinkbasin, microwave, fridge or lamp where
the family needs one, an object that cannot be cleaned, heated or cooled) or already does.
The seed context shows the model the seed's goal and what its room holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from dreamgym_env.envs.alfworld.goal import FAMILIES, TEMPLATES, Goal, GoalCheck
from dreamgym_env.envs.alfworld.household import Household
from dreamgym_env.envs.alfworld.state import start_text
from dreamgym_env.envs.alfworld.tasks import world_of
from dreamgym_env.envs.alfworld.world import LAMPS, World, kind_of
from dreamgym_env.errors import ConfigurationError, excerpt
from dreamgym_env.task_variations import Rejection, TaskVariations, candidate_object, generated_task_id
from dreamgym_env.types import Task

_GOAL_FIELDS = ("family", "object_type", "receptacle_type", "lamp_type")


class ALFWorldTaskVariations(TaskVariations):
    """Candidates are goals in the seed's room, checked against that room (see the module docstring)."""

    def describe(self) -> str:
        templates = "\n".join(f"- {family}: {' / '.join(TEMPLATES[family])}" for family in FAMILIES)
        return (
            "ALFWorld: a household text world (one room with numbered receptacles and objects). "
            "A task is one goal of six families, phrased with ALFWorld's templates:\n"
            f"{templates}\nclean needs a sinkbasin, heat a microwave, cool a fridge; the light "
            "task needs the room's desklamp or floorlamp."
        )

    def guidance(self) -> str:
        return (
            "Each new task is a different goal in the same room as its seed: another family, "
            "another object type or another target receptacle type, using only the object, "
            "receptacle and lamp types that the seed context lists for that room. Harder "
            "variations need more steps (clean, heat or cool before placing; two objects; a "
            "receptacle that must be opened). Never repeat a seed or another task."
        )

    def seed_context(self, task: Task) -> str:
        try:
            goal, world = Goal.of_task(task), world_of(task)
        except ConfigurationError:
            return ""
        objects = Counter(kind_of(o) for o in world.objects if kind_of(o) not in LAMPS)
        receptacles = sorted({kind_of(r) for r in world.receptacles})
        lamps = sorted({kind_of(o) for o in world.objects if kind_of(o) in LAMPS})
        return "\n".join(
            (
                f"Goal: {goal.to_dict()}",
                f"Room: a {world.scene} with receptacle types {', '.join(receptacles)}",
                "Objects: " + ", ".join(f"{kind} x{n}" for kind, n in sorted(objects.items())),
                f"Lamps: {', '.join(lamps) or 'none'}",
            )
        )

    def candidate_schema(self) -> dict[str, Any]:
        return candidate_object(
            {
                "family": {"type": "string", "enum": list(FAMILIES)},
                "object_type": {"type": "string"},
                "receptacle_type": {"type": ["string", "null"]},
                "lamp_type": {"type": ["string", "null"], "enum": [*sorted(LAMPS), None]},
            },
            _GOAL_FIELDS,
        )

    def fingerprint(self, task: Task) -> str:
        """The goal and its room, however the instruction words it."""
        try:
            goal, world = Goal.of_task(task), world_of(task)
        except ConfigurationError:
            return super().fingerprint(task)
        return f"goal|{goal.family}|{goal.object_type}|{goal.receptacle_type}|{goal.lamp_type}|{world.scene}|{world.seed}"

    def build(self, candidate: Mapping[str, Any], parent: Task) -> Task | Rejection:
        try:
            world = world_of(parent)
        except ConfigurationError as exc:
            return Rejection("malformed", f"seed {parent.id!r} has no ALFWorld room: {exc}", parent.id)
        data = {field: candidate.get(field) for field in _GOAL_FIELDS}
        if isinstance(data["object_type"], str):
            data["object_type"] = data["object_type"].strip().lower()
        if isinstance(data["receptacle_type"], str):
            data["receptacle_type"] = data["receptacle_type"].strip().lower()
        try:
            goal = Goal.from_dict(data)
        except ConfigurationError as exc:
            return Rejection("malformed", str(exc), parent.id, excerpt(str(dict(candidate))))
        reason = self._infeasibility(goal, world)
        if reason is not None:
            return Rejection("infeasible", reason, parent.id, goal.instruction())
        instruction = goal.instruction()
        metadata = {"goal": goal.to_dict(), "scene": world.scene, "world_seed": world.seed}
        task = self.new_task(parent, instruction, start_text(world.receptacles, instruction), metadata)
        # The same instruction in another room is another task: the id comes from goal and room.
        return task.model_copy(update={"id": generated_task_id(self.name, self.fingerprint(task))})

    @staticmethod
    def _infeasibility(goal: Goal, world: World) -> str | None:
        reason = goal.infeasibility(world)
        if reason is None and GoalCheck(goal, world).score(Household(world)) >= 1.0:
            reason = "the room already satisfies the goal"
        return reason
