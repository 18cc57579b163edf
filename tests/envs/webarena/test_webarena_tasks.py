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
        assert task.domain == "webarena" and f"\nURL: {meta['start_url']}\n" in f"{task.initial_state}\n"
        assert meta["kind"] in ("info", "state", "navigation") and meta["data_seed"] == 0
        kinds = meta["eval"]["eval_types"]
        if meta["kind"] == "state":
            assert kinds[-1] in ("program_state", "program_html")
            assert kinds[-1] == "program_html" or meta["eval"]["program"]["check"] in CHECKS
        else:
            assert set(kinds) <= {"string_match", "url_match"}


def test_the_mix_of_evaluators_is_near_the_real_812():
    """config_files/test.raw.json (evaluation_harness/evaluators.py ``evaluator_router`` reads eval_types): 40 % string_match alone, 51 % program_html (a third of them with
    url_match), 8 % url_match alone, 1 % string+url; 36 of 812 (4.4 %) unachievable ("N/A")."""
    every = (*load_tasks().train, *load_tasks().test)
    kinds = Counter(tuple(t.metadata["eval"]["eval_types"]) for t in every)
    share = {k: v / len(every) for k, v in kinds.items()}
    program = sum(v for k, v in share.items() if k[-1] in ("program_state", "program_html"))
    assert 0.35 <= share[("string_match",)] <= 0.55 and 0.35 <= program <= 0.55
    assert 0.05 <= share[("url_match",)] <= 0.12 and ("url_match", "string_match") in kinds
    unachievable = sum(
        t.metadata["eval"].get("reference_answers", {}).get("fuzzy_match") == "N/A" for t in every
    )
    assert 0.03 <= unachievable / len(every) <= 0.07
