from __future__ import annotations

import asyncio
import io
from collections.abc import Sequence
from typing import Any

import pytest
from rich.console import Console

from dreamgym_env.demo import DemoSummary, _act, _build_model, run_demo
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, ModelOutputError
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import ExperienceRequest, Transition


@pytest.fixture(autouse=True)
def hashed_embedder(monkeypatch):
    """Replay retrieval with the dependency-free embedder: fast and the same everywhere."""
    monkeypatch.setenv("DREAMGYM_EMBEDDER", "hashed")


class RealShop:
    """A perfect experience model: asks the reference env itself what happens (a test double)."""

    def __init__(self) -> None:
        self.env = get_domain("webshop").make_reference_env(split="test")

    def __call__(self, request: ExperienceRequest) -> Transition:
        self.env.restore(request.task, request.state)
        _, reward, terminated, _, info = self.env.step(request.action)
        return Transition(  # the model's state is the Markov page, not the agent's text
            reasoning="as the real shop does", next_state=info["state"], reward=reward, terminated=terminated
        )


def stuck(request: ExperienceRequest) -> Transition:
    """A poor experience model: nothing ever changes."""
    return Transition(reasoning="nothing happens", next_state=request.state)


def demo(respond: Any, **kwargs: Any) -> tuple[DemoSummary, str, ScriptedExperienceModel]:
    """The demo in text mode with a scripted model (the pages these doubles write are text)."""
    kwargs.setdefault("state_mode", "text")
    out = io.StringIO()
    model = ScriptedExperienceModel(respond)
    try:
        summary = run_demo(
            experience_model=model, console=Console(file=out, width=140), progress=False, **kwargs
        )
    finally:
        model.close()
    return summary, out.getvalue(), model


def test_perfect_model_agrees_with_the_reference_everywhere():
    summary, text, model = demo(RealShop(), episodes=2, max_steps=8)
    assert summary.episodes == 2 and summary.steps == len(summary.records) >= 4
    assert summary.reward_agreement == summary.done_agreement == 1.0
    assert summary.state_similarity == pytest.approx(1.0)
    assert summary.same_page_share == 1.0
    assert summary.model_calls == model.calls == summary.steps
    assert any(r.synthetic_done and r.reference_done for r in summary.records)  # the expert buys
    assert "episode 1 of 2" in text and "episode 2 of 2" in text and "summary" in text
    # text mode: the model writes every line but those it copied from the shop's facts
    assert summary.model_share is not None and 0.0 < summary.model_share <= 1.0
    assert summary.pack_fields == () and "what the model wrote" in text
    assert "reward agreement" in text and "as the real shop does" in text


def test_requests_are_grounded_in_expert_transitions():
    summary, text, model = demo(stuck, episodes=1, max_steps=2, replay_episodes=5)
    assert summary.replay_transitions > 5  # several steps per expert episode
    assert all(request.demonstrations for request in model.requests)
    assert all(
        d.task_instruction != model.requests[0].task.instruction for d in model.requests[0].demonstrations
    )
    _, _, plain = demo(stuck, episodes=1, max_steps=2, replay=False)
    assert not any(request.demonstrations for request in plain.requests)


def test_poor_model_shows_disagreement():
    summary, text, _ = demo(stuck, episodes=1, max_steps=3)
    assert summary.steps == 3 and summary.state_similarity < 0.9
    first = summary.records[0]
    assert first.action.startswith("search[") and "[SEP] Page 1 (Total results: " in first.reference_state
    assert first.synthetic_state.startswith("WebShop [SEP] Instruction:") and first.similarity < 0.9
    assert "similarity" in text


