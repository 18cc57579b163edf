"""One chat completion behind every experience model: :class:`ChatBackend` and :class:`ChatExperienceModel`.

A backend answers one chat conversation (``await complete(messages, schema=..., deadline=...)
-> ChatReply``): the endpoint transport, the embedded llama.cpp runtime, the ``transformers``
path, a test's double. :class:`ChatExperienceModel` turns any backend into an experience model
and owns what is the same for all of them: the prompt of a request, the judge of each answer,
the re-asks with a correction, the deadline over them, and (from
:class:`~dreamgym_env.experience.base.ExperienceModel`) the background event loop for sync
callers. The task writer and the LLM agent call the same backends directly.

Example (a backend of a few lines)::

    class Echo:
        model_id = "echo"
        async def complete(self, messages, *, schema=None, deadline=None, context="chat"):
            return ChatReply('{"reasoning": "r", "next_state": "s", "reward": 0, "done": false}')

    model = ChatExperienceModel(Echo())
    transition = model.predict_one(request)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from dreamgym_env.experience.answers import AnswerJudge, ChatReply
from dreamgym_env.experience.base import ExperienceModel, gather_or_cancel
from dreamgym_env.experience.config import DEFAULT_MAX_OUTPUT_REASKS
from dreamgym_env.experience.prompt import (
    answer_state_schema,
    carried_values,
    clip,
    messages,
    transition_schema,
    updated_values,
)
from dreamgym_env.types import ExperienceRequest, Transition

DEFAULT_MAX_TOKENS = 1024
"""A structured answer is 150-900 tokens (a WebArena tree the longest); the cap stops a model that runs away."""


class Deadline:
    """The total time one request may take, over its attempts, backoff waits and re-asks.

    The clock starts with the first attempt (:meth:`start`, once a concurrency slot is free), so
    that waiting behind ``max_concurrency`` other calls does not count. ``None``: no deadline.
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._ends: float | None = None

    def start(self) -> None:
        """Start the clock, if not started yet."""
        if self._ends is None and self.seconds is not None:
            self._ends = time.monotonic() + self.seconds

    def remaining(self) -> float | None:
        """Seconds left (``None``: no deadline, or not started)."""
        return None if self._ends is None else self._ends - time.monotonic()

    def bound(self, timeout: float | None) -> float | None:
        """The timeout of the next attempt: ``timeout``, shortened to what is left."""
        left = self.remaining()
        if left is None:
            return timeout
        return left if timeout is None else min(timeout, left)


def request_context(request: ExperienceRequest) -> str:
    """How errors about ``request`` start: its task and action (a vector env finds its sub-env by it)."""
    return f"task {request.task.id!r}, action {clip(request.action, 80)!r}"


@runtime_checkable
class ChatBackend(Protocol):
    """Answers one chat conversation, constrained to a JSON schema where the backend can.

    A backend retries its own transport failures and raises the typed errors of
    :mod:`dreamgym_env.errors` when they persist; it never parses or re-asks (the caller does).
    ``deadline`` is shared by the calls of one request (its re-asks included); ``context`` starts
    the message of an error (``"task 'x', action 'y'"``).
    """

    model_id: str

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        deadline: Deadline | None = None,
        context: str = "chat",
    ) -> ChatReply:
        """Answer ``messages``; with ``schema``, JSON of that schema."""
        ...


class ChatExperienceModel(ExperienceModel):
    """An experience model on a :class:`ChatBackend`: prompt, judge and re-ask, once for every backend.

    Each request is asked with :func:`~dreamgym_env.experience.prompt.messages` and the
    transition schema of its mode; an answer that is not a whole, valid transition (or was cut
    at ``max_tokens``) is asked again with a correction, at most ``max_reasks`` times, then
    raised as :class:`~dreamgym_env.errors.ModelOutputError`; ``deadline_s`` bounds the
    request's calls together. A batch is asked concurrently; the first failure cancels the rest.

    Arguments:
        chat: the backend; ``None`` for a subclass that is its own backend (defines ``complete``).
        max_tokens: the answer's token cap (named in the re-ask of a cut answer).
        max_reasks: re-asks after an unusable answer.
        deadline_s: the total seconds of a request, re-asks included (``None``: none).
        system_prompt: ``False`` for a model trained without one (the request is its user turn).
    """

    def __init__(
        self,
        chat: ChatBackend | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_reasks: int = DEFAULT_MAX_OUTPUT_REASKS,
        deadline_s: float | None = None,
        system_prompt: bool = True,
    ) -> None:
        super().__init__()
        self.chat: ChatBackend = chat if chat is not None else self  # type: ignore[assignment]
        if chat is not None:
            self.model_id = chat.model_id
        self.max_tokens, self.max_reasks = max_tokens, max_reasks
        self.deadline_s, self.system_prompt = deadline_s, system_prompt

    @property
    def backend(self) -> str:
        """How errors and logs name the backend (its ``backend`` attribute, else its model id)."""
        chat = self.chat if self.chat is not self else None
        return str(getattr(chat, "backend", "") or f"chat:{self.model_id}")

    async def predict(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        """Answer the requests concurrently, in their order; the first failure cancels the rest."""
        if len(requests) == 1:
            return [await self._predict_one(requests[0])]
        return await gather_or_cancel([self._predict_one(request) for request in requests])

    async def _predict_one(self, request: ExperienceRequest) -> Transition:
        base = messages(request.prompt, request)
        if not self.system_prompt:
            base = [message for message in base if message["role"] != "system"]
        context = request_context(request)
        answer_schema = answer_state_schema(request)
        judge = AnswerJudge(
            base,
            context,
            self.backend,
            self.model_id,
            self.max_tokens,
            self.max_reasks,
            answer_schema,
            carried_values(request),
            updated_values(request),
        )
        schema = transition_schema(answer_schema)
        conversation, calls, cached = base, 0, 0
        deadline = Deadline(self.deadline_s)  # one for the request, re-asks included
        while True:
            reply = await self.chat.complete(conversation, schema=schema, deadline=deadline, context=context)
            calls += reply.calls
            cached += reply.cached_prompt_tokens
            answer = judge.judge(
                reply.text,
                reply.finish_reason,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                attempts=calls,
            )
            if isinstance(answer, Transition):
                usage = answer.usage.model_copy(
                    update={"cached_prompt_tokens": cached, "endpoint": reply.endpoint}
                )
                return self._annotated(answer.model_copy(update={"usage": usage}))
            conversation = answer

    def _annotated(self, transition: Transition) -> Transition:
        """A hook for a backend's own counters in the transition's usage; unchanged by default."""
        return transition
