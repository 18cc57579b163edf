"""LLMAgent: a chat model acting in any domain, ReAct style, through an endpoint or the embedded model.

Each turn the model gets the domain's :attr:`~dreamgym_env.domain.Domain.agent_prompt`
and the answer format as its system prompt, and the task, the last few steps, the current
observation and the admissible actions (where the domain lists them) as the user message
(:func:`agent_messages`). It answers ``<think>...</think>`` then ``<action>...</action>``
(:func:`parse_agent_output`).

With ``constrained=True`` (the default on the embedded model, which does not keep to the tags)
the model answers JSON ``{"think": ..., "action": ...}`` instead, its decoder held to
:func:`answer_schema`: the action is one of the admissible actions, a slot such as ``<query>``
filled with one line of text (:func:`parse_constrained_output` reads it).

An answer without one usable action (no ``<action>`` tag, an unclosed or empty one, several of
them, an action over several lines; in constrained mode, an answer that is not that JSON) is an
*invalid output*: the decision says so
(``Decision.output_valid`` False, with the problem) and its action is
:data:`INVALID_OUTPUT_ACTION`, the empty action, which every domain's parser rejects. The
step is spent, the env answers its invalid-action feedback and the state does not change:
nothing is chosen on the model's behalf, and the run goes on. Transport failures (after the
endpoint's retries) are raised as the typed errors of :mod:`dreamgym_env.errors`.

Example::

    chat = make_chat_client("Qwen/Qwen3-8B", base_url="http://127.0.0.1:8000/v1")  # or "qwen-0.5b"
    agent = LLMAgent("webshop", chat)
    decisions = agent.act(turns)       # one request per turn, sent concurrently
    chat.close()
"""

from __future__ import annotations

import json
import re
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from dreamgym_env.agents.agent import Agent, Decision, Turn
from dreamgym_env.domain import ACTION_SLOT, Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.experience.answers import ChatReply
from dreamgym_env.experience.backend import ChatBackend
from dreamgym_env.experience.base import gather_or_cancel
from dreamgym_env.experience.local import LocalExperienceModel
from dreamgym_env.experience.prompt import clip

T = TypeVar("T")
Messages = list[dict[str, str]]

INVALID_OUTPUT_ACTION: Final = ""
"""The action stepped for an invalid output: empty, so the env rejects it (see the module docstring)."""
DEFAULT_HISTORY_LEN: Final = 4
"""Past steps shown in each prompt."""
OBSERVATION_CHARS: Final = 8000
"""The current observation is cut to this many characters."""
HISTORY_OBSERVATION_CHARS: Final = 600
"""Each past step's observation is cut to this many characters."""
MAX_LISTED_ACTIONS: Final = 100
"""At most this many admissible actions are listed (the rest are counted)."""
FORMAT_INSTRUCTIONS: Final = (
    "Answer format: first think briefly inside <think>...</think>, then give exactly one action "
    "inside <action>...</action>, on one line, written as the environment expects it. Where "
    "admissible actions are listed, choose one of them; replace a slot such as <query> with your own text."
)

JSON_FORMAT_INSTRUCTIONS: Final = (
    'Answer format: a JSON object {"think": "...", "action": "..."}: first think briefly, then give '
    "exactly one action, written as the environment expects it. Where admissible actions are "
    "listed, choose one of them; replace a slot such as <query> with your own text."
)
THOUGHT_CHARS: Final = 400
"""A constrained answer's thought is at most this long."""
SLOT_CHARS: Final = 100
"""A slot of an admissible action takes 1 to this many characters of one line in a constrained answer."""
_REGEX_SPECIAL = re.compile(r"([\\.^$|?*+()\[\]{}])")

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_ACTION = re.compile(r"<action>(.*?)</action>", re.DOTALL | re.IGNORECASE)
_ACTION_OPEN = re.compile(r"<action>", re.IGNORECASE)


@dataclass(frozen=True)
class AgentOutput:
    """What :func:`parse_agent_output` read from an answer: the action, or why there is none."""

    action: str | None
    thought: str = ""
    problem: str = ""