def test_the_summary_shows_each_agreement_beside_its_trivial_baseline():
    """A model that never pays nor ends agrees exactly as often as "always 0, never done": the bar."""
    summary, text, _ = demo(stuck, episodes=2, max_steps=3)
    records = summary.records
    assert summary.always_zero_reward == sum(r.reference_reward == 0 for r in records) / len(records)
    assert summary.never_done == sum(not r.reference_done for r in records) / len(records)
    assert summary.reward_agreement == summary.always_zero_reward  # stuck pays 0 every step
    assert f"{summary.reward_agreement:.0%} ({summary.always_zero_reward:.0%})" in text
    assert "reward agreement (always 0)" in text and "episode-end agreement (never done)" in text


def test_same_tasks_for_the_same_seed():
    first, _, _ = demo(stuck, episodes=2, max_steps=1, seed=3)
    again, _, _ = demo(stuck, episodes=2, max_steps=1, seed=3)
    other, _, _ = demo(stuck, episodes=2, max_steps=1, seed=4)
    assert [r.action for r in first.records] == [r.action for r in again.records]
    assert [r.action for r in first.records] != [r.action for r in other.records]


def test_arguments_are_checked():
    with pytest.raises(ConfigurationError, match="episodes and max_steps"):
        run_demo(experience_model=ScriptedExperienceModel(stuck), episodes=0)


def test_model_option_chooses_the_model(monkeypatch, tmp_path):
    calls: list[str | None] = []

    def record(pack: Any, model: str | None = None, settings: Any = None) -> ScriptedExperienceModel:
        calls.append(model if settings is None else f"default {settings}")
        return ScriptedExperienceModel()

    monkeypatch.setattr("dreamgym_env.envs.models.experience_model_for", record)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    pack = get_domain("webshop")
    for option in (None, "qwen-1.5b", str(gguf), "local:base", "oracle:0.1", "gpt-4o-mini"):
        _build_model(option, pack).close()
    assert calls == [
        "default {'cache': False}",
        "local:qwen-1.5b",
        f"local:{gguf}",
        "local:base",
        "oracle:0.1",
        "endpoint:gpt-4o-mini",
    ]


def test_a_policy_that_cannot_read_a_page_falls_back_to_an_admissible_action(webshop_task):
    def confused(observation: str, info: dict[str, Any]) -> str:
        raise IndexError("no such line")

    info = {
        "task": webshop_task,
        "admissible_actions": ["search[<query>]", "click[< Prev]", "click[Buy Now]"],
    }
    domain = get_domain("webshop")
    assert _act(domain, confused, "WebShop | results", info) == (f"search[{webshop_task.instruction}]", True)
    results = {**info, "admissible_actions": ["click[< Prev]", "click[Buy Now]"]}
    assert _act(domain, confused, "WebShop | results", results) == ("click[< Prev]", True)
    assert _act(domain, confused, "page", {"task": webshop_task, "admissible_actions": []}) == ("", True)
    assert _act(domain, lambda o, i: "click[Buy Now]", "page", info) == ("click[Buy Now]", False)


def test_episode_stops_when_the_model_writes_a_page_without_actions():
    def blank(request: ExperienceRequest) -> Transition:
        return Transition(reasoning="a page with nothing to click", next_state="WebShop | results")

    summary, text, model = demo(blank, episodes=1, max_steps=5, replay=False)
    assert summary.steps == 0 and model.calls == 1  # the env refuses the dead end: no step recorded
    assert "offers no action" in " ".join(text.split())


def test_episode_stops_when_the_policy_repeats_an_invalid_action():
    def no_prev(request: ExperienceRequest) -> Transition:
        return Transition(reasoning="an odd page", next_state="WebShop | odd page\n[Something]")

    summary, text, model = demo(no_prev, episodes=1, max_steps=5, replay=False)
    assert len(summary.records) == 2 and not summary.records[1].model_call  # the invalid one, once
    assert model.calls == 1 and "repeats an action that is invalid" in text


