"""AgentGym's trajectory items, read as offline trajectories and written back."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import collect_trajectories
from dreamgym_env.cli import app
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.replay.agentgym import from_agentgym, read_agentgym, to_agentgym, write_agentgym
from dreamgym_env.replay.jsonl import read_trajectories
from dreamgym_env.testing import ScriptedOpenAIServer

DATA = Path(__file__).parent / "data" / "agentgym_webshop.json"
WEBSHOP = get_domain("webshop")
runner = CliRunner()


@pytest.fixture
def items() -> list[dict]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def test_items_become_trajectories_of_the_domain(items):
    bought, paid, stopped = from_agentgym(items, WEBSHOP)
    first = items[0]["conversations"]
    assert bought.task.id == "webshop_6" and bought.task.domain == "webshop"
    assert bought.task.instruction.startswith("i need a waterproof pet bed in rose gold")
    assert bought.task.initial_state == first[2]["value"] == bought.steps[0].state
    assert [s.action for s in bought.steps] == [
        "search[waterproof pet bed rose gold small]",
        "click[B0POQL1KAO]",
        "click[rose gold]",
        "click[small]",
    ]
    assert bought.steps[0].next_state == first[4]["value"] == bought.steps[1].state
    assert all(s.reward == 0.0 and not s.done and s.action_valid and s.reasoning == "" for s in bought.steps)
    # the buy has no observation after it: no step, but kept with its thought
    meta = bought.metadata["agentgym"]
    assert meta["final_action"] == "click[Buy Now]" and meta["final_thought"].startswith("Everything matches")
    assert (
        meta["thoughts"][1] == "The first result is a waterproof pet bed under 100 dollars. I will open it."
    )
    assert meta["preamble"] == first[:2] and bought.metadata["won"] is None  # the item says nothing of it
    assert (bought.source, bought.policy) == ("offline", "agentgym")
    # an evaluation run's item: its buy was answered and ended the episode with the item's reward
    assert paid.steps[-1].action == "click[Buy Now]" and paid.steps[-1].reward == 1.0 and paid.steps[-1].done
    assert paid.metadata["won"] is True and paid.won and "final_action" not in paid.metadata["agentgym"]
    # an action outside the grammar is kept, marked invalid; a search is no end, the episode was cut
    assert [s.action_valid for s in stopped.steps] == [False, True]
    assert stopped.steps[-1].reward == 0.0 and not stopped.steps[-1].done
    assert stopped.metadata["won"] is False and stopped.metadata["agentgym"]["item"] == {
        "reward": 0.0,
        "success": False,
    }


def test_from_to_from_gives_the_same_trajectories(items):
    trajectories = from_agentgym(items, WEBSHOP)
    written = to_agentgym(trajectories)
    assert written == items  # the ReAct turns of the file are in AgentGym's own layout
    assert from_agentgym(written, WEBSHOP) == trajectories


def test_recorded_trajectories_go_to_agentgym_with_the_domain_s_prompt():
    env = WEBSHOP.make_reference_env(split="test", max_steps=WEBSHOP.max_episode_steps)
    expert = collect_trajectories(env, make_policy("expert", WEBSHOP), 2, progress=False)
    items = to_agentgym(expert, prompt=WEBSHOP.agent_prompt)
    turns = items[0]["conversations"]
    assert items[0]["item_id"] == expert[0].task.id
    assert turns[0] == {"from": "human", "loss": None, "value": WEBSHOP.agent_prompt}
    assert turns[1] == {"from": "gpt", "loss": False, "value": "Ok."}
    assert turns[3] == {"from": "gpt", "loss": True, "value": f"Action:\n{expert[0].steps[0].action}"}
    again = from_agentgym(items, WEBSHOP)
    for before, after in zip(expert, again, strict=True):
        assert after.task.instruction == before.task.instruction
        assert [(s.state, s.action, s.next_state, s.reward, s.done) for s in after.steps] == [
            (s.state, s.action, s.next_state, s.reward, s.done) for s in before.steps
        ]


def _broken(items: list[dict], change) -> list[dict]:
    broken = copy.deepcopy(items)
    change(broken)
    return broken


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda b: b.__setitem__(1, "webshop_12"), "AgentGym item 1: must be an object, got str"),
        (lambda b: b[0].pop("item_id"), "AgentGym item 0: 'item_id' must be a non-empty string"),
        (
            lambda b: b[2].__setitem__("conversations", None),
            "AgentGym item 2 (webshop_40): 'conversations' must be a non-empty list of turns",
        ),
        (
            lambda b: b[1]["conversations"][3].__setitem__("from", "assistant"),
            "AgentGym item 1 (webshop_12): turn 3 must be an object with 'from' ('human' or 'gpt')",
        ),
        (
            lambda b: b[0].__setitem__("conversations", b[0]["conversations"][:3]),
            "AgentGym item 0 (webshop_6): no agent turn with an 'Action:' line",
        ),
        (
            lambda b: b[1]["conversations"].insert(5, {"from": "human", "value": "again"}),
            "AgentGym item 1 (webshop_12): turn 5: expected the agent's turn with an 'Action:' line",
        ),
        (
            lambda b: b[1]["conversations"][5].__setitem__("value", "Thought: done.\nAction: "),
            "AgentGym item 1 (webshop_12): turn 5: the action after 'Action:' is empty",
        ),
        (
            lambda b: b[2].__setitem__("reward", "high"),
            "AgentGym item 2 (webshop_40): 'reward' must be a number, got 'high'",
        ),
    ],
)
def test_a_malformed_item_is_named(items, change, expected):
    with pytest.raises(ConfigurationError) as caught:
        from_agentgym(_broken(items, change), WEBSHOP)
    assert str(caught.value).startswith(expected)


def test_files_as_a_json_list_or_json_lines(items, tmp_path):
    assert read_agentgym(DATA) == items
    lines = tmp_path / "inference.jsonl"
    lines.write_text("\n".join(json.dumps(item) for item in items) + "\n", encoding="utf-8")
    assert read_agentgym(lines) == items
    assert (
        write_agentgym(tmp_path / "again.json", items) == 3
        and read_agentgym(tmp_path / "again.json") == items
    )
    lines.write_text(json.dumps(items[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"inference\.jsonl:2: not JSON"):
        read_agentgym(lines)
    with pytest.raises(DataError, match="cannot read AgentGym items"):
        read_agentgym(tmp_path / "missing.json")


@pytest.mark.parametrize("name", ["webshop", "alfworld"])
def test_the_instruction_is_found_in_a_first_observation(name):
    domain = get_domain(name)
    task = domain.tasks("test")[0]
    assert domain.instruction_in(task.initial_state) == task.instruction
    assert domain.instruction_in(domain.render_observation(task.initial_state)) == task.instruction
    assert domain.instruction_in("a page without one") == ""


def test_convert_then_measure_fidelity_without_a_reference_env(tmp_path, monkeypatch):
    out = tmp_path / "webshop.jsonl"
    result = runner.invoke(
        app, ["buffer", "convert", str(DATA), "--from", "agentgym", "--domain", "webshop", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "3 trajectories, 10 steps (1 last actions without a recorded outcome" in result.stdout
    assert read_trajectories(out) == from_agentgym(read_agentgym(DATA), WEBSHOP)
    back = tmp_path / "back.json"
    result = runner.invoke(app, ["buffer", "convert", str(out), "--to", "agentgym", "--out", str(back)])
    assert result.exit_code == 0 and read_agentgym(back) == read_agentgym(DATA), result.output

    def no_reference_env(self, **kwargs):
        raise AssertionError("measuring recorded steps made a reference env")

    monkeypatch.setattr(type(WEBSHOP), "make_reference_env", no_reference_env)
    with ScriptedOpenAIServer(model_name="echo-model") as server:
        monkeypatch.setenv("DREAMGYM_BASE_URL", server.url)
        monkeypatch.delenv("DREAMGYM_API_KEY", raising=False)
        measured = runner.invoke(
            app,
            [
                "fidelity",
                "--trajectories",
                str(out),
                "--model",
                "endpoint:echo-model",
                "--out",
                str(tmp_path / "f"),
            ],
        )
        asked = server.requests_total
    assert measured.exit_code == 0, measured.output
    report = json.loads((tmp_path / "f" / "fidelity.json").read_text())
    run = report["runs"]["text/none"]
    # the 9 steps the grammar accepts, in text mode; "after <action>" is a valid text state, never the page
    assert report["n"] == asked == 9 and report["supply"] == "none"
    assert run["valid"] == 1.0 and run["exact_match"] == 0.0 and run["model_share"] is None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--from", "agentgym"], "--from agentgym needs --domain"),
        (["--from", "agentgym", "--to", "agentgym"], "give one of --from or --to"),
        (
            ["--from", "sharegpt", "--domain", "webshop"],
            "give one of --from or --to, with a format of agentgym",
        ),
        ([], "give one of --from or --to"),
    ],
)
def test_convert_refuses_what_it_cannot_do(args, expected, tmp_path):
    result = runner.invoke(app, ["buffer", "convert", str(DATA), *args, "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {expected}"), result.output
    assert not (tmp_path / "x").exists()


def test_a_malformed_file_is_one_line_naming_the_item(items, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_broken(items, lambda b: b[1].pop("conversations"))), encoding="utf-8")
    result = runner.invoke(
        app,
        [
            "buffer",
            "convert",
            str(bad),
            "--from",
            "agentgym",
            "--domain",
            "webshop",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 2 and result.stderr.startswith("error: AgentGym item 1 (webshop_12):")


def test_an_example_exchange_in_the_conversation_s_start_is_preamble(items):
    example = [
        {"from": "human", "loss": None, "value": "WebShop [SEP] Instruction: [SEP] an example [SEP] Search"},
        {"from": "gpt", "loss": False, "value": "Thought:\nAn example.\n\nAction:\nsearch[an example]"},
    ]
    items[0]["conversations"][2:2] = example
    (trajectory,) = from_agentgym(items[:1], WEBSHOP)
    assert trajectory.metadata["agentgym"]["preamble"] == items[0]["conversations"][:4]
    assert trajectory.steps[0].action == "search[waterproof pet bed rose gold small]"
    assert to_agentgym([trajectory]) == items[:1]
