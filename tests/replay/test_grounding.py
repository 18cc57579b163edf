from __future__ import annotations

import json

import pytest

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webshop.domain import PROMPT as WEBSHOP_PROMPT
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.replay.buffer import ExperienceReplayBuffer
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.replay.grounding import (
    ReplayGrounder,
    compact_demonstration,
    compact_structured_demonstration,
    compact_text,
)
from dreamgym_env.types import Demonstration, ExperienceRequest, Step

INSTRUCTION = "i need a slim fit men's shirt in charcoal, price lower than 50.00 dollars"
RESULTS = "\n".join(
    [
        'WebShop | results | query "men\'s shirt" | page 1 of 5 | 50 results',
        f"Instruction: {INSTRUCTION}",
        "[Back to Search] [Next >]",
        *[f"[B0{i:08d}] Brand {i} Men's Shirt - Slim Fit, Long Sleeve | ${10 + i}.99" for i in range(10)],
    ]
)


def test_short_text_is_kept_whole_minus_the_dropped_line():
    assert compact_text("a\nb", 100) == "a\nb"
    assert compact_text(RESULTS, 10_000, drop=INSTRUCTION) == RESULTS.replace(
        f"Instruction: {INSTRUCTION}\n", ""
    )


def test_long_text_keeps_header_wanted_line_and_counts_the_rest():
    text = compact_text(RESULTS, 200, drop=INSTRUCTION, keep=["[B000000007]"])
    lines = text.splitlines()
    assert lines[0] == RESULTS.splitlines()[0]
    assert any("[B000000007]" in line for line in lines)
    assert INSTRUCTION not in text
    assert lines[-1].startswith("[... ") and lines[-1].endswith("more lines]")
    shown = len(lines) - 2
    assert lines[-1] == f"[... {11 - shown} more lines]"
    assert len(text) <= 200 + len(lines[-1]) + 1


def test_wanted_line_too_long_is_cut_not_lost():
    long_item = "[B0LONG] " + "very long title " * 30
    text = compact_text(f"header\n{long_item}\nother", 120, keep=["[B0LONG]"])
    assert "[B0LONG]" in text and "[...]" in text


def test_compact_demonstration_drops_its_instruction_and_keeps_the_clicked_item():
    demo = Demonstration(
        state=RESULTS, action="click[B000000009]", next_state=RESULTS, task_instruction=INSTRUCTION
    )
    small = compact_demonstration(demo, state_chars=160, next_state_chars=240, arguments=("B000000009",))
    assert "[B000000009]" in small.state and INSTRUCTION not in small.state + small.next_state
    assert len(small.state) < len(demo.state) and small.action == demo.action


def test_structured_demonstration_shows_what_changed_before_and_after_without_its_instruction():
    state = {"kind": "results", "instruction": INSTRUCTION, "query": "shirt", "page": 1, "item": None}
    after = {**state, "kind": "item", "item": {"id": "B000000009", "title": "a shirt"}}
    demo = Demonstration(
        state=json.dumps(state),
        action="click[B000000009]",
        next_state=json.dumps(after),
        task_instruction=INSTRUCTION,
    )
    small = compact_structured_demonstration(demo, chars=600)
    assert small is not None
    assert json.loads(small.state) == {"kind": "results", "item": None}
    assert json.loads(small.next_state) == {"kind": "item", "item": {"id": "B000000009", "title": "a shirt"}}
    long = demo.model_copy(update={"state": json.dumps({**state, "item": "q" * 900})})
    clipped = compact_structured_demonstration(long, chars=600)
    assert clipped is not None and len(clipped.state) == 600 and clipped.state.endswith(" [...]")
    assert (
        compact_structured_demonstration(Demonstration(state=RESULTS, action="x", next_state="{}"), chars=600)
        is None
    )
    assert (
        compact_structured_demonstration(Demonstration(state="[1]", action="x", next_state="[2]"), chars=600)
        is None
    )


def test_structured_demonstration_lists_show_their_first_rows_and_the_one_the_action_names():
    rows = [{"id": f"B{i}", "price": i} for i in range(5)]
    results = {"kind": "results", "results": rows, "item": None}
    search = Demonstration(
        state=json.dumps({"kind": "search", "results": []}),
        action="search[x]",
        next_state=json.dumps(results),
    )
    shown = compact_structured_demonstration(search, chars=600)
    assert shown is not None and json.loads(shown.next_state)["results"] == [*rows[:2], "[... 3 more]"]
    item = {"kind": "item", "results": [], "item": {"id": "B3"}}
    click = Demonstration(state=json.dumps(results), action="click[B3]", next_state=json.dumps(item))
    kept = compact_structured_demonstration(click, chars=600, arguments=("B3",))
    assert kept is not None and json.loads(kept.state)["results"] == [*rows[:2], rows[3], "[... 2 more]"]
    unnamed = compact_structured_demonstration(click, chars=600)
    assert unnamed is not None and json.loads(unnamed.state)["results"] == [*rows[:2], "[... 3 more]"]


