"""Benchmark runs: baselines on the reference env, batching on synthetic ids, gaps, invalid outputs."""

from __future__ import annotations

import re

import pytest

from dreamgym_env.agents import ExpertAgent, LLMAgent, RandomAgent, make_chat_client
from dreamgym_env.bench.episodes import BenchResult, EpisodeRecord, run_bench, sim_to_real_gaps
from dreamgym_env.bench.report import markdown_report, report_data
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.errors import ConfigurationError, ModelOutputError, ModelTimeoutError, UnknownNameError
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer
from dreamgym_env.testing.replies import ok

REF, SYN = "DreamGym/WebShop-Ref-v0", "DreamGym/WebShop-v0"


@pytest.fixture(scope="module")
def oracle():
    model = OracleExperienceModel("webshop")
    yield model
    model.close()


def test_expert_succeeds_and_random_fails_on_the_reference_webshop():
    expert = run_bench(ExpertAgent("webshop"), REF, 40, seed=0, num_envs=4, progress=False)
    random = run_bench(RandomAgent(), REF, 40, seed=0, num_envs=4, progress=False)
    assert expert.episodes == random.episodes == 40
    assert expert.success_rate >= 0.9 and random.success_rate <= 0.05
    assert expert.ci_low <= expert.success_rate <= expert.ci_high
    assert expert.invalid_output_rate == 0.0 and expert.agent_tokens == 0
    assert expert.mean_steps < random.mean_steps <= 15
    assert [r.index for r in expert.records] == list(range(40))


def test_the_same_seed_plays_the_same_tasks_whatever_the_batch():
    one = run_bench(RandomAgent(), REF, 12, seed=3, num_envs=1, progress=False)
    five = run_bench(RandomAgent(), REF, 12, seed=3, num_envs=5, progress=False)
    other = run_bench(RandomAgent(), REF, 12, seed=4, num_envs=1, progress=False)
    assert [r.task_id for r in one.records] == [r.task_id for r in five.records]
    assert [(r.steps, r.reward) for r in one.records] == [(r.steps, r.reward) for r in five.records]
    assert [r.task_id for r in one.records] != [r.task_id for r in other.records]


def test_synthetic_id_with_the_oracle_matches_the_reference_and_reports_the_gap(oracle):
    results = [
        run_bench(agent, env_id, 8, seed=1, num_envs=4, progress=False, **kwargs)
        for agent in (ExpertAgent("webshop"), RandomAgent())
        for env_id, kwargs in ((REF, {}), (SYN, {"experience_model": oracle}))
    ]
    expert_ref, expert_syn, random_ref, random_syn = results
    assert expert_syn.experience_model == "oracle" and expert_ref.experience_model is None
    assert [r.task_id for r in expert_syn.records] == [r.task_id for r in expert_ref.records]
    assert expert_syn.success_rate == expert_ref.success_rate == 1.0
    gaps = sim_to_real_gaps(results)
    assert [(g.agent, g.synthetic_id, g.reference_id) for g in gaps] == [
        ("expert", SYN, REF),
        ("random", SYN, REF),
    ]
    assert gaps[0].gap == 0.0 and gaps[1].gap == random_syn.success_rate - random_ref.success_rate
    table = markdown_report(results)
    assert "| expert | DreamGym/WebShop-v0 | oracle | 8 | 1.000 [" in table and "| Gap |" in table
    data = report_data(results)
    assert len(data["results"]) == 4 and len(data["sim_to_real_gaps"]) == 2


def test_synthetic_steps_of_all_lanes_go_to_the_model_as_one_batch(page_after):
    model = ScriptedExperienceModel(page_after, latency_s=0.001)
    try:
        result = run_bench(
            RandomAgent(),
            SYN,
            8,
            seed=0,
            num_envs=4,
            experience_model=model,
            progress=False,
            env_kwargs={"state_mode": "text"},
        )
    finally:
        model.close()
    assert result.episodes == 8 and model.calls > 0
    assert model.peak_in_flight == 4 and model.batches < model.calls


def _failing_on(task_id, error, otherwise):
    def respond(request):
        if request.task.id == task_id:
            raise error
        return otherwise(request)

    return respond


@pytest.mark.parametrize("num_envs", [1, 4])
def test_an_episode_whose_model_fails_is_counted_as_errored_and_the_run_goes_on(num_envs, page_after):
    def bench(respond):
        model = ScriptedExperienceModel(respond)
        try:
            return run_bench(
                RandomAgent(),
                SYN,
                6,
                seed=0,
                num_envs=num_envs,
                experience_model=model,
                progress=False,
                env_kwargs={"state_mode": "text"},
            )
        finally:
            model.close()

    healthy = bench(page_after)
    doomed = healthy.records[2].task_id
    failure = ModelOutputError("the model kept answering prose", output="Sure! Here is the page")
    result = bench(_failing_on(doomed, failure, page_after))
    assert result.episodes == 6 and result.errored == 1 and result.errored_rate == pytest.approx(1 / 6)
    assert result.errors == {"ModelOutputError": 1} and healthy.errored == 0
    errored = result.records[2]
    assert errored.errored and not errored.won and errored.error_type == "ModelOutputError"
    assert errored.error is not None and "the model kept answering prose" in errored.error
    assert errored.steps == 0  # the very first model call of the episode failed
    others = [r for r in result.records if r.index != 2]
    assert not any(r.errored for r in others)
    assert [(r.steps, r.reward, r.won) for r in others] == [
        (r.steps, r.reward, r.won) for r in healthy.records if r.index != 2
    ]
    assert "| 1 (16.7%) |" in markdown_report([result])
    data = report_data([result], episodes=False)["results"][0]
    assert (data["errored"], data["errors"]) == (1, {"ModelOutputError": 1})
    assert report_data([result])["results"][0]["records"][2]["error_type"] == "ModelOutputError"


