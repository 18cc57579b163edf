from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.bench.fidelity import (
    FidelityReport,
    action_type,
    fidelity_by_action,
    measure_fidelity,
    normalize_state,
    reference_transitions,
    score_transitions,
    summarize,
)
from dreamgym_env.bench.fidelity_runs import run_recorded
from dreamgym_env.bench.sampling import as_text, recorded_samples
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.errors import ConfigurationError, ModelOutputError
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import Transition


@pytest.fixture(scope="module")
def references():
    env = WebShopRefEnv(split="test", max_steps=15)
    trajectories = collect_trajectories(env, make_policy("noisy", "webshop", seed=4), 150, progress=False)
    return reference_transitions(trajectories, "webshop")




def measure(references, **kwargs) -> FidelityReport:
    model = OracleExperienceModel("webshop", **kwargs)
    try:
        return measure_fidelity(model, references)
    finally:
        model.close()


def test_reference_transitions_mirror_the_synthetic_env_requests():
    env = WebShopRefEnv(split="test", max_steps=15)
    trajectory = collect_trajectories(
        env, make_policy("noisy", "webshop", seed=0, epsilon=0.5), 5, progress=False
    )[0]
    refs = reference_transitions([trajectory], "webshop", history_len=2)
    valid = [s for s in trajectory.steps if s.action_valid]
    assert len(refs) == len(valid)
    assert len(reference_transitions([trajectory], "webshop", include_invalid=True)) == len(trajectory.steps)
    for ref, step in zip(refs, valid, strict=True):
        assert (ref.request.state, ref.request.action) == (step.state, step.action)
        assert ref.truth.next_state == step.next_state and ref.truth.terminated == step.done
        assert len(ref.request.history) <= 2
    assert refs[1].request.history[-1] == trajectory.steps[trajectory.steps.index(valid[1]) - 1]


def test_the_oracle_scores_one(references):
    report = measure(references)
    assert report.n == len(references) > 500
    figures = report.to_dict()
    for name in ("exact_match", "similarity", "reward_agreement", "done_agreement", "accuracy", "valid"):
        assert figures[name] == 1.0, name
    assert report.reward_precision == report.reward_recall == 1.0 and report.admissible_jaccard == 1.0
    # "always reward 0, not done" agrees on the steps that are not a purchase: most of them
    assert 0.8 < report.always_zero_reward < 1.0 and 0.8 < report.always_zero_done < 1.0


def test_the_oracle_with_error_rate_0_2_scores_about_0_8(references):
    report = measure(references, error_rate=0.2, seed=0)
    assert report.accuracy == pytest.approx(0.8, abs=0.05)
    assert 0.8 <= report.exact_match < 0.95
    assert report.exact_match < report.similarity < 1.0
    assert report.reward_agreement < 1.0
    assert "accuracy" in str(report)


def test_a_model_that_never_moves_scores_low(references):
    model = ScriptedExperienceModel(lambda request: Transition(next_state=request.state))
    try:
        report = measure_fidelity(model, references[:200])
    finally:
        model.close()
    assert report.exact_match < 0.1 and 0.2 < report.similarity < 0.9


def test_normalize_state_and_bad_arguments(references):
    assert normalize_state("  a   b \n\n c  ") == "a b\nc"
    model = OracleExperienceModel("webshop")
    try:
        with pytest.raises(ConfigurationError):
            measure_fidelity(model, [])
        with pytest.raises(ConfigurationError):
            measure_fidelity(model, references, batch_size=0)
    finally:
        model.close()
    with pytest.raises(ConfigurationError):
        reference_transitions([], "webshop", history_len=-1)


def test_structured_fidelity_reports_every_field():
    domain = get_domain("alfworld")
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    policy = make_policy("noisy", domain, seed=0)
    trajectories = collect_trajectories(env, policy, 6, progress=False, state_mode="structured")
    references = reference_transitions(trajectories, domain, history_len=domain.max_episode_steps)
    assert all(r.request.state_schema == domain.state_json_schema for r in references)
    perfect = measure_fidelity(OracleExperienceModel(domain), references)
    assert perfect.kind_agreement == perfect.admissible_jaccard == perfect.exact_match == 1.0
    assert set(perfect.fields) == set(
        type(domain.initial_abstract_state(references[0].request.task)).model_fields
    )
    assert all(value == 1.0 for value in perfect.fields.values())
    corrupted = measure_fidelity(OracleExperienceModel(domain, error_rate=0.5, seed=1), references)
    assert corrupted.reward_agreement < 1.0 and min(corrupted.fields.values()) < 1.0


class FailingModel(ScriptedExperienceModel):
    async def predict(self, requests):
        if len(requests) > 1 or "take" in requests[0].action:
            raise ModelOutputError("no transition in that answer")
        return await super().predict(requests)


def test_failed_answers_count_as_invalid_and_wrong(alfworld_expert):
    _, references, _ = alfworld_expert
    takes = sum("take" in r.request.action for r in references)
    model = FailingModel(lambda request: Transition(next_state=request.state))
    report = measure_fidelity(model, references)
    assert 0 < takes < len(references)
    assert report.valid == pytest.approx(1 - takes / len(references))
    assert report.accuracy <= report.valid


def test_the_rubric_repairs_flipped_purchase_rewards():
    domain = get_domain("webshop")
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    trajectories = collect_trajectories(
        env, make_policy("noisy", domain, seed=0), 30, progress=False, state_mode="structured"
    )
    references = reference_transitions(trajectories, domain)
    report = measure_fidelity(OracleExperienceModel(domain, error_rate=0.3, seed=2), references)
    # a flipped reward on a true purchase page is undone by scoring the page itself
    assert (
        report.rubric_reward_agreement is not None
        and report.rubric_reward_agreement > report.reward_agreement
    )


