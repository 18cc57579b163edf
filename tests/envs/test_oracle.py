from __future__ import annotations

import pytest

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.domain import PROMPT as WEBSHOP_PROMPT
from dreamgym_env.envs.webshop.expert import WebShopExpert
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.errors import ConfigurationError, ExperienceModelError
from dreamgym_env.types import ExperienceRequest, Step


@pytest.fixture(scope="module")
def trajectories():
    env = WebShopRefEnv(split="test", max_steps=15)
    return collect_trajectories(env, make_policy("noisy", "webshop", seed=2), 40, progress=False)


@pytest.fixture
def oracle():
    model = OracleExperienceModel("webshop")
    yield model
    model.close()


def requests_of(trajectories):
    for trajectory in trajectories:
        for i, step in enumerate(trajectory.steps):
            if step.action_valid:
                yield (
                    ExperienceRequest(
                        prompt=WEBSHOP_PROMPT,
                        task=trajectory.task,
                        history=trajectory.steps[max(0, i - 4) : i],
                        state=step.state,
                        action=step.action,
                    ),
                    step,
                )


def test_oracle_answers_what_the_reference_env_does(oracle, trajectories):
    pairs = list(requests_of(trajectories))
    answers = oracle.predict_sync([request for request, _ in pairs])
    for (_, step), answer in zip(pairs, answers, strict=True):
        assert (answer.next_state, answer.reward, answer.terminated) == (
            step.next_state,
            step.reward,
            step.done,
        )
    assert oracle.stats["answers"] == len(pairs)


def test_answers_are_cached(oracle, trajectories):
    request, _ = next(requests_of(trajectories))
    first = oracle.predict_one(request)
    again = oracle.predict_one(request)
    assert again.next_state == first.next_state and again.usage.cached and not first.usage.cached
    assert oracle.stats["cache_hits"] == 1


def test_synthetic_env_backed_by_the_oracle_replays_the_reference_env(oracle):
    synthetic = DreamEnv("webshop", experience_model=oracle, max_steps=15, split="test")
    real = WebShopRefEnv(split="test", max_steps=15)
    for task in real.tasks[:10]:
        expert = WebShopExpert()
        obs_s, info_s = synthetic.reset(options={"task": task})
        obs_r, info_r = real.reset(options={"task": task})
        done = False
        while not done:
            assert obs_s == obs_r
            action = expert(obs_r, info_r)
            obs_s, rew_s, term_s, trunc_s, info_s = synthetic.step(action)
            obs_r, rew_r, term_r, trunc_r, info_r = real.step(action)
            assert (rew_s, term_s, trunc_s) == (rew_r, term_r, trunc_r)
            done = term_r or trunc_r
        assert info_s["won"] == info_r["won"]


def test_error_rate_corrupts_about_that_share(trajectories):
    pairs = list(requests_of(trajectories))
    model = OracleExperienceModel("webshop", error_rate=0.3, seed=1)
    try:
        answers = model.predict_sync([request for request, _ in pairs])
        wrong = sum(
            (a.next_state, a.reward, a.terminated) != (s.next_state, s.reward, s.done)
            for (_, s), a in zip(pairs, answers, strict=True)
        )
        assert 0.2 < wrong / len(pairs) < 0.4
        corrupted = sum(v for k, v in model.stats.items() if k.startswith("corrupted_"))
        assert corrupted == pytest.approx(wrong, abs=len(pairs) * 0.05)
        assert {"corrupted_action", "corrupted_task", "corrupted_reward"} <= set(model.stats)
        # the same seed corrupts the same requests
        twin = OracleExperienceModel("webshop", error_rate=0.3, seed=1)
        assert [t.next_state for t in twin.predict_sync([r for r, _ in pairs])] == [
            a.next_state for a in answers
        ]
        twin.close()
    finally:
        model.close()


def test_a_corrupted_answer_is_a_page_the_next_request_can_start_from(trajectories):
    pairs = list(requests_of(trajectories))
    model = OracleExperienceModel("webshop", error_rate=1.0, seed=5)
    try:
        followed = 0
        for request, step in pairs:
            answer = model.predict_one(request.model_copy(update={"history": []}))
            assert (answer.next_state, answer.reward, answer.terminated) != (
                step.next_state,
                step.reward,
                step.done,
            )
            if answer.terminated:
                continue
            assert f"Instruction: {request.task.instruction}" in answer.next_state
            actions = [a for a in model.domain.admissible_actions(answer.next_state) or [] if "<" not in a]
            for action in actions[:2] or ["search[red shoes]"]:
                follow = ExperienceRequest(
                    prompt=WEBSHOP_PROMPT, task=request.task, state=answer.next_state, action=action
                )
                assert model.predict_one(follow).next_state  # answered, no ExperienceModelError
                followed += 1
        assert followed > len(pairs) and model.stats["corrupted_task"] > 50
    finally:
        model.close()


def test_replay_strategy_needs_whole_episodes(trajectories):
    env = WebShopRefEnv(split="test")

    class NoRestore:  # the reference env without restore(): the oracle falls back to replay
        def __init__(self):
            self.unwrapped = self
            self.tasks = env.tasks

        def reset(self, **kwargs):
            return env.reset(**kwargs)

        def step(self, action):
            return env.step(action)

    model = OracleExperienceModel("webshop", env=NoRestore())  # type: ignore[arg-type]
    try:
        trajectory = next(t for t in trajectories if len(t.steps) > 6)
        steps = trajectory.steps
        whole = ExperienceRequest(
            prompt=WEBSHOP_PROMPT,
            task=trajectory.task,
            history=steps[:5],
            state=steps[5].state,
            action=steps[5].action,
        )
        answer = model.predict_one(whole)
        assert answer.next_state == steps[5].next_state
        cut = whole.model_copy(update={"history": steps[2:5]})
        with pytest.raises(ExperienceModelError, match="history_len"):
            model.predict_one(cut)
    finally:
        model.close()


def test_foreign_state_is_an_error(oracle, trajectories):
    task = trajectories[0].task
    with pytest.raises(ExperienceModelError, match="cannot answer"):
        oracle.predict_one(
            ExperienceRequest(
                prompt=WEBSHOP_PROMPT, task=task, state="WebShop | nowhere\nx", action="click[Buy Now]"
            )
        )
    request = next(requests_of([trajectories[0]]))[0]
    junk = [
        Step(state="x", action="click[a]", next_state="y")
    ]  # restored from the page, history is not needed
    assert (
        oracle.predict_one(request.model_copy(update={"history": junk})).next_state
        == trajectories[0].steps[0].next_state
    )


def test_bad_error_rate():
    with pytest.raises(ConfigurationError):
        OracleExperienceModel("webshop", error_rate=1.5)
