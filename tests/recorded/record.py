"""Write the recorded pack's episodes again: ``PYTHONPATH=tests python -m recorded.record``.

Episodes of the toy house's reference env (a noisy expert and a random policy on its train
tasks, a noisy expert on its test tasks), relabelled as the ``recorded`` domain, each task
stripped to its id, instruction and first state: what a user who recorded a real env has.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from toy.pack import ToyDomain

from dreamgym_env.agents.rollouts import collect
from dreamgym_env.envs.registry import register_domain, unregister_domain
from dreamgym_env.replay.jsonl import read_trajectories
from dreamgym_env.types import Task, Trajectory
from recorded.pack import HELD_OUT_FILE, TRAIN_FILE

PLAN = {
    TRAIN_FILE: [("noisy", "train", 40, 1), ("random", "train", 20, 2)],
    HELD_OUT_FILE: [("noisy", "test", 16, 3)],
}


def opaque(trajectory: Trajectory) -> Trajectory:
    """The trajectory as the recorded domain's: its task keeps only what an agent saw."""
    task = Task(
        id=trajectory.task.id.replace("toy", "recorded", 1),
        domain="recorded",
        instruction=trajectory.task.instruction,
        initial_state=trajectory.task.initial_state,
    )
    return trajectory.model_copy(update={"task": task, "metadata": {}})


def main() -> None:
    register_domain(ToyDomain())
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for out, runs in PLAN.items():
                lines = []
                for policy, split, episodes, seed in runs:
                    path = Path(tmp) / f"{policy}-{split}.jsonl"
                    collect("toy", policy, episodes, path, seed=seed, split=split, progress=False)
                    lines += [opaque(t).model_dump_json() for t in read_trajectories(path)]
                out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    finally:
        unregister_domain("toy")


if __name__ == "__main__":
    main()
