"""Per-task reward statistics of finished episodes: counts, recent rewards, reward variance.

The curriculum reads a task's reward variance ``V = mean((r_i - mean r)^2)`` over its most recent
episodes (a group of rollouts): 0 when the policy always fails or always succeeds, highest
(0.25 for 0/1 rewards) at a 50/50 split, i.e. on tasks that are feasible but not yet mastered.

:class:`TaskStats` keeps one record per task id, in memory or persistent in a SQLite file. SQLite
(the standard library's ``sqlite3``) is used rather than JSON because each finished episode
is committed on its own, so a crash loses nothing already recorded, and because the file can be
the replay buffer's own database file: the curriculum's tables (``curriculum_tasks``,
``curriculum_generated``, ``curriculum_meta``) sit beside the buffer's, and both stay in one
place.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.types import Task

DEFAULT_WINDOW = 16
"""How many of a task's most recent rewards its variance is computed over."""
SUCCESS_REWARD = 1.0
"""An episode whose return reaches this counts as a success."""
SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS curriculum_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS curriculum_tasks (
    task_id TEXT PRIMARY KEY,
    episodes INTEGER NOT NULL,
    successes INTEGER NOT NULL,
    reward_sum REAL NOT NULL,
    recent TEXT NOT NULL,
    first_step INTEGER NOT NULL,
    last_step INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS curriculum_generated (
    task_id TEXT PRIMARY KEY,
    parent_id TEXT,
    created_step INTEGER NOT NULL,
    task TEXT NOT NULL
);
"""


def reward_variance(rewards: Sequence[float]) -> float:
    """``V = mean((r_i - mean r)^2)`` of a group of rewards (0 for an empty group).

    >>> reward_variance([0, 0, 0, 0]), reward_variance([1, 1]), reward_variance([0, 1, 0, 1])
    (0.0, 0.0, 0.25)
    """
    n = len(rewards)
    if n == 0:
        return 0.0
    mean = math.fsum(rewards) / n
    return math.fsum((r - mean) ** 2 for r in rewards) / n


@dataclass
class TaskRecord:
    """What is known about one task: all-time counts and its most recent rewards.

    ``first_step`` and ``last_step`` are values of :attr:`TaskStats.step` (the episode clock, or
    the caller's own training step) when the task was first and last recorded.
    """

    task_id: str
    window: int = DEFAULT_WINDOW
    episodes: int = 0
    successes: int = 0
    reward_sum: float = 0.0
    recent: deque[float] = field(default_factory=deque)
    first_step: int = 0
    last_step: int = 0

    def __post_init__(self) -> None:
        self.recent = deque(self.recent, maxlen=self.window)

    @property
    def variance(self) -> float:
        """Reward variance over the recent window."""
        return reward_variance(self.recent)

    @property
    def mean_reward(self) -> float:
        """All-time mean return."""
        return self.reward_sum / self.episodes if self.episodes else 0.0

    @property
    def success_rate(self) -> float:
        """All-time share of successful episodes."""
        return self.successes / self.episodes if self.episodes else 0.0

    def add(self, reward: float, step: int) -> None:
        if not self.episodes:
            self.first_step = step
        self.episodes += 1
        self.successes += int(reward >= SUCCESS_REWARD)
        self.reward_sum += reward
        self.recent.append(reward)
        self.last_step = step


class TaskStats:
    """Reward history per task id, in memory (``path=None``) or persistent in a SQLite file.

    Args:
        path: the SQLite file (created if missing; may be the replay buffer's file), or ``None``.
        window: how many recent rewards a task's variance is computed over.

    :attr:`step` is the episode clock: it counts recorded episodes, unless callers pass their own
    ``step`` (e.g. the training iteration), which then becomes the clock. Generated tasks are
    stored here too (:meth:`add_generated`), so that a resumed run finds them again.
    Safe to share between threads (a background task generator writes its tasks here).
    """

    def __init__(self, path: str | Path | None = None, *, window: int = DEFAULT_WINDOW) -> None:
        if window < 1:
            raise ConfigurationError(f"window must be >= 1, got {window}")
        self.path = Path(path) if path is not None else None
        self.window = window
        self.step = 0
        self._records: dict[str, TaskRecord] = {}
        self._generated: dict[str, Task] = {}
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        if self.path is not None:
            self._open(self.path)

    # -- persistence -------------------------------------------------------------------------
    def _open(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            meta = dict(db.execute("SELECT key, value FROM curriculum_meta").fetchall())
            version = meta.get("schema_version", SCHEMA_VERSION)
            if version != SCHEMA_VERSION:
                raise DataError(f"{path}: curriculum tables of schema {version}, expected {SCHEMA_VERSION}")
            db.execute(
                "INSERT OR IGNORE INTO curriculum_meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
            )
            self.step = int(meta.get("step", 0))
            for row in db.execute("SELECT * FROM curriculum_tasks"):
                task_id, episodes, successes, reward_sum, recent, first, last = row
                self._records[task_id] = TaskRecord(
                    task_id,
                    self.window,
                    episodes,
                    successes,
                    reward_sum,
                    deque(json.loads(recent)),
                    first,
                    last,
                )
            for (text,) in db.execute("SELECT task FROM curriculum_generated ORDER BY rowid"):
                task = Task.model_validate_json(text)
                self._generated[task.id] = task
        except (sqlite3.Error, ValueError) as exc:
            raise DataError(f"cannot open curriculum statistics in {path}: {exc}") from exc
        self._db = db

    def _save(self, records: Iterable[TaskRecord]) -> None:
        if self._db is None:
            return
        rows = [
            (
                r.task_id,
                r.episodes,
                r.successes,
                r.reward_sum,
                json.dumps(list(r.recent)),
                r.first_step,
                r.last_step,
            )
            for r in records
        ]
        with self._db:  # one transaction
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO curriculum_tasks VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            self._db.execute("INSERT OR REPLACE INTO curriculum_meta VALUES ('step', ?)", (str(self.step),))

    def close(self) -> None:
        """Close the database (records stay readable in memory)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> TaskStats:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- recording ---------------------------------------------------------------------------
    def record(self, task_id: str, reward: float, *, step: int | None = None) -> TaskRecord:
        """Record one finished episode of ``task_id`` with return ``reward``."""
        return self.record_many([(task_id, reward)], step=step)[0]

    def record_group(self, task_id: str, rewards: Sequence[float], *, step: int | None = None) -> TaskRecord:
        """Record a group of rollouts of one task (e.g. a GRPO group), in one transaction."""
        if not rewards:
            raise ConfigurationError(f"record_group({task_id!r}) got no rewards")
        return self.record_many([(task_id, r) for r in rewards], step=step)[-1]

    def record_many(
        self, episodes: Iterable[tuple[str, float]], *, step: int | None = None
    ) -> list[TaskRecord]:
        """Record finished episodes ``(task_id, return)``, in one transaction.

        Without ``step`` each episode advances the episode clock by one; with ``step`` all of
        them are recorded at that step (and the clock moves to it).
        """
        with self._lock:
            touched: list[TaskRecord] = []
            for task_id, reward in episodes:
                value = float(reward)
                if not math.isfinite(value):
                    raise ConfigurationError(f"reward of task {task_id!r} is not finite: {reward!r}")
                if step is None:
                    self.step += 1
                else:
                    self.step = max(self.step, step)
                record = self._records.get(task_id)
                if record is None:
                    record = self._records[task_id] = TaskRecord(task_id, self.window)
                record.add(value, self.step if step is None else step)
                touched.append(record)
            self._save({id(r): r for r in touched}.values())
            return touched

    # -- generated tasks ---------------------------------------------------------------------
    def add_generated(self, tasks: Iterable[Task]) -> None:
        """Keep generated tasks (persisted with the statistics)."""
        with self._lock:
            new = [t for t in tasks if t.id not in self._generated]
            for task in new:
                self._generated[task.id] = task
            if self._db is not None and new:
                with self._db:
                    self._db.execute("BEGIN")
                    self._db.executemany(
                        "INSERT OR REPLACE INTO curriculum_generated VALUES (?, ?, ?, ?)",
                        [(t.id, t.parent_id, self.step, t.model_dump_json()) for t in new],
                    )

    @property
    def generated(self) -> list[Task]:
        """The generated tasks kept so far, oldest first."""
        with self._lock:
            return list(self._generated.values())

    # -- queries -----------------------------------------------------------------------------
    def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``, or ``None`` if it was never recorded."""
        return self._records.get(task_id)

    def variance(self, task_id: str) -> float:
        """Reward variance of ``task_id`` over its recent window (0 if never recorded)."""
        record = self._records.get(task_id)
        return record.variance if record is not None else 0.0

    def episodes(self, task_id: str) -> int:
        """How many episodes of ``task_id`` were recorded."""
        record = self._records.get(task_id)
        return record.episodes if record is not None else 0

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._records

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[TaskRecord]:
        with self._lock:
            return iter(list(self._records.values()))

    def __repr__(self) -> str:
        where = str(self.path) if self.path is not None else "memory"
        return f"TaskStats({where}, tasks={len(self)}, step={self.step}, generated={len(self._generated)})"
