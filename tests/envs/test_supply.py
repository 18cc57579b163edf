"""What fixes a next state before the model answers (``supply``), and ``info``'s account of who wrote it."""

from __future__ import annotations

import json

import pytest

from dreamgym_env import ConfigurationError
from dreamgym_env.bench.fidelity import reference_transitions
from dreamgym_env.domain import changed_content, changed_text_content, share_of_model
from dreamgym_env.envs.alfworld.tasks import world_of
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import ExperienceRequest, Trajectory, Transition
from dreamgym_env.wrappers.replay_grounding import ReplayGrounding

WEBSHOP = get_domain("webshop")


def results_page(request: ExperienceRequest) -> Transition:
    """A results page: the model writes the page kind, the env fills in what the request fixed."""
    state = json.loads(request.state)
    kept = {name: state[name] for name in request.carried_fields}
    next_state = {**state, **kept, **request.given_fields, "kind": "results"}
    return Transition(reasoning="searched", next_state=json.dumps(next_state))


def test_supply_must_be_one_the_env_knows(webshop_task):
    with pytest.raises(ConfigurationError, match="supply must be one of pack, replay, none"):
        DreamEnv("webshop", ScriptedExperienceModel(results_page), state_mode="structured", supply="recorded")


def test_the_pack_supplies_a_searchs_results_and_info_says_so(webshop_task):
    model = ScriptedExperienceModel(results_page)
    env = DreamEnv("webshop", model, state_mode="structured")
    env.reset(options={"task": webshop_task})
    _, _, _, _, info = env.step("search[shirt]")
    request = model.requests[-1]
    assert list(request.given_fields) == ["query", "page", "total", "results"]
    assert request.carried_fields == ["instruction"]
    sources = info["field_sources"]
    assert {name for name, source in sources.items() if source == "pack"} == {
        "query",
        "page",
        "total",
        "results",
    }
    assert sources["instruction"] == "carried" and sources["kind"] == "model"
    # the model wrote the page kind, the catalogue the rest of what changed
    assert 0.0 < info["model_share"] < 0.05
    assert info["world_lines"] == request.world == []


def test_with_supply_none_the_request_holds_no_pack_data_and_the_model_writes_every_change(webshop_task):
    model = ScriptedExperienceModel(results_page)
    env = DreamEnv("webshop", model, state_mode="structured", supply="none")
    env.reset(options={"task": webshop_task})
    _, _, _, _, info = env.step("search[shirt]")
    request = model.requests[-1]
    assert request.given_fields == {} and request.world == []
    assert request.carried_fields == ["instruction"]  # a structural rule stays
    assert set(info["field_sources"].values()) == {"carried", "model"}
    assert info["model_share"] == 1.0


def test_a_step_the_model_does_not_answer_reports_nothing_written(webshop_task):
    env = DreamEnv("webshop", ScriptedExperienceModel(results_page), state_mode="structured")
    env.reset(options={"task": webshop_task})
    *_, info = env.step("fly[away]")
    assert not info["action_valid"]
    assert info["field_sources"] == {} and info["world_lines"] == [] and info["model_share"] is None


def test_text_mode_counts_a_copied_world_line_as_the_packs(webshop_task):
    model = ScriptedExperienceModel(
        lambda request: Transition(next_state=f"{request.state}\n{request.world[0]}\nmy own line")
    )
    env = DreamEnv("webshop", model, state_mode="text")
    env.reset(options={"task": webshop_task})
    *_, info = env.step("search[shirt]")
    world = model.requests[-1].world
    assert info["world_lines"] == world and info["field_sources"] == {}
    assert info["model_share"] == pytest.approx(
        len("my own line\n") / (len(world[0]) + 1 + len("my own line\n"))
    )


def test_alfworlds_settling_is_the_packs_where_it_applies():
    domain = get_domain("alfworld")
    task = domain.tasks("test")[0]
    env = DreamEnv("alfworld", ScriptedExperienceModel(), state_mode="structured")
    env.reset(options={"task": task})
    state = env._abstract_state()
    location, (obj, *_) = next(
        (name, objects) for name, objects in world_of(task).contents().items() if objects
    )
    standing = state.model_copy(update={"location": location, "seen": {location: [obj]}})
    action = domain.parse_action(f"take {obj} from {location}")
    supplied = domain.supplied_fields(task, standing.model_dump_json(), action, abstract=standing)
    assert supplied.settles
    # the model's verdict: it works, but it wrote the wrong message and left the inventory empty
    answered = standing.model_copy(update={"event": "message", "feedback": "You take it."})
    settled = supplied.settled(answered)
    sources = supplied.sources(answered, settled)
    assert sources["feedback"] == sources["inventory"] == "pack"
    assert sources["event"] == "model"
    # an answer that already says what the rule writes: the rule still wrote it
    assert supplied.sources(settled, supplied.settled(settled))["inventory"] == "pack"
    failed = standing.model_copy(update={"event": "message", "feedback": "Nothing happens."})
    assert supplied.settled(failed) is failed and supplied.sources(failed, failed)["feedback"] == "model"
    none = domain.supplied_fields(task, standing.model_dump_json(), action, abstract=standing, supply="none")
    assert not none.settles and none.given == {} and none.world == ()


