"""RecordedDomain: a pack whose only knowledge of its world is a file of recorded episodes.

It is the toy house of ``tests/toy`` as someone who cannot run it sees it: the action grammar
and the rules a recorder documents, and ``data/train.jsonl`` / ``data/held-out.jsonl``, episodes
recorded from that house (``PYTHONPATH=tests python -m recorded.record`` writes them again). There is no
reference env, no expert, no world data: the tasks are the recorded episodes' tasks, stripped of
everything but their instruction and first state. An experience model for it can only be
learned from the recordings, and grounded on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

from toy.pack import PROMPT, _admissible, parse_action

from dreamgym_env.domain import ActionError, Domain, DomainPrompt, ParsedAction, Split
from dreamgym_env.replay.jsonl import read_trajectories
from dreamgym_env.types import Task, Trajectory

DATA = Path(__file__).parent / "data"
TRAIN_FILE = DATA / "train.jsonl"
HELD_OUT_FILE = DATA / "held-out.jsonl"


class RecordedDomain(Domain):
    """The toy house known only from :data:`TRAIN_FILE` and :data:`HELD_OUT_FILE` (see the module docstring)."""

    name = "recorded"
    display_name = "Recorded"
    max_episode_steps = 8
    ends_only_on_terminal_actions = True

    @cached_property
    def recordings(self) -> dict[Split, list[Trajectory]]:
        return {"train": read_trajectories(TRAIN_FILE), "test": read_trajectories(HELD_OUT_FILE)}

    def parse_action(self, text: str) -> ParsedAction | ActionError:
        return parse_action(text)

    def admissible_actions(self, state: str) -> list[str] | None:
        return list(_admissible(state))

    def is_terminal_action(self, action: ParsedAction) -> bool:
        return action.verb == "CLAIM"

    @property
    def prompt(self) -> DomainPrompt:
        return PROMPT

    def tasks(self, split: Split = "train") -> Sequence[Task]:
        """The tasks of the split's recorded episodes, each once, in the order recorded."""
        return list({t.task.id: t.task for t in self.recordings[split]}.values())