def test_action_types_are_the_verbs_of_the_domain_grammar():
    webshop, alfworld = get_domain("webshop"), get_domain("alfworld")
    assert action_type(webshop, "search[red shoes]") == "search"
    assert action_type(webshop, "click[Buy Now]") == "click"
    assert action_type(webshop, "fly away") == "invalid"
    assert action_type(alfworld, "go to desk 1") == "go"


def test_fidelity_by_action_type_on_known_outcomes(alfworld_expert):
    """Right on every step but ``take``, where the model fails: each action type's report says so."""
    domain, references, truths = alfworld_expert

    def respond(request):
        if request.action.startswith("take"):
            raise ModelOutputError("no transition in that answer")
        return truths[(request.task.id, request.state, request.action)]

    scores = score_transitions(ScriptedExperienceModel(respond), references, batch_size=1)
    counts = Counter(domain.parse_action(r.request.action).verb for r in references)
    by_action = fidelity_by_action(scores)
    assert {name: report.n for name, report in by_action.items()} == counts
    assert list(by_action) == sorted(counts, key=lambda name: (-counts[name], name))
    take = by_action.pop("take")
    assert take.valid == take.accuracy == take.exact_match == 0.0 and take.invalid_output == 1.0
    assert set(take.fields.values()) == {0.0}
    for name, report in by_action.items():
        assert report.accuracy == report.valid == 1.0 and report.invalid_output == 0.0, name
        assert set(report.fields.values()) == set(report.field_similarity.values()) == {1.0}, name
    overall = summarize(scores)
    assert overall.accuracy == pytest.approx(1 - counts["take"] / len(references))
    again = measure_fidelity(ScriptedExperienceModel(respond), references, domain=domain, batch_size=1)
    assert replace(overall, latency_s=0.0) == replace(again, latency_s=0.0)
    failed = next(s for s in scores if s.action_type == "take")
    assert failed.predicted is None and "no transition in that answer" in (failed.error or "")


def test_field_similarity_is_partial_credit_for_a_wrong_field():
    domain = get_domain("webshop")
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    trajectories = collect_trajectories(
        env, make_policy("noisy", domain, seed=1), 12, progress=False, state_mode="structured"
    )
    references = reference_transitions(trajectories, domain)
    report = measure_fidelity(OracleExperienceModel(domain, error_rate=0.5, seed=3), references)
    assert set(report.field_similarity) == set(report.fields)
    assert all(report.field_similarity[f] >= report.fields[f] for f in report.fields)
    assert any(report.fields[f] < report.field_similarity[f] < 1.0 for f in report.fields)


def test_the_rubric_decides_the_end_where_episodes_end_at_a_win(alfworld_expert):
    domain, references, truths = alfworld_expert

    def says_done_every_step(request):  # the right state, wrongly judged over (as the 0.5B model does)
        truth = truths[(request.task.id, request.state, request.action)]
        return Transition(next_state=truth.next_state, reward=1.0, terminated=True)

    report = measure_fidelity(ScriptedExperienceModel(says_done_every_step), references)
    ends = sum(r.truth.terminated for r in references)
    assert 0 < ends < len(references)
    assert report.done_agreement == pytest.approx(ends / len(references))
    assert report.rubric_done_agreement == report.rubric_reward_agreement == 1.0
    webshop = measure_fidelity(
        OracleExperienceModel("webshop"),
        reference_transitions(
            collect_trajectories(
                WebShopRefEnv(split="test", max_steps=15),
                make_policy("expert", "webshop"),
                2,
                progress=False,
                state_mode="structured",
            ),
            "webshop",
        ),
    )
    assert webshop.rubric_done_agreement is None  # WebShop ends at its buy button, not at a win


def test_prompt_tokens_evaluated_leave_out_the_ones_served_from_the_kv_cache(references):
    from dreamgym_env.types import Usage

    def cached(request):
        return Transition(next_state=request.state, usage=Usage(prompt_tokens=1000, cached_prompt_tokens=600))

    model = ScriptedExperienceModel(cached)
    try:
        report = measure_fidelity(model, references[:8])
    finally:
        model.close()
    assert (report.prompt_tokens, report.evaluated_prompt_tokens) == (1000, 400)


def test_recorded_samples_are_valid_steps_in_file_order():
    domain = get_domain("webshop")
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    trajectories = collect_trajectories(
        env, make_policy("noisy", domain, seed=5, epsilon=0.5), 4, progress=False, state_mode="structured"
    )
    first = trajectories[1].steps[0]
    rejected = first.model_copy(
        update={"action": "fly away", "next_state": first.state, "action_valid": False}
    )
    trajectories[1] = trajectories[1].model_copy(update={"steps": [rejected, *trajectories[1].steps]})
    every = recorded_samples(trajectories, domain)
    valid = [(e, i) for e, t in enumerate(trajectories) for i, s in enumerate(t.steps) if s.action_valid]
    assert [(s.episode, s.step) for s in every] == valid and len(valid) < sum(
        len(t.steps) for t in trajectories
    )
    assert all(s.reference.request.action == trajectories[s.episode].steps[s.step].action for s in every)
    assert all(not s.reference.request.given_fields for s in every)  # supply "none" by default
    drawn = recorded_samples(trajectories, domain, 5, seed=1)
    assert len(drawn) == 5 and [s for s in every if s in drawn] == drawn
    mixed = every[:2] + recorded_samples([as_text(domain, trajectories[0])], domain)
    with pytest.raises(ConfigurationError, match="mix structured and text"):
        run_recorded(OracleExperienceModel(domain), domain, mixed)
    with pytest.raises(ConfigurationError, match="no valid step"):
        recorded_samples([], domain)
