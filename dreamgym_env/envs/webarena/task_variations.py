"""How the curriculum writes and checks new WebArena tasks.

A candidate names a template and its slot values (``{"parent_id": ..., "template":
"reddit.comment", "slots": {"comment": ..., "post": ..., "forum": ...}}``). It is accepted when
the template exists, every slot is given, and the template's ``resolve`` finds what the slots
name in the seed's site data (an unknown product, forum, post, project, user or place, or a
change that is already made, is infeasible). The instruction is the template's intent with the
canonical slot values, and the evaluator comes from the data, so a generated task is scored
like a seed task.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from dreamgym_env.envs.webarena.tasks import make_task
from dreamgym_env.envs.webarena.templates import TEMPLATES, TEMPLATES_BY_ID
from dreamgym_env.envs.webarena.world import DEFAULT_DATA_SEED, load_data
from dreamgym_env.errors import excerpt
from dreamgym_env.task_variations import Rejection, TaskVariations, candidate_object
from dreamgym_env.types import Task

MAX_SLOT_CHARS = 200


class WebArenaTaskVariations(TaskVariations):
    """Candidates are a template and slot values, checked against the sites' data (see the module docstring)."""

    @cached_property
    def _describe(self) -> str:
        lines = [f"- {t.id} ({t.site}, {t.kind}): {t.intent}" for t in TEMPLATES]
        return (
            "Web sites (WebArena): a store front (shopping), its admin panel (shopping_admin), forums "
            "(reddit), a code host (gitlab) and a map. A task is one of these templates with its "
            "{slots} filled with names that exist on the sites:\n" + "\n".join(lines)
        )

    def describe(self) -> str:
        return self._describe

    def guidance(self) -> str:
        return (
            "Each new task varies one seed task: the same or another template of the same site, with "
            "other slot values of the same kind that exist on the site (another product, order, forum, "
            "post, project, user, place or status). Copy names exactly as the seed context shows them. "
            "Never repeat a seed or another task."
        )

    def seed_context(self, task: Task) -> str:
        template = TEMPLATES_BY_ID.get(str(task.metadata.get("template")))
        if template is None:
            return ""
        siblings = [t.id for t in TEMPLATES if t.site == template.site]
        return (
            f"Template {template.id}: {template.intent}\nSlots: {task.metadata.get('slots', {})}\n"
            f"Other templates of {template.site}: {', '.join(siblings)}"
        )

    def candidate_schema(self) -> dict[str, Any]:
        return candidate_object(
            {
                "template": {"type": "string", "enum": sorted(TEMPLATES_BY_ID)},
                "slots": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "maxLength": MAX_SLOT_CHARS},
                },
                "instruction": {"type": "string"},
            },
            ["template", "slots"],
        )

    def fingerprint(self, task: Task) -> str:
        """The template and its slot values, however the instruction is worded."""
        template, slots = task.metadata.get("template"), task.metadata.get("slots")
        if not template or not isinstance(slots, Mapping):
            return super().fingerprint(task)
        values = "|".join(f"{k}={str(v).lower()}" for k, v in sorted(slots.items()))
        return f"{template}|{values}|{task.metadata.get('data_seed', DEFAULT_DATA_SEED)}"

    def build(self, candidate: Mapping[str, Any], parent: Task) -> Task | Rejection:
        def malformed(reason: str) -> Rejection:
            return Rejection("malformed", reason, parent.id, excerpt(str(candidate)))

        template = TEMPLATES_BY_ID.get(str(candidate.get("template", "")))
        if template is None:
            return malformed(f"unknown template {str(candidate.get('template'))[:80]!r}")
        slots = candidate.get("slots")
        if not isinstance(slots, Mapping) or not all(isinstance(v, str) for v in slots.values()):
            return malformed("slots is not an object of strings")
        missing = [name for name in template.slots if not str(slots.get(name, "")).strip()]
        if missing:
            return malformed(f"template {template.id} needs the slots {', '.join(missing)}")
        if any(len(v) > MAX_SLOT_CHARS for v in slots.values()):
            return malformed(f"a slot value is longer than {MAX_SLOT_CHARS} characters")
        seed = int(parent.metadata.get("data_seed", DEFAULT_DATA_SEED))
        resolved = template.resolve(load_data(seed), {k: slots[k] for k in template.slots})
        if isinstance(resolved, str):
            return Rejection("infeasible", resolved, parent.id, excerpt(str(candidate)))
        canonical, spec = resolved
        seeded = make_task(template, canonical, spec, "", seed)
        return self.new_task(parent, seeded.instruction, seeded.initial_state, dict(seeded.metadata))
