r"""AgentGym's trajectory format, to and from offline trajectories (docs/data-format.md).

AgentGym (github.com/WooooDyy/AgentGym) releases its trajectory sets (AgentTraj-L: WebShop,
ALFWorld and more, on Hugging Face as ``AgentGym/AgentTraj-L``) as one JSON list of items, each
an agent's conversation with an env, in the ReAct format of its ``agentenv`` package::

    {"item_id": "webshop_6", "conversations": [
        {"from": "human", "loss": null, "value": "You are web shopping. ... (the env's rules)"},
        {"from": "gpt", "loss": false, "value": "Ok."},
        {"from": "human", "loss": null, "value": "WebShop [SEP] Instruction: [SEP] ... [SEP] Search"},
        {"from": "gpt", "loss": true, "value": "Thought:\nI think ...\n\nAction:\nsearch[...]"},
        {"from": "human", "loss": null, "value": "<the page the search opened>"},
        ...]}

``loss`` marks the turns a model is trained on (``false``: the conversation's start, which may
hold an example exchange); its evaluation runs write the same items with the episode's last
``reward``. :func:`from_agentgym` reads such items as
:class:`~dreamgym_env.types.Trajectory` objects of a domain: the human turn before the first
action (a gpt turn with an ``Action:`` line, not marked ``loss: false``) is the task's initial
state (its instruction is the one :meth:`~dreamgym_env.domain.Domain.instruction_in` finds
there), the turns before it (the env's rules and the model's ``Ok.``) the item's preamble; each
action turn and the human turn after it are a step. A step's action is the text after the turn's last ``Action:``; its
``Thought:`` text is the agent's, not the experience model's ``reasoning``, and is kept in the
trajectory's metadata. :func:`to_agentgym` writes trajectories back as items.

Rewards and episode ends: AgentGym's items record none per step. A step that another action
follows neither ended the episode nor (in these benchmarks, which pay at the end) earned a
reward: reward 0, not done. The last action of an AgentTraj-L item usually has no observation
after it; it is no step (nothing records what it led to) but the trajectory's
``metadata["agentgym"]["final_action"]``. Where the last action has its observation, that step
takes the item's ``reward`` (0 without one) and is done when the domain's grammar says the action
always ends an episode, or the episode was won in a domain whose episodes end at a win. An
item's ``success``, else its ``reward`` of 1, says whether it was won: ``metadata["won"]``,
``None`` where the item says neither.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from dreamgym_env.domain import ActionError, Domain
from dreamgym_env.errors import ConfigurationError, DataError
from dreamgym_env.replay.jsonl import numbered_lines
from dreamgym_env.types import Step, Task, Trajectory

__all__ = [
    "ACTION_MARK",
    "AGENTGYM_POLICY",
    "from_agentgym",
    "read_agentgym",
    "to_agentgym",
    "write_agentgym",
]

ACTION_MARK = "Action:"
"""What precedes the action in an agent's ReAct turn (its last occurrence, as AgentGym parses it)."""
THOUGHT_MARK = "Thought:"
AGENTGYM_POLICY = "agentgym"
"""The ``policy`` of a trajectory read from AgentGym's items."""
ACKNOWLEDGEMENT = "Ok."
"""The model's answer to the env's rules in AgentGym's conversations."""
ROLES = ("human", "gpt")


def _fail(index: int, item_id: object, message: str) -> ConfigurationError:
    named = f" ({item_id})" if isinstance(item_id, str) else ""
    return ConfigurationError(f"AgentGym item {index}{named}: {message}")


def _split_react(text: str) -> tuple[str, str] | None:
    """An agent turn's thought and action; ``None`` where it has no ``Action:``."""
    before, mark, action = text.rpartition(ACTION_MARK)
    if not mark:
        return None
    thought = before.strip()
    if thought.startswith(THOUGHT_MARK):
        thought = thought[len(THOUGHT_MARK) :].strip()
    return thought, action.strip()


