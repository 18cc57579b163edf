"""An experience model behind any OpenAI-compatible chat endpoint: OpenAI, vLLM, SGLang, Ollama, llama.cpp.

Requests of a batch run concurrently (at most ``max_concurrency`` calls in flight), each asking
for the transition JSON through :class:`~dreamgym_env.experience.transport.EndpointTransport`
(structured output, retries, typed errors). Answers that do not parse (or were cut at
``max_tokens``) are re-asked with a correction. When both budgets are spent, or when the
request's total ``deadline_s`` has passed (its attempts, backoff and re-asks together), the typed
error from :mod:`dreamgym_env.errors` is raised: a transition is never invented.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamgym_env.experience.answers import AnswerJudge
from dreamgym_env.experience.base import ExperienceModel, gather_or_cancel
from dreamgym_env.experience.config import EndpointConfig
from dreamgym_env.experience.discovery import resolve_config
from dreamgym_env.experience.prompt import (
    answer_state_schema,
    carried_values,
    clip,
    messages,
    transition_schema,
)
from dreamgym_env.experience.transport import Deadline, EndpointTransport, FormatMode
from dreamgym_env.types import ExperienceRequest, Transition


class OpenAIExperienceModel(ExperienceModel):
    """Experience model served by an OpenAI-compatible ``/chat/completions`` endpoint.

    Settings come from ``config`` or keyword arguments (see
    :class:`~dreamgym_env.experience.config.EndpointConfig`), falling back to the ``DREAMGYM_*``
    and ``OPENAI_*`` environment variables::

        model = OpenAIExperienceModel(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-8B")
        transitions = await model.predict(requests)   # or model.predict_sync(requests)

    Several servers of the same model share the load: ``base_url=["http://a:8000/v1",
    "http://b:8000/v1"]`` (or ``DREAMGYM_BASE_URL=http://a:8000/v1,http://b:8000/v1``). Each
    transition's ``usage`` names the endpoint that answered (``endpoint``) and holds the running
    request and failure counts of every endpoint (``endpoints``).

    The HTTP session and the concurrency limit belong to the event loop that uses them; a model
    used from another loop (a new ``asyncio.run``) gets a fresh session there.
    """

    def __init__(self, config: EndpointConfig | None = None, **settings: Any) -> None:
        if config is None:
            config = resolve_config(**settings)  # asks the endpoint for its model when none is named
        elif settings:
            config = config.replace(**settings)
        self.config = config
        self.model_id = self.config.model
        super().__init__()
        self.transport = EndpointTransport(config)

    @property
    def format_mode(self) -> FormatMode:
        """The structured-output mode that later calls will use (downgraded when refused)."""
        return self.transport.format_mode

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.config.display_url!r}, model={self.config.model!r})"

    async def aclose(self) -> None:
        """Close the HTTP session of the running loop."""
        await self.transport.aclose()

    async def predict(self, requests: Sequence[ExperienceRequest]) -> list[Transition]:
        """Answer each request, concurrently, in order; the first failure cancels the rest."""
        return await gather_or_cancel([self._predict_one(r) for r in requests])

    async def _predict_one(self, request: ExperienceRequest) -> Transition:
        base = messages(request.prompt, request)
        context = f"task {request.task.id!r}, action {clip(request.action, 80)!r}"
        answer_schema = answer_state_schema(request)
        judge = AnswerJudge(
            base,
            context,
            self.config.describe(),
            self.model_id,
            self.config.max_tokens,
            self.config.max_output_reasks,
            answer_schema,
            carried_values(request),
        )
        schema = transition_schema(answer_schema)
        # Strict mode needs every field required; a state has optional ones.
        strict = request.state_schema is None
        conversation, calls = base, 0
        deadline = Deadline(self.config.deadline_s)  # one for the request, re-asks included
        while True:
            reply = await self.transport.complete(
                conversation,
                schema=schema,
                schema_name="transition",
                strict=strict,
                context=context,
                deadline=deadline,
            )
            calls += reply.calls
            answer = judge.judge(
                reply.text,
                reply.finish_reason,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                attempts=calls,
            )
            if isinstance(answer, Transition):
                answer.usage.endpoint = reply.endpoint
                answer.usage.endpoints = self.transport.counts()
                return answer
            conversation = answer
