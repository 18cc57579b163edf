from __future__ import annotations

from collections import Counter

from dreamgym_env.envs.webarena.domain import WebArenaDomain
from dreamgym_env.envs.webarena.evaluators import CHECKS
from dreamgym_env.envs.webarena.tasks import TEST_SIZE, generate_tasks, load_tasks
from dreamgym_env.envs.webarena.templates import TEMPLATES
from dreamgym_env.envs.webarena.world import SITES, load_data


def test_enough_tasks_and_a_fixed_disjoint_test_split():
    tasks = load_tasks()
    assert len(tasks.train) + len(tasks.test) >= 800
    assert len(tasks.test) == TEST_SIZE == 165
    assert not {t.id for t in tasks.train} & {t.id for t in tasks.test}
    assert not {t.instruction for t in tasks.train} & {t.instruction for t in tasks.test}
    assert tasks.test[0].id == "webarena-test-0000" and tasks.train[-1].id.startswith("webarena-train-")
    assert WebArenaDomain().tasks("test") == tasks.test


def test_tasks_are_deterministic_per_seed_and_differ_across_seeds():
    again = generate_tasks(0)
    assert [t.model_dump() for t in again.test] == [t.model_dump() for t in load_tasks().test]
    other = generate_tasks(1)
    assert other.test[0].id.startswith("webarena-s1-test-")
    assert {t.instruction for t in other.test} != {t.instruction for t in again.test}


def test_seeded_data_is_reproducible():
    a, b = load_data(0), load_data.__wrapped__(0)
    assert a == b
    assert load_data.__wrapped__(1).store.products != a.store.products


def test_every_site_and_template_has_tasks_and_metadata():
    tasks = load_tasks()
    every = (*tasks.train, *tasks.test)
    assert set(Counter(t.metadata["site"] for t in tasks.test)) == set(SITES)
    assert {t.metadata["template"] for t in every} == {t.id for t in TEMPLATES}
    for task in every[::37]:
        meta = task.metadata
        assert task.domain == "webarena" and task.initial_state.split("\n")[1] == f"URL: {meta['start_url']}"
        assert meta["kind"] in ("info", "state", "navigation") and meta["data_seed"] == 0
        if meta["kind"] == "state":
            assert meta["eval"]["eval_types"] == ["program_state"] and meta["eval"]["program"]["check"] in CHECKS
        else:
            assert meta["eval"]["eval_types"][0] in ("string_match", "url_match")