def test_changed_content_counts_only_the_new_entries_of_an_object_field():
    before = {"seen": {"drawer 1": ["spoon 1"]}, "feedback": "a"}
    after = {"seen": {"drawer 1": ["spoon 1"], "fridge 1": ["egg 1"]}, "feedback": "b"}
    counts = changed_content(before, after, {"seen": "model", "feedback": "pack"})
    assert counts == {
        "model": len(json.dumps({"fridge 1": ["egg 1"]})),
        "carried": 0,
        "pack": len('"b"'),
        "replay": 0,
    }
    assert share_of_model(changed_content(before, before, {})) is None
    assert changed_text_content("a\nb", "a\nb\nc", world=["c"]) == {
        "model": 0,
        "carried": 0,
        "pack": 2,
        "replay": 0,
    }


def test_reference_transitions_with_supply_none_read_nothing_of_the_packs_world(webshop_task, monkeypatch):
    env = WEBSHOP.make_reference_env()
    env.reset(options={"task": webshop_task})
    state = env.abstract_state.model_dump_json()
    _, reward, done, _, _ = env.step("search[shirt]")
    step = {"state": state, "action": "search[shirt]", "next_state": env.abstract_state.model_dump_json()}
    trajectory = Trajectory.model_validate(
        {
            "task": webshop_task,
            "steps": [{**step, "reward": reward, "done": done}],
            "metadata": {"state_mode": "structured"},
        }
    )

    supplies = type(WEBSHOP).supplies

    def without_the_task(self, task, *args):
        assert task is None, "the pack was given the task, whose world it reads"
        return supplies(self, task, *args)

    monkeypatch.setattr(type(WEBSHOP), "supplies", without_the_task)
    (reference,) = reference_transitions([trajectory], WEBSHOP, supply="none")
    assert reference.request.given_fields == {} and reference.request.world == []
    assert reference.request.carried_fields == ["instruction"]


def recorded_search(task, query: str, *, source: str = "offline") -> Trajectory:
    """One real ``search`` step of ``task`` on the reference env, as a recorded structured episode."""
    env = WEBSHOP.make_reference_env()
    env.reset(options={"task": task})
    state = env.abstract_state.model_dump_json()
    _, reward, done, _, _ = env.step(f"search[{query}]")
    step = {
        "state": state,
        "action": f"search[{query}]",
        "next_state": env.abstract_state.model_dump_json(),
        "reward": reward,
        "done": done,
    }
    return Trajectory.model_validate(
        {"task": task, "steps": [step], "source": source, "metadata": {"state_mode": "structured"}}
    )


@pytest.fixture
def replay_buffer():
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    yield buffer
    buffer.close()


def test_supply_replay_needs_a_replay_buffer_and_structured_states(webshop_task):
    env = DreamEnv("webshop", ScriptedExperienceModel(results_page), state_mode="structured", supply="replay")
    with pytest.raises(ConfigurationError, match="ReplayGrounding"):
        env.reset(options={"task": webshop_task})
    with pytest.raises(ConfigurationError, match="state_mode='structured'"):
        DreamEnv("webshop", ScriptedExperienceModel(results_page), supply="replay")


def test_supply_replay_gives_a_recorded_transitions_fields_and_reads_nothing_of_the_pack(
    webshop_task, replay_buffer, monkeypatch
):
    recorded = recorded_search(webshop_task, "shirt")
    replay_buffer.add_trajectory(recorded, source="offline")
    truth = json.loads(recorded.steps[0].next_state)
    supplies = type(WEBSHOP).supplies

    def without_the_task(self, task, *args):
        assert task is None, "the pack was given the task, whose world it reads"
        return supplies(self, task, *args)

    monkeypatch.setattr(type(WEBSHOP), "supplies", without_the_task)
    model = ScriptedExperienceModel(results_page)
    env = ReplayGrounding(
        DreamEnv("webshop", model, state_mode="structured", supply="replay"),
        replay_buffer,
        k=0,
        write_back=False,
    )
    env.reset(options={"task": webshop_task})
    *_, info = env.step("search[shirt]")
    request = model.requests[-1]
    assert request.world == [] and request.carried_fields == ["instruction"]
    assert request.given_fields == {name: value for name, value in truth.items() if name != "instruction"}
    assert {name for name, source in info["field_sources"].items() if source == "replay"} == set(
        request.given_fields
    )
    assert info["model_share"] == 0.0  # the recording wrote every change
    assert json.loads(env.unwrapped.state) == truth

    # a query no recording holds: the model writes everything the action can change
    env.reset(options={"task": webshop_task})
    *_, info = env.step("search[red wool socks]")
    assert model.requests[-1].given_fields == {}
    assert "replay" not in info["field_sources"].values()


def test_supply_replay_never_takes_a_synthetic_transition_as_a_recording(webshop_task, replay_buffer):
    replay_buffer.add_trajectory(
        recorded_search(webshop_task, "shirt", source="synthetic"), source="synthetic"
    )
    model = ScriptedExperienceModel(results_page)
    env = ReplayGrounding(
        DreamEnv("webshop", model, state_mode="structured", supply="replay"),
        replay_buffer,
        k=2,
        sources=None,  # demonstrations may be synthetic; a replayed field may not
        write_back=False,
    )
    env.reset(options={"task": webshop_task})
    *_, info = env.step("search[shirt]")
    assert model.requests[-1].given_fields == {}
    assert info["demonstrations"] == 1
    assert "replay" not in info["field_sources"].values()