def parse_agent_output(text: str | None, finish_reason: str | None = "stop") -> AgentOutput:
    """Read ``<think>`` and ``<action>`` from a model's answer; never raises.

    The thought is the text of the closed ``<think>`` blocks (an unclosed one runs to the end of
    the answer); tags inside the thought are not read. The answer must then hold exactly one
    closed ``<action>`` tag around a non-empty, one-line action (surrounding blanks are
    stripped); otherwise ``action`` is ``None`` and ``problem`` says what is wrong.

    Example:
        >>> parse_agent_output("<think>Search first.</think><action>search[red shoes]</action>")
        AgentOutput(action='search[red shoes]', thought='Search first.', problem='')
        >>> parse_agent_output("search[red shoes]").problem
        'no <action> tag'
    """
    if text is None:
        return AgentOutput(None, "", "the answer had no choice")
    thoughts = [block.strip() for block in _THINK.findall(text)]
    visible = _THINK.sub(" ", text)
    unclosed = _THINK_OPEN.search(visible)
    if unclosed is not None:  # thinking that never ended: nothing after it is an answer
        thoughts.append(visible[unclosed.end() :].strip())
        visible = visible[: unclosed.start()]
    thought = "\n".join(t for t in thoughts if t)
    actions = _ACTION.findall(visible)
    if len(actions) == 1:
        action = actions[0].strip()
        if not action:
            return AgentOutput(None, thought, "the <action> tag is empty")
        if "\n" in action:
            return AgentOutput(None, thought, "the action spans several lines")
        return AgentOutput(action, thought)
    if actions:
        return AgentOutput(None, thought, f"{len(actions)} <action> tags, expected one")
    problem = "the <action> tag is not closed" if _ACTION_OPEN.search(visible) else "no <action> tag"
    if finish_reason == "length":
        problem += " (the answer was cut at max_tokens)"
    return AgentOutput(None, thought, problem)


def answer_schema(turn: Turn) -> dict[str, Any]:
    """The JSON schema of a constrained answer to ``turn``: a short thought and one admissible action.

    An admissible action with slots (``search[<query>]``) admits any text of one line, 1 to
    :data:`SLOT_CHARS` characters, in each slot; the others are taken as listed. A turn without
    admissible actions admits any one-line action.
    """
    listed = [str(a) for a in turn.info.get("admissible_actions") or ()]
    fixed = [a for a in listed if not ACTION_SLOT.search(a)]
    options: list[dict[str, Any]] = [{"type": "string", "enum": fixed}] if fixed else []
    options += [{"type": "string", "pattern": _slot_pattern(a)} for a in listed if ACTION_SLOT.search(a)]
    if not options:
        options = [{"type": "string", "pattern": r"^[^\n]{1,300}$"}]
    return {
        "type": "object",
        "properties": {
            "think": {"type": "string", "maxLength": THOUGHT_CHARS},
            "action": options[0] if len(options) == 1 else {"anyOf": options},
        },
        "required": ["think", "action"],
        "additionalProperties": False,
    }


def _slot_pattern(template: str) -> str:
    """A regular expression of ``template``'s actions: its fixed text as is, each slot one line of text."""
    fixed = [_REGEX_SPECIAL.sub(r"\\\1", part) for part in ACTION_SLOT.split(template)]
    return "^" + f"[^\\n\\[\\]]{{1,{SLOT_CHARS}}}".join(fixed) + "$"


def parse_constrained_output(text: str | None, finish_reason: str | None = "stop") -> AgentOutput:
    """Read a constrained answer, JSON ``{"think", "action"}``; never raises.

    Example:
        >>> parse_constrained_output('{"think": "Search first.", "action": "search[red shoes]"}')
        AgentOutput(action='search[red shoes]', thought='Search first.', problem='')
    """
    if text is None:
        return AgentOutput(None, "", "the answer had no choice")
    try:
        data = json.loads(text)
    except ValueError:
        cut = " (the answer was cut at max_tokens)" if finish_reason == "length" else ""
        return AgentOutput(None, "", f"the answer is not a JSON object{cut}")
    if not isinstance(data, dict):
        return AgentOutput(None, "", "the answer is not a JSON object")
    thought = str(data.get("think") or "").strip()
    action = data.get("action")
    if not isinstance(action, str) or not action.strip():
        return AgentOutput(None, thought, "the answer has no action")
    if "\n" in action.strip():
        return AgentOutput(None, thought, "the action spans several lines")
    return AgentOutput(action.strip(), thought)


