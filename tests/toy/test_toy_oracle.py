"""The oracle, fidelity measurement and offline collection on the toy pack."""

from __future__ import annotations

from pathlib import Path

import pytest

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect, collect_trajectories
from dreamgym_env.bench.fidelity import measure_fidelity, reference_transitions
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.replay.jsonl import read_trajectories
from dreamgym_env.types import Trajectory

from .pack import ToyDomain


@pytest.fixture(scope="module")
def trajectories(toy: ToyDomain) -> list[Trajectory]:
    env = toy.make_reference_env(split="test", max_steps=toy.max_episode_steps)
    return collect_trajectories(env, make_policy("noisy", toy, seed=2, epsilon=0.4), 60, progress=False)


def test_fidelity_of_the_oracle_is_one(toy, trajectories):
    references = reference_transitions(trajectories, toy)
    assert len(references) > 150 and all(r.request.prompt == toy.prompt for r in references)
    model = OracleExperienceModel(toy)
    report = measure_fidelity(model, references)
    model.close()
    assert report.n == len(references)
    assert (report.exact_match, report.reward_agreement, report.done_agreement, report.accuracy) == (1.0,) * 4


def test_error_rate_0_3_corrupts_about_that_share_and_episodes_go_on(toy, trajectories):
    references = reference_transitions(trajectories, "toy")
    model = OracleExperienceModel("toy", error_rate=0.3, seed=1)
    report = measure_fidelity(model, references)
    assert report.accuracy < 0.9 and report.exact_match < report.similarity < 1.0
    distinct = {(r.request.task.id, r.request.state, r.request.action): r for r in references}
    assert model.stats["answers"] - model.stats["cache_hits"] == len(distinct)
    answers = model.predict_sync([r.request for r in distinct.values()])
    wrong = sum(
        (a.next_state, a.reward, a.terminated) != (r.truth.next_state, r.truth.reward, r.truth.terminated)
        for r, a in zip(distinct.values(), answers, strict=True)
    )
    corrupted = sum(v for k, v in model.stats.items() if k.startswith("corrupted_"))
    assert corrupted == wrong and 0.2 < wrong / len(distinct) < 0.4  # every corruption is a wrong answer
    assert {"corrupted_action", "corrupted_task", "corrupted_reward"} <= set(model.stats)
    # a corrupted answer is still a state the next request can be answered from
    env = DreamEnv(toy, model, max_steps=toy.max_episode_steps)
    for seed in range(10):
        observation, info = env.reset(seed=seed)
        done = False
        while not done:
            actions = [a for a in info["admissible_actions"] if "<" not in a] or ["SAY word"]
            observation, _, terminated, truncated, info = env.step(actions[seed % len(actions)])
            assert terminated or f"Goal: {info['task'].instruction}" in observation
            done = terminated or truncated
    model.close()


@pytest.mark.parametrize(
    ("policy", "lowest", "highest"), [("expert", 1.0, 1.0), ("noisy", 0.2, 1.0), ("random", 0.0, 0.3)]
)
def test_collect_writes_jsonl(toy, tmp_path: Path, policy: str, lowest: float, highest: float):
    out = tmp_path / f"{policy}.jsonl"
    summary = collect(toy, policy, 20, out, seed=1, progress=False)
    trajectories = read_trajectories(out)
    assert summary.domain == "toy" and summary.episodes == len(trajectories) == 20
    assert lowest <= summary.success_rate <= highest
    assert summary.transitions == sum(len(t.steps) for t in trajectories)
    assert all(t.task.domain == "toy" and t.policy == policy for t in trajectories)
    assert all(len(t.steps) <= toy.max_episode_steps for t in trajectories)
    if policy == "expert":
        assert all(t.won and t.metadata["score"] == 1.0 for t in trajectories)
        assert {t.task.id for t in trajectories} == {t.id for t in toy.tasks("train")}
