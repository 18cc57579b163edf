from __future__ import annotations

from collections import Counter

import pytest

from dreamgym_env.curriculum import Curriculum, GeneratedShare, TaskClusters, TaskScore, VarianceSelector
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task


def make_tasks(n: int, prefix: str = "t", parent: str | None = None) -> list[Task]:
    return [
        Task(
            id=f"{prefix}{i}",
            domain="webshop",
            instruction=f"task number {i}",
            initial_state="s",
            parent_id=parent,
        )
        for i in range(n)
    ]


def test_choice_prefers_high_variance():
    scores = [TaskScore(0.0, 8)] * 8 + [TaskScore(0.25, 8), TaskScore(0.1875, 8)]
    selector = VarianceSelector(explore=0.1, seed=0)
    counts = Counter(selector.choose(scores, 1)[0] for _ in range(4000))
    assert counts[8] > counts[9] > max(counts[i] for i in range(8))
    assert counts[8] / 4000 > 0.45  # 0.9 * 0.25 / 0.4375 = 0.51 expected
    assert sum(counts[i] for i in range(8)) / 4000 < 0.15  # only the exploration share


def test_untried_tasks_get_tried():
    scores = [TaskScore(0.25, 10)] * 5 + [TaskScore(0.0, 0)] * 5
    selector = VarianceSelector(explore=0.2, seed=1)
    drawn = {selector.choose(scores, 1)[0] for _ in range(200)}
    assert set(range(5, 10)) <= drawn
    # a task with fewer than min_episodes episodes is not trusted: V = 0 there does not bury it
    fresh = [TaskScore(0.0, 0)] * 6
    assert set(VarianceSelector(seed=2).choose(fresh, 6)) == set(range(6))


def test_distinct_within_a_batch():
    scores = [TaskScore(0.25, 4), TaskScore(0.0, 4), TaskScore(0.0, 4)]
    chosen = VarianceSelector(seed=0).choose(scores, 5)
    assert sorted(chosen[:3]) == [0, 1, 2] and len(chosen) == 5
    assert VarianceSelector(seed=0).choose(scores, 5) == chosen  # seeded
    assert VarianceSelector(seed=0).choose([], 0) == []
    with pytest.raises(ConfigurationError):
        VarianceSelector(seed=0).choose([], 1)


def test_seeds_rank_by_variance_and_break_ties_by_seed():
    scores = [
        TaskScore(0.25, 4),
        TaskScore(0.1875, 4),
        TaskScore(0.25, 4),
        TaskScore(0.0, 4),
        TaskScore(0.25, 1),
    ]
    first = VarianceSelector(seed=0).seeds(scores, 3)
    assert set(first[:2]) == {0, 2} and first[2] == 1  # index 4 is unexplored, index 3 has V = 0
    assert VarianceSelector(seed=0).seeds(scores, 3) == first
    orders = {tuple(VarianceSelector(seed=s).seeds(scores, 2)) for s in range(20)}
    assert orders == {(0, 2), (2, 0)}


@pytest.mark.parametrize("n", [1, 3, 8, 64])
def test_generated_share_never_exceeds_lambda(n):
    share = GeneratedShare(0.3)
    for _ in range(300):
        share.quota(n, available=100)
        assert share.generated <= 0.3 * share.handed_out + 1e-9
    assert share.share == pytest.approx(0.3, abs=1 / share.handed_out + 0.01)


def test_generated_share_drops_unused_quota():
    share = GeneratedShare(0.5)
    for _ in range(100):
        assert share.quota(4, available=0) == 0
    assert share.quota(4, available=100) == 2  # no burst from the batches without generated tasks
    with pytest.raises(ConfigurationError):
        GeneratedShare(1.5)


def test_curriculum_respects_lambda_over_many_resets():
    curriculum = Curriculum(make_tasks(20), lam=0.25, seed=0)
    assert curriculum.choose(8) and not any(t.parent_id for t in curriculum.choose(8))
    curriculum.add_generated(make_tasks(10, prefix="g", parent="t0"))
    handed = generated = 0
    for _ in range(200):
        batch = curriculum.choose(8)
        handed += len(batch)
        generated += sum(t.parent_id is not None for t in batch)
        assert generated <= 0.25 * (handed + 16)  # the 16 handed out before any was generated
    assert generated / handed == pytest.approx(0.25, abs=0.01)
    single = [curriculum.choose(1)[0].parent_id is not None for _ in range(400)]
    assert sum(single) == pytest.approx(100, abs=1)


def test_curriculum_concentrates_on_high_variance_tasks():
    tasks = make_tasks(12)
    curriculum = Curriculum(tasks, explore=0.2, seed=3)
    for task in tasks:
        curriculum.record_group(task, [0.0, 1.0] * 4 if task.id in ("t3", "t7") else [1.0] * 8)
    counts = Counter(curriculum.choose(1)[0].id for _ in range(1000))
    assert (counts["t3"] + counts["t7"]) / 1000 > 0.75
    assert {t.id for t in curriculum.seeds(4)} == {"t3", "t7"}


def test_cluster_grouping_pools_similar_tasks():
    shirts = [
        Task(id=f"s{i}", domain="webshop", instruction=f"a red cotton shirt size {i}", initial_state="x")
        for i in range(4)
    ]
    lamps = [
        Task(id=f"l{i}", domain="webshop", instruction=f"a brass desk lamp with {i} bulbs", initial_state="x")
        for i in range(4)
    ]
    assert Curriculum(shirts + lamps, grouping="cluster", seed=0).grouping.num_clusters == 3  # about sqrt(8)
    clusters = TaskClusters(shirts + lamps, 2)
    assert len({clusters.key(t) for t in shirts}) == 1 and clusters.key(shirts[0]) != clusters.key(lamps[0])
    curriculum = Curriculum(shirts + lamps, grouping=clusters, seed=0)
    curriculum.record("s0", 1.0)
    curriculum.record("s1", 0.0)  # one episode each: as groups, the shirts have V = 0.25
    assert curriculum.variance("s3") == 0.25 and curriculum.score("s2").episodes == 2
    assert curriculum.variance("l0") == 0.0
    assert curriculum.seeds(2)[0].id in ("s0", "s1")
