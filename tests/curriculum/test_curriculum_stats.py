from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dreamgym_env.curriculum import TaskStats, reward_variance
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.types import Task


@pytest.mark.parametrize(
    ("rewards", "expected"),
    [
        ([0.0] * 8, 0.0),
        ([1.0] * 8, 0.0),
        ([0.0, 1.0] * 4, 0.25),
        ([1.0, 1.0, 0.0, 0.0], 0.25),
        ([0.0, 0.0, 0.0, 1.0], 0.1875),
        ([], 0.0),
        ([0.5], 0.0),
    ],
)
def test_variance_of_hand_made_groups(rewards, expected):
    assert reward_variance(rewards) == expected


@given(st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), min_size=1, max_size=64))
def test_variance_is_the_population_variance(rewards):
    assert math.isclose(reward_variance(rewards), float(np.var(rewards)), abs_tol=1e-12)


def test_records_count_and_window():
    stats = TaskStats(window=4)
    stats.record_group("a", [1, 1, 1, 1])
    record = stats.record_group("a", [0, 1, 0, 1])
    assert record.episodes == 8 and record.successes == 6
    assert list(record.recent) == [0, 1, 0, 1] and record.variance == 0.25  # the old group left the window
    assert record.mean_reward == 0.75 and record.success_rate == 0.75
    stats.record("b", 0.0)
    assert stats.step == 9 and stats.get("b").first_step == 9 and stats.get("a").last_step == 8
    assert stats.variance("never") == 0.0 and stats.episodes("never") == 0 and "never" not in stats


def test_caller_step_becomes_the_clock():
    stats = TaskStats()
    stats.record_many([("a", 1.0), ("b", 0.0)], step=100)
    assert stats.step == 100 and stats.get("a").last_step == 100 == stats.get("b").first_step


def test_bad_inputs_are_refused():
    with pytest.raises(ConfigurationError):
        TaskStats(window=0)
    stats = TaskStats()
    with pytest.raises(ConfigurationError, match="not finite"):
        stats.record("a", float("nan"))
    with pytest.raises(ConfigurationError):
        stats.record_group("a", [])


def test_persists_across_reopen(tmp_path):
    path = tmp_path / "buffer.db"
    generated = Task(id="g1", domain="webshop", instruction="buy a thing", initial_state="s", parent_id="p")
    with TaskStats(path, window=4) as stats:
        stats.record_group("a", [0, 1, 1, 0, 1])
        stats.record("b", 1.0)
        stats.add_generated([generated])
    with TaskStats(path, window=4) as again:
        record = again.get("a")
        assert record is not None and record.episodes == 5 and list(record.recent) == [1, 1, 0, 1]
        assert again.step == 6 and len(again) == 2
        assert again.generated == [generated]


def test_shares_a_file_with_other_tables(tmp_path):
    import sqlite3

    path = tmp_path / "buffer.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE transitions (id INTEGER PRIMARY KEY, state TEXT)")
        db.execute("INSERT INTO transitions (state) VALUES ('kept')")
    with TaskStats(path) as stats:
        stats.record("a", 1.0)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT state FROM transitions").fetchall() == [("kept",)]


def test_unreadable_file_is_a_data_error(tmp_path):
    path = tmp_path / "broken.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DataError, match="curriculum statistics"):
        TaskStats(path)