def test_timeouts_error_episodes_but_misuse_still_raises(page_after):
    healthy = run_bench(RandomAgent(), REF, 2, seed=0, progress=False)
    doomed = healthy.records[0].task_id
    timeout = ModelTimeoutError("the endpoint did not answer in time", backend="b", attempts=3)
    model = ScriptedExperienceModel(_failing_on(doomed, timeout, page_after))
    try:
        result = run_bench(
            RandomAgent(),
            SYN,
            2,
            seed=0,
            num_envs=2,
            experience_model=model,
            progress=False,
            env_kwargs={"state_mode": "text"},
        )
    finally:
        model.close()
    assert [r.error_type for r in result.records] == ["ModelTimeoutError", None]
    misuse = ScriptedExperienceModel(_failing_on(doomed, ConfigurationError("bad settings"), page_after))
    try:
        with pytest.raises(ConfigurationError, match="bad settings"):
            run_bench(
                RandomAgent(),
                SYN,
                2,
                seed=0,
                num_envs=2,
                experience_model=misuse,
                progress=False,
                env_kwargs={"state_mode": "text"},
            )
    finally:
        misuse.close()


def test_max_steps_caps_episodes_below_the_id_limit_and_cut_episodes_are_not_won():
    capped = run_bench(ExpertAgent("webshop"), REF, 6, seed=0, num_envs=3, progress=False, max_steps=2)
    full = run_bench(ExpertAgent("webshop"), REF, 6, seed=0, num_envs=3, progress=False)
    assert full.success_rate == 1.0 and min(r.steps for r in full.records) > 2
    assert all(r.steps == 2 and r.truncated and not r.won for r in capped.records)
    assert (capped.max_steps, capped.step_limit, full.max_steps, full.step_limit) == (2, 2, None, 15)
    above = run_bench(RandomAgent(), REF, 2, seed=0, progress=False, max_steps=40)
    assert above.step_limit == 15 and max(r.steps for r in above.records) <= 15
    table = markdown_report([capped, full])
    assert table.startswith("Episodes capped at 2 step(s)")
    assert re.search(r"\| expert \| DreamGym/WebShop-Ref-v0 \| - \| 6 \| 0\.000 \[.*\| 2 \|", table)
    assert report_data([capped])["results"][0]["max_steps"] == 2
    with pytest.raises(ConfigurationError, match="max_steps"):
        run_bench(RandomAgent(), REF, 1, progress=False, max_steps=0)


def test_llm_agent_invalid_outputs_are_counted_not_crashed_on():
    def respond(body):
        # A valid answer on the first step of an episode, then text without tags.
        user = body["messages"][1]["content"]
        return ok("no tags here") if "# Recent steps" in user else ok("<action>search[pet bed]</action>")

    with ScriptedOpenAIServer(responder=respond) as server:
        chat = make_chat_client("scripted-model", base_url=server.url)
        try:
            result = run_bench(LLMAgent("webshop", chat), REF, 2, seed=0, num_envs=2, progress=False)
        finally:
            chat.close()
    assert result.success_rate == 0.0 and result.mean_steps == 15  # truncated at the step limit
    assert result.invalid_output_rate == pytest.approx(14 / 15)
    assert result.invalid_action_rate == pytest.approx(14 / 15)  # the fallback is rejected by the env
    assert result.agent_tokens > 0 and result.agent == "llm:scripted-model"


def test_bad_arguments_are_refused(oracle):
    with pytest.raises(UnknownNameError, match="Did you mean 'DreamGym/WebShop-Ref-v0'"):
        run_bench(RandomAgent(), "DreamGym/WebShop-Rf-v0", 1, progress=False)
    with pytest.raises(ConfigurationError, match="reference env"):
        run_bench(RandomAgent(), REF, 1, experience_model=oracle, progress=False)
    with pytest.raises(ConfigurationError, match="episodes"):
        run_bench(RandomAgent(), REF, 0, progress=False)


def test_aggregates_are_per_episode_and_per_step():
    records = [
        EpisodeRecord(0, "a", 0, True, 1.0, 2, False, 1, 0, 10, 0),
        EpisodeRecord(1, "b", 1, False, 0.0, 6, True, 1, 3, 30, 5),
    ]
    result = BenchResult.from_records(
        records, env_id=REF, agent="x", experience_model=None, split="test", seed=0, seconds=1.0
    )
    assert (result.successes, result.success_rate, result.mean_reward, result.mean_steps) == (
        1,
        0.5,
        0.5,
        4.0,
    )
    assert result.invalid_action_rate == 2 / 8 and result.invalid_output_rate == 3 / 8
    assert (result.agent_tokens, result.model_tokens) == (40, 5)
    assert re.search(r"\| 0\.500 \[0\.0\d\d, 0\.9\d\d\] \|", markdown_report([result]))