def agent_messages(
    domain: Domain, turn: Turn, *, history_len: int = DEFAULT_HISTORY_LEN, constrained: bool = False
) -> Messages:
    """The chat messages of one turn: system (agent prompt and format), user (task, steps, observation, actions).

    ``constrained``: the answer format is the JSON of :func:`answer_schema`, not the tags.
    """
    instructions = JSON_FORMAT_INSTRUCTIONS if constrained else FORMAT_INSTRUCTIONS
    system = f"{domain.agent_prompt.strip()}\n\n{instructions}"
    parts: list[str] = []
    if turn.task is not None and turn.task.instruction:
        parts.append(f"# Task\n{turn.task.instruction}")
    recent = list(turn.history)[-history_len:] if history_len > 0 else []
    if recent:
        earlier = len(turn.history) - len(recent)
        title = "# Recent steps (oldest first"
        title += f"; {earlier} earlier step(s) not shown)" if earlier else ")"
        steps = [
            f"Action: {action}\nObservation: {clip(observation, HISTORY_OBSERVATION_CHARS)}"
            for action, observation in recent
        ]
        parts.append(title + "\n" + "\n\n".join(steps))
    parts.append(f"# Current observation\n{clip(turn.observation, OBSERVATION_CHARS)}")
    actions = turn.info.get("admissible_actions")
    if actions:
        listed = [f"- {action}" for action in list(actions)[:MAX_LISTED_ACTIONS]]
        if len(actions) > MAX_LISTED_ACTIONS:
            listed.append(f"- ... and {len(actions) - MAX_LISTED_ACTIONS} more")
        parts.append("# Admissible actions\n" + "\n".join(listed))
    parts.append(
        'Think, then answer with the JSON object {"think": ..., "action": ...}.'
        if constrained
        else "Think, then answer with exactly one <action>...</action>."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


class AgentChat(ChatBackend, Protocol):
    """The chat model of an :class:`LLMAgent`: a :class:`~dreamgym_env.experience.backend.ChatBackend` that sync code can run and close.

    :class:`~dreamgym_env.curriculum.chat.EndpointChat` (any OpenAI-compatible endpoint, the
    project's endpoint transport) and :class:`~dreamgym_env.experience.local.LocalExperienceModel`
    (the embedded model; up to its ``n_parallel`` conversations are decoded together) are ones.
    """

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the chat's event loop and wait for its result."""
        ...

    def close(self) -> None:
        """Release the chat's resources."""
        ...


class LLMAgent(Agent):
    """A chat model as the agent of a domain (see the module docstring for prompt and parsing).

    Arguments:
        domain: the domain (or its name) whose ``agent_prompt`` starts the system prompt.
        client: the chat model (an :class:`AgentChat`: the curriculum's ``EndpointChat``, or
            :class:`~dreamgym_env.experience.local.LocalExperienceModel`); the caller closes it (one client may serve several agents).
        history_len: past steps shown in each prompt.
        constrained: answer JSON held to :func:`answer_schema` by the model's decoder (the
            embedded model and endpoints with ``json_schema`` support); default: on for the
            embedded model, off (the tags) otherwise.
    """

    def __init__(
        self,
        domain: Domain | str,
        client: AgentChat,
        *,
        history_len: int = DEFAULT_HISTORY_LEN,
        constrained: bool | None = None,
    ) -> None:
        if history_len < 0:
            raise ConfigurationError(f"history_len must be >= 0, got {history_len}")
        self.domain = get_domain(domain)
        self.client = client
        self.history_len = history_len
        self.constrained = isinstance(client, LocalExperienceModel) if constrained is None else constrained
        self.name = f"llm:{client.model_id}"

    def act(self, turns: Sequence[Turn]) -> list[Decision]:
        """Ask the model once per turn, all turns concurrently, and parse each answer."""
        if not turns:
            return []
        calls = [
            self.client.complete(
                agent_messages(self.domain, t, history_len=self.history_len, constrained=self.constrained),
                schema=answer_schema(t) if self.constrained else None,
            )
            for t in turns
        ]
        replies = self.client.run(gather_or_cancel(calls))
        return [_decision(reply, self.constrained) for reply in replies]


def _decision(reply: ChatReply, constrained: bool) -> Decision:
    parse = parse_constrained_output if constrained else parse_agent_output
    output = parse(reply.text, reply.finish_reason)
    return Decision(
        action=output.action if output.action is not None else INVALID_OUTPUT_ACTION,
        thought=output.thought,
        output_valid=output.action is not None,
        problem=output.problem,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
    )