def test_an_alfworld_demonstration_keeps_the_lines_of_the_objects_its_action_names():
    room = [
        "-= Welcome to TextWorld, ALFRED! =-",
        *(f"On the shelf {i}, you see nothing." for i in range(1, 9)),
    ]
    state = "\n".join([*room, "On the countertop 1, you see a apple 1, and a knife 2."])
    demo = Demonstration(
        state=state, action="take apple 1 from countertop 1", next_state="You pick up the apple 1."
    )
    arguments = get_domain("alfworld").action_arguments(demo.action)
    assert arguments == ("apple 1", "countertop 1")
    small = compact_demonstration(demo, state_chars=120, next_state_chars=120, arguments=arguments)
    assert "On the countertop 1, you see a apple 1" in small.state and "shelf 8" not in small.state


def test_grounder_compacts_structured_states_field_by_field(webshop_task):
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    task = webshop_task.model_copy(update={"instruction": INSTRUCTION})
    state = json.dumps({"kind": "search", "instruction": INSTRUCTION, "query": "", "page": 1})
    after = json.dumps({"kind": "results", "instruction": INSTRUCTION, "query": "shirt", "page": 1})
    buffer.add_steps(task, [Step(state=state, action="search[shirt]", next_state=after)], source="offline")
    request = ExperienceRequest(prompt=WEBSHOP_PROMPT, task=webshop_task, state=state, action="search[shirt]")
    (demo,) = ReplayGrounder(buffer, k=1).demonstrations(request)
    assert json.loads(demo.state) == {"kind": "search", "query": ""}
    assert json.loads(demo.next_state) == {"kind": "results", "query": "shirt"}
    (whole,) = ReplayGrounder(buffer, k=1, state_chars=None, next_state_chars=None).demonstrations(request)
    assert whole.state == state and whole.next_state == after


def test_grounder_answers_k_compacted_demonstrations(webshop_task):
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    task = webshop_task.model_copy(update={"instruction": INSTRUCTION})
    steps = [
        Step(state=RESULTS, action=f"click[B0{i:08d}]", next_state=f"item {i}\n{RESULTS}") for i in range(6)
    ]
    buffer.add_steps(task, steps, source="offline")
    grounder = ReplayGrounder(buffer, k=4)
    request = ExperienceRequest(
        prompt=WEBSHOP_PROMPT, task=webshop_task, state=RESULTS, action="click[B000000003]"
    )
    demos = grounder.demonstrations(request)
    assert len(demos) == 4 and demos[0].action == "click[B000000003]"
    assert all(len(d.state) < len(RESULTS) and INSTRUCTION not in d.state for d in demos)
    whole = ReplayGrounder(buffer, k=2, state_chars=None, next_state_chars=None).demonstrations(request)
    assert whole[0].state == RESULTS
    assert ReplayGrounder(buffer, k=0).demonstrations(request) == []
    assert ReplayGrounder(buffer, k=4, sources=["synthetic"]).demonstrations(request) == []


def test_prefetch_answers_the_next_matching_request_once(webshop_task, monkeypatch):
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    steps = [Step(state=RESULTS, action=f"click[B0{i:08d}]", next_state=f"item {i}") for i in range(6)]
    buffer.add_steps(webshop_task, steps, source="offline")
    grounder = ReplayGrounder(buffer, k=2)
    grounder.prefetch("webshop", [(RESULTS, "click[B000000001]"), (RESULTS, "click[B000000002]")])
    calls: list[str] = []
    monkeypatch.setattr(buffer, "search", lambda *a, **kw: calls.append("search") or [])
    request = ExperienceRequest(
        prompt=WEBSHOP_PROMPT, task=webshop_task, state=RESULTS, action="click[B000000002]"
    )
    assert grounder.demonstrations(request)[0].action == "click[B000000002]" and calls == []
    assert grounder.demonstrations(request) == [] and calls == ["search"]  # used up: searched again
    grounder.clear_prefetched()
    other = request.model_copy(update={"action": "click[B000000001]"})
    assert grounder.demonstrations(other) == [] and calls == ["search", "search"]


def test_grounder_arguments_are_checked():
    buffer = ExperienceReplayBuffer(embedder=HashedEmbedder())
    with pytest.raises(ConfigurationError):
        ReplayGrounder(buffer, k=-1)
    with pytest.raises(ConfigurationError, match="unknown sources"):
        ReplayGrounder(buffer, sources=["dreamed"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="ExperienceReplayBuffer"):
        ReplayGrounder(object())  # type: ignore[arg-type]
