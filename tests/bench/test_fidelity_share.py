"""The model's share of a next state in the fidelity report: what it wrote, what was carried or supplied."""

from __future__ import annotations

import json

import pytest

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.bench.fidelity import measure_fidelity, reference_transitions, score_transitions, summarize
from dreamgym_env.bench.sampling import as_text, mode_transitions, sample_transitions
from dreamgym_env.envs.alfworld.grammar import parse_command
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.testing import ScriptedExperienceModel


@pytest.fixture(scope="module")
def webshop_episodes():
    domain = get_domain("webshop")
    env = domain.make_reference_env(split="test", max_steps=domain.max_episode_steps)
    return collect_trajectories(
        env, make_policy("noisy", domain, seed=2), 6, progress=False, state_mode="structured"
    )


def truth_model(references) -> ScriptedExperienceModel:
    """A model that answers every reference transition with its true next state."""
    truths = {(r.request.task.id, r.request.state, r.request.action): r.truth for r in references}
    return ScriptedExperienceModel(lambda request: truths[(request.task.id, request.state, request.action)])


def test_a_search_result_page_is_mostly_the_pack_s(webshop_episodes):
    references = reference_transitions(webshop_episodes, "webshop", supply="pack")
    search = next(r for r in references if r.request.action.startswith("search["))
    (score,) = score_transitions(truth_model([search]), [search])
    state, truth = json.loads(search.request.state), json.loads(search.truth.next_state)
    changed = {name: value for name, value in truth.items() if state[name] != value}
    given = set(search.request.given_fields)
    assert {"results"} <= given & set(changed) and "kind" in set(changed) - given
    # no dict-valued field changes on a search: each changed field counts its JSON's length
    pack = sum(len(json.dumps(value)) for name, value in changed.items() if name in given)
    model = sum(len(json.dumps(value)) for name, value in changed.items() if name not in given)
    assert score.true_content == score.content == {"model": model, "carried": 0, "pack": pack, "replay": 0}
    report = summarize([score])
    assert report.true_model_share == report.model_share == pytest.approx(model / (model + pack))
    assert report.supplied_share == {
        "carried": 0.0,
        "pack": pytest.approx(pack / (model + pack)),
        "replay": 0.0,
    }


def test_without_the_pack_the_model_writes_every_change(webshop_episodes):
    shares = {}
    for supply in ("pack", "none"):
        references = reference_transitions(webshop_episodes, "webshop", supply=supply)
        report = measure_fidelity(truth_model(references), references)
        assert report.exact_match == 1.0 and report.model_share == report.true_model_share
        shares[supply] = report
    assert shares["none"].true_model_share == 1.0
    assert shares["none"].true_supplied_share == {"carried": 0.0, "pack": 0.0, "replay": 0.0}
    assert 0.0 < shares["pack"].true_model_share < 0.5  # the catalogue's answers dominate a shop's pages
    assert "supplied pack" in str(shares["pack"]) and "true_model_share" in str(shares["pack"])


def test_what_the_domain_settles_counts_as_the_pack_s(alfworld_expert, alfworld_expert_episodes):
    """A model that slips on every take: ALFWorld's settling writes the take, as it writes a true take's."""
    domain, references, truths = alfworld_expert
    trajectories = alfworld_expert_episodes

    def slips_on_takes(request):
        truth = truths[(request.task.id, request.state, request.action)]
        if not request.action.startswith("take "):
            return truth
        state = json.loads(truth.next_state)
        obj = parse_command(request.action).obj
        state["feedback"] = state["feedback"].replace(obj, f"{obj} 9")
        state["inventory"] = []
        return truth.model_copy(update={"next_state": json.dumps(state)})

    scores = score_transitions(ScriptedExperienceModel(slips_on_takes), references)
    takes = [s for s in scores if s.action_type == "take"]
    assert takes and all(s.exact for s in scores)  # settled, every answer is right
    # what the rule writes is the pack's whether the model slipped or not
    assert all(s.content == s.true_content and s.content["pack"] > 0 for s in takes)
    report = summarize(scores)
    assert report.model_share == report.true_model_share < 1.0
    unsettled = reference_transitions(trajectories, domain, supply="none")
    assert not any(r.supplied.settles for r in unsettled)
    raw = summarize(score_transitions(ScriptedExperienceModel(slips_on_takes), unsettled))
    assert raw.exact_match < 1.0 and raw.model_share == 1.0  # nothing repairs the slip without the pack


def test_text_mode_reports_no_share(webshop_episodes):
    domain = get_domain("webshop")
    references = reference_transitions([as_text(domain, t) for t in webshop_episodes[:2]], domain)
    report = measure_fidelity(truth_model(references), references)
    assert report.model_share is None and report.true_model_share is None
    assert report.supplied_share == report.true_supplied_share == {}


def test_a_sampled_measurement_without_the_pack_shows_no_world():
    domain = get_domain("webshop")
    for supply, shown in (("pack", True), ("none", False)):
        samples = sample_transitions(domain, 12, seed=0, supply=supply)
        structured = mode_transitions(domain, samples, "structured", supply=supply)
        text = mode_transitions(domain, samples, "text", supply=supply)
        assert any(r.request.given_fields for r in structured) is shown
        assert any(r.request.world for r in text) is shown
        assert all(r.supplied.world == tuple(r.request.world) for r in text)
        report = measure_fidelity(truth_model(structured), structured)
        assert (report.true_model_share == 1.0) is not shown
