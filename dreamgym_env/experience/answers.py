"""Turning a chat model's answers into a transition, or into a re-ask: shared by every backend."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from dreamgym_env.errors import ModelOutputError
from dreamgym_env.experience.parsing import OutputParseError, parse_transition
from dreamgym_env.experience.prompt import clip
from dreamgym_env.types import Transition, Usage

logger = logging.getLogger(__name__)

REASK_OUTPUT_CHARS = 1000
"""How much of a bad answer a re-ask shows the model."""

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class ChatReply:
    """One answer of an endpoint.

    ``text`` is ``None`` when the answer had no choice; ``finish_reason`` ``"length"`` means it
    was cut at the token limit; ``calls`` counts the calls it took, retries included;
    ``endpoint`` names the endpoint that answered (its URL without credentials);
    ``cached_prompt_tokens`` the prompt tokens the server reused from its KV cache.
    """

    text: str | None
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 1
    endpoint: str = ""
    cached_prompt_tokens: int = 0


def reask_messages(messages_sent: Messages, output: str, problem: str) -> Messages:
    """The conversation of a re-ask: the original prompt, the bad answer, a correction.

    Resending the prompt unchanged would get the same bad answer at temperature 0.
    """
    return [
        *messages_sent[:2],
        {"role": "assistant", "content": clip(output, REASK_OUTPUT_CHARS) or "(empty answer)"},
        {
            "role": "user",
            "content": f"That answer could not be used: {problem}. Answer again with only the JSON "
            'object {"reasoning": ..., "next_state": ..., "reward": ..., "done": ...}; keep the '
            "reasoning short.",
        },
    ]


@dataclass
class AnswerJudge:
    """Judges the successive answers to one request: a transition, a re-ask, or a typed error.

    Tokens add up over every answer; after ``max_reasks`` re-asks a bad answer raises
    :class:`~dreamgym_env.errors.ModelOutputError` with an excerpt. A transition is never
    invented from a bad answer.
    """

    messages: Messages
    context: str
    backend: str
    model_id: str
    max_tokens: int
    max_reasks: int
    state_schema: dict[str, Any] | None = None
    carried: dict[str, Any] = field(default_factory=dict)
    updated: dict[str, dict[str, Any]] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    reasks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def judge(
        self,
        output: str | None,
        finish_reason: str | None,
        *,
        prompt_tokens: int,
        completion_tokens: int,
        attempts: int,
    ) -> Transition | Messages:
        """The transition in ``output`` (``None``: the answer had no choice), else the re-ask."""
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        if output is None:
            problem = "the answer has no choices"
        elif finish_reason == "length":
            problem = f"it was cut off at max_tokens={self.max_tokens} (truncated)"
        else:
            usage = Usage(
                prompt_tokens=self.prompt_tokens,
                completion_tokens=self.completion_tokens,
                latency_s=time.perf_counter() - self.started,
                attempts=attempts,
                model=self.model_id,
            )
            try:
                return parse_transition(output, usage, self.state_schema, self.carried, self.updated)
            except OutputParseError as exc:
                problem = str(exc)
        self.reasks += 1
        if self.reasks > self.max_reasks:
            raise ModelOutputError(
                f"{self.context}: the model kept answering text that is not a transition ({problem})",
                output=output or "",
                backend=self.backend,
                attempts=attempts,
            )
        logger.debug("%s: %s; re-asking (%d of %d)", self.backend, problem, self.reasks, self.max_reasks)
        return reask_messages(self.messages, output or "", problem)
