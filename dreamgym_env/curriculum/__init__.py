"""Curriculum: task statistics, reward-variance selection, task generation.

* :class:`TaskStats` (``stats.py``): per-task reward history, persistent in SQLite.
* :class:`VarianceSelector`, :class:`GeneratedShare` (``selection.py``): which tasks resets get and
  which seed new variations; the cap ``lam`` on generated tasks.
* :class:`TaskGenerator` (``generator.py``) with a :class:`ChatModel` such as :class:`EndpointChat`
  (``chat.py``) and the domain hook :class:`~dreamgym_env.task_variations.TaskVariations`.
* :class:`Curriculum` (``curriculum.py``) ties them together; the
  :class:`~dreamgym_env.wrappers.curriculum_reset.CurriculumReset` wrapper drives it from an env.
"""

from dreamgym_env.curriculum.chat import ChatModel, ChatReply, EndpointChat
from dreamgym_env.curriculum.clusters import ByTask, TaskClusters
from dreamgym_env.curriculum.curriculum import Curriculum
from dreamgym_env.curriculum.generator import GenerationReport, TaskGenerator
from dreamgym_env.curriculum.selection import GeneratedShare, TaskScore, VarianceSelector
from dreamgym_env.curriculum.stats import TaskRecord, TaskStats, reward_variance
from dreamgym_env.task_variations import InstructionVariations, Rejection, TaskVariations

__all__ = [
    "ByTask",
    "ChatModel",
    "ChatReply",
    "Curriculum",
    "EndpointChat",
    "GeneratedShare",
    "GenerationReport",
    "InstructionVariations",
    "Rejection",
    "TaskClusters",
    "TaskGenerator",
    "TaskRecord",
    "TaskScore",
    "TaskStats",
    "TaskVariations",
    "VarianceSelector",
    "reward_variance",
]