def test_structured_demo_with_a_perfect_model_shows_valid_states_and_agreement():
    out = io.StringIO()
    model = OracleExperienceModel("webshop")
    try:
        summary = run_demo(
            experience_model=model,
            console=Console(file=out, width=100),
            progress=False,
            episodes=2,
            max_steps=8,
        )
    finally:
        model.close()
    text = out.getvalue()
    assert summary.state_mode == "structured" and summary.steps >= 4
    assert summary.valid_share == summary.reward_agreement == summary.done_agreement == 1.0
    assert summary.same_page_share == 1.0 and summary.state_similarity == pytest.approx(1.0)
    # structured WebShop: the catalogue writes a search's results and an item's facts, the model the rest
    assert {"results", "item"} <= set(summary.pack_fields)
    assert summary.model_share is not None and summary.model_share < 0.5
    # stacked full-width panels, the summary leads with validity and agreement
    assert "synthetic (experience model)" in text and "reference (real env)" in text
    summary_lines = text[text.index("summary") :].splitlines()
    first_rows = [line for line in summary_lines if "│" in line][:3]
    assert "valid synthetic states" in first_rows[0] and "reward agreement" in first_rows[1]
    assert "grounding:" in text and "structured states" in text


def test_text_pages_a_restorable_reference_cannot_continue_from_are_invalid():
    summary, text, _ = demo(stuck_but_wrong, episodes=1, max_steps=3)
    assert summary.valid_share == 0.0 and "NOT a valid state" in text


def stuck_but_wrong(request: ExperienceRequest) -> Transition:
    """A poor experience model that writes a page the shop never shows."""
    return Transition(reasoning="a made-up page", next_state="WebShop | nowhere\n[Buy Now]")


class LoadingModel(ScriptedExperienceModel):
    """A scripted model with weights to load, as the embedded one has (a test double)."""

    loaded = False

    def load(self) -> None:
        self.loaded = True


def test_demo_output_to_a_file_names_its_stages_and_has_no_progress_spam(monkeypatch):
    model = LoadingModel(RealShop())
    monkeypatch.setattr("dreamgym_env.demo._build_model", lambda name, pack: model)
    out = io.StringIO()
    run_demo(console=Console(file=out, width=120), episodes=2, max_steps=4, state_mode="text")
    model.close()
    text = out.getvalue()
    stages = [
        "experience model: choosing",
        "491 MB",
        "ready after",
        "loading the weights",
        "loaded in",
        "grounding:",
    ]
    positions = [text.index(stage) for stage in stages]
    assert positions == sorted(positions) and model.loaded
    assert text.count("· model ") >= 4  # every step line says the seconds its model call took
    assert "synthetic steps" not in text  # the progress bar stays off a file
    assert "LocalExperienceModel(" not in text and "model_file=" not in text


def test_a_model_that_fails_a_step_stops_that_episode_not_the_demo():
    def failing(request: ExperienceRequest) -> Transition:
        raise ModelOutputError("the model kept answering text that is not a transition")

    summary, text, _ = demo(failing, episodes=2, max_steps=3)
    assert summary.episodes == 2 and summary.steps == 0
    assert text.count("the model failed this step") == 2


class Overlapping(ScriptedExperienceModel):
    """A scripted model that counts the calls in flight at once (a test double)."""

    in_flight = peak = 0

    async def predict(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.05)  # every call of the batch starts before any ends
            return await super().predict(requests)
        finally:
            self.in_flight -= 1


def test_episodes_are_played_together_one_batch_of_model_calls_a_step():
    out = io.StringIO()
    model = Overlapping(RealShop())
    try:
        summary = run_demo(
            experience_model=model,
            console=Console(file=out, width=140),
            progress=False,
            episodes=3,
            max_steps=2,
            state_mode="text",
        )
    finally:
        model.close()
    text = out.getvalue()
    # one predict call a step, with the 3 episodes' requests
    assert model.peak == 1 and model.batches == 2 and model.calls == 6 and summary.model_calls == 6
    assert "step 1: 3 episode(s), 3 model call(s) in one batch" in text
    assert [(r.episode, r.step) for r in summary.records] == [(e, s) for e in range(3) for s in (1, 2)]
    assert "seconds per step (episodes played together)" in text
