"""Rollout consistency: synthetic episodes replayed in the reference env, and its place in ``dreamgym fidelity``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dreamgym_env.bench.consistency import ConsistencyReport, EpisodeConsistency, rollout_consistency
from dreamgym_env.bench.fidelity_runs import FidelityResults
from dreamgym_env.cli import app
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ModelOutputError
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import ExperienceRequest, Transition


@pytest.mark.parametrize("name", ["webshop", "alfworld", "webarena"])
def test_a_faithful_model_plays_the_reference_episode_step_for_step(name):
    domain = get_domain(name)
    model = OracleExperienceModel(domain, error_rate=0.0)
    history = domain.max_episode_steps if not model.restorable else 4
    (expert,) = rollout_consistency(model, domain, episodes=4, policies=["expert"], history_len=history)
    assert (expert.policy, expert.episodes) == ("expert", 4)
    assert expert.step_agreement == expert.full_agreement == expert.outcome_agreement == 1.0
    assert expert.synthetic_success == expert.reference_success == 1.0


def test_a_model_that_never_changes_the_state_diverges_at_the_first_step():
    domain = get_domain("alfworld")
    stuck = ScriptedExperienceModel(lambda request: Transition(reasoning="stuck", next_state=request.state))
    reports = rollout_consistency(stuck, domain, episodes=3)
    assert [r.policy for r in reports] == ["expert", "noisy", "random"]
    for report in reports:
        assert report.step_agreement == report.full_agreement == 0.0
        assert report.synthetic_success == 0.0 and report.mean_steps == domain.max_episode_steps


def test_a_synthetic_episode_that_cannot_go_on_stops_and_counts_as_not_won():
    domain = get_domain("webshop")

    def dead_end(request: ExperienceRequest) -> Transition:
        if request.action.startswith("search"):  # a results page with nothing to click
            return Transition(reasoning="empty", next_state='{"kind": "results", "results": []}')
        raise ModelOutputError(f"task {request.task.id!r}: kept answering junk")

    def no_actions(request: ExperienceRequest) -> Transition:
        return Transition(reasoning="nothing", next_state="WebShop | results\nNo buttons at all.")

    (unusable,) = rollout_consistency(
        ScriptedExperienceModel(dead_end), domain, episodes=2, policies=["noisy"]
    )
    assert unusable.stopped == 1.0 and unusable.synthetic_success == 0.0 and unusable.full_agreement == 0.0
    (empty,) = rollout_consistency(
        ScriptedExperienceModel(no_actions), domain, episodes=2, policies=["noisy"], state_mode="text"
    )
    assert empty.stopped == 1.0 and empty.mean_steps == 0.0  # the dead end is refused, not recorded


def test_corrupted_answers_send_synthetic_episodes_elsewhere():
    domain = get_domain("webshop")
    model = OracleExperienceModel(domain, error_rate=0.3, seed=0)
    (expert,) = rollout_consistency(model, domain, episodes=12, policies=["expert"])
    assert expert.full_agreement < 1.0 and expert.step_agreement < 1.0
    # the reference env replays the same actions: where they reach the goal there, it is won
    assert expert.reference_success > 0.0


def test_fidelity_reports_rollouts_when_asked(tmp_path):
    args = ["--domain", "alfworld", "--model", "oracle", "--n", "6", "--modes", "structured"]
    result = CliRunner().invoke(
        app, ["fidelity", *args, "--grounding", "none", "--rollouts", "2", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    rollouts = json.loads((tmp_path / "fidelity.json").read_text())["rollouts"]
    assert set(rollouts) == {"expert", "noisy", "random"}
    assert rollouts["expert"]["episodes"] == 2 and rollouts["expert"]["outcome_agreement"] == 1.0
    assert rollouts["random"]["unconfirmed_wins"] == 0.0  # the oracle pays what the reference env pays
    assert "### Rollout consistency" in (tmp_path / "fidelity.md").read_text()
    chosen = ["--rollouts", "2", "--rollout-policies", "random", "--out", str(tmp_path / "random")]
    result = CliRunner().invoke(app, ["fidelity", *args, "--grounding", "none", *chosen])
    assert result.exit_code == 0, result.output
    assert set(json.loads((tmp_path / "random" / "fidelity.json").read_text())["rollouts"]) == {"random"}
    bad = CliRunner().invoke(app, ["fidelity", *args, "--rollouts", "2", "--rollout-policies", "greedy"])
    assert bad.exit_code != 0 and "expert, noisy, random" in bad.output


def test_the_rollout_table_counts_the_synthetic_wins_the_reference_does_not_confirm():
    paid = EpisodeConsistency("random", "t1", steps=9, agreed=3, synthetic_won=True, reference_won=False)
    unpaid = EpisodeConsistency("random", "t2", steps=50, agreed=50, synthetic_won=False, reference_won=False)
    missed = EpisodeConsistency("random", "t3", steps=7, agreed=2, synthetic_won=False, reference_won=True)
    report = ConsistencyReport.of("random", [paid, unpaid, missed, unpaid])
    assert report.unconfirmed_wins == 0.25 and report.outcome_agreement == 0.5
    results = FidelityResults("alfworld", "scripted", 0, 4, [], rollouts=[report])
    headers, (row,) = results.rollout_table()
    assert row[headers.index("synthetic wins the reference does not confirm")] == "0.250"
    assert "| synthetic wins the reference does not confirm |" in results.to_markdown()


def test_episodes_must_be_positive():
    domain = get_domain("webshop")
    with pytest.raises(ValueError, match="episodes must be >= 1"):
        rollout_consistency(OracleExperienceModel(domain), domain, episodes=0)