def _react(thought: str, action: str) -> str:
    """An agent turn in AgentGym's ReAct format (``agentenv``'s ``to_react``)."""
    return f"{THOUGHT_MARK}\n{thought}\n\n{ACTION_MARK}\n{action}" if thought else f"{ACTION_MARK}\n{action}"


def _acts(turn: dict[str, Any]) -> bool:
    """Whether ``turn`` is the agent acting: a gpt turn with an ``Action:`` line, not one ``loss: false`` marks as the conversation's start."""
    return turn["from"] == "gpt" and turn.get("loss") is not False and _split_react(turn["value"]) is not None


def _turns(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    turns = item.get("conversations")
    if not isinstance(turns, list) or not turns:
        raise _fail(index, item.get("item_id"), "'conversations' must be a non-empty list of turns")
    for number, turn in enumerate(turns):
        if (
            not isinstance(turn, dict)
            or turn.get("from") not in ROLES
            or not isinstance(turn.get("value"), str)
        ):
            raise _fail(
                index,
                item.get("item_id"),
                f"turn {number} must be an object with 'from' ('human' or 'gpt') and a text 'value'",
            )
    return turns


def _outcome(index: int, item: dict[str, Any]) -> tuple[float | None, bool | None]:
    """The item's ``reward`` and whether it was won (``success``, else a reward of 1), where it says."""
    reward, success = item.get("reward"), item.get("success")
    number = (int, float)
    if reward is not None and (
        isinstance(reward, bool) or not isinstance(reward, number) or not math.isfinite(reward)
    ):
        raise _fail(index, item.get("item_id"), f"'reward' must be a number, got {reward!r}")
    if success is not None and not isinstance(success, (bool, *number)):
        raise _fail(index, item.get("item_id"), f"'success' must be a boolean or a number, got {success!r}")
    if success is not None:
        return reward, bool(success)
    return reward, (reward >= 1.0 if reward is not None else None)


def _trajectory(index: int, item: object, domain: Domain) -> Trajectory:
    if not isinstance(item, dict):
        raise _fail(index, None, f"must be an object, got {type(item).__name__}")
    item_id = item.get("item_id")
    if not isinstance(item_id, str) or not item_id:
        raise _fail(index, None, "'item_id' must be a non-empty string")
    turns = _turns(index, item)
    first = next((n for n, t in enumerate(turns) if _acts(t)), None)
    if first is None:
        raise _fail(index, item_id, f"no agent turn with an {ACTION_MARK!r} line: no trajectory to read")
    if first == 0 or turns[first - 1]["from"] != "human":
        raise _fail(index, item_id, f"turn {first}: the first action follows no observation")
    initial = observation = turns[first - 1]["value"]
    steps: list[Step] = []
    thoughts: list[str] = []
    final: dict[str, str] = {}
    for number in range(first, len(turns), 2):
        turn = turns[number]
        react = _split_react(turn["value"]) if turn["from"] == "gpt" else None
        if react is None:
            raise _fail(
                index, item_id, f"turn {number}: expected the agent's turn with an {ACTION_MARK!r} line"
            )
        thought, action = react
        if not action:
            raise _fail(index, item_id, f"turn {number}: the action after {ACTION_MARK!r} is empty")
        if number + 1 == len(turns):  # the last action, whose outcome the item does not record
            final = {"final_thought": thought, "final_action": action}
            break
        answer = turns[number + 1]
        if answer["from"] != "human":
            raise _fail(index, item_id, f"turn {number + 1}: expected the env's observation after an action")
        valid = not isinstance(domain.parse_action(action), ActionError)
        steps.append(Step(state=observation, action=action, next_state=answer["value"], action_valid=valid))
        thoughts.append(thought)
        observation = answer["value"]
    reward, won = _outcome(index, item)
    if steps and not final:  # the last action's outcome is recorded: it gets the item's
        last = steps[-1]
        parsed = domain.parse_action(last.action)
        ended = not isinstance(parsed, ActionError) and domain.is_terminal_action(parsed)
        steps[-1] = last.model_copy(
            update={"reward": reward or 0.0, "done": ended or bool(won and domain.ends_when_won)}
        )
    task = Task(
        id=item_id,
        domain=domain.name,
        instruction=domain.instruction_in(initial),
        initial_state=initial,
    )
    kept = {key: value for key, value in item.items() if key not in ("item_id", "conversations")}
    agentgym: dict[str, Any] = {
        "item_id": item_id,
        "preamble": turns[: first - 1],
        "thoughts": thoughts,
        **final,
    }
    if kept:
        agentgym["item"] = kept
    return Trajectory(
        task=task,
        steps=steps,
        source="offline",
        policy=AGENTGYM_POLICY,
        metadata={"won": won, "agentgym": agentgym},
    )


def from_agentgym(items: Sequence[object], domain: Domain) -> list[Trajectory]:
    """AgentGym's items (see the module docstring) as trajectories of ``domain``, one each.

    A malformed item raises :class:`~dreamgym_env.errors.ConfigurationError` naming its index
    (and item id) and what is wrong.
    """
    return [_trajectory(index, item, domain) for index, item in enumerate(items)]


def to_agentgym(trajectories: Iterable[Trajectory], *, prompt: str | None = None) -> list[dict[str, Any]]:
    """Trajectories as AgentGym's items: the inverse of :func:`from_agentgym` on its trajectories.

    A trajectory read from AgentGym keeps its item id, preamble, thoughts, final action and the
    item's other fields. Another starts with ``prompt`` answered ``Ok.`` where one is given
    (AgentGym's trainers expect the env's rules first), has its task id as item id, its actions
    without thoughts and its last step's reward as the item's ``reward``, as AgentGym's
    evaluation runs write it. Observations are the steps' states as recorded.
    """
    items = []
    for trajectory in trajectories:
        read = "agentgym" in trajectory.metadata
        meta = trajectory.metadata.get("agentgym", {})
        turns: list[dict[str, Any]] = list(meta.get("preamble", ()))
        if not read and prompt is not None:
            turns = [_human(prompt), {"from": "gpt", "loss": False, "value": ACKNOWLEDGEMENT}]
        steps = trajectory.steps
        turns.append(_human(steps[0].state if steps else trajectory.task.initial_state))
        thoughts = list(meta.get("thoughts", ()))
        for number, step in enumerate(steps):
            thought = thoughts[number] if number < len(thoughts) else ""
            turns += [_agent(thought, step.action), _human(step.next_state)]
        if "final_action" in meta:
            turns.append(_agent(meta.get("final_thought", ""), meta["final_action"]))
        fields = meta.get("item", {}) if read else ({"reward": steps[-1].reward} if steps else {})
        items.append({"item_id": meta.get("item_id", trajectory.task.id), "conversations": turns, **fields})
    return items


def _human(value: str) -> dict[str, Any]:
    return {"from": "human", "loss": None, "value": value}


def _agent(thought: str, action: str) -> dict[str, Any]:
    return {"from": "gpt", "loss": True, "value": _react(thought, action)}


def read_agentgym(path: str | Path) -> list[object]:
    """The items of an AgentGym file: a JSON list (AgentTraj-L) or JSON Lines (its evaluation runs' output)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read AgentGym items from {path}: {exc.strerror or exc}") from None
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
        return list(items)
    lines: list[object] = []
    for number, line in numbered_lines(path, "AgentGym items"):
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{number}: not JSON: {exc.msg}") from None
    return lines


def write_agentgym(path: str | Path, items: Sequence[dict[str, Any]]) -> int:
    """Write ``items`` as one JSON list (AgentTraj-L's layout); returns how many were written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(list(items), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return len(items)
