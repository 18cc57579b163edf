"""An experience model behind any OpenAI-compatible chat endpoint: OpenAI, vLLM, SGLang, Ollama, llama.cpp.

Requests of a batch run concurrently (at most ``max_concurrency`` calls in flight), each asking
for the transition JSON through :class:`~dreamgym_env.experience.transport.EndpointTransport`
(structured output, retries, typed errors). Answers that do not parse (or were cut at
``max_tokens``) are re-asked with a correction. When both budgets are spent, or when the
request's total ``deadline_s`` has passed (its attempts, backoff and re-asks together), the typed
error from :mod:`dreamgym_env.errors` is raised: a transition is never invented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dreamgym_env.experience.answers import ChatReply
from dreamgym_env.experience.backend import ChatExperienceModel, Deadline
from dreamgym_env.experience.config import EndpointConfig
from dreamgym_env.experience.discovery import resolve_config
from dreamgym_env.experience.transport import EndpointTransport, FormatMode
from dreamgym_env.types import Transition


class OpenAIExperienceModel(ChatExperienceModel):
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
        super().__init__(
            max_tokens=config.max_tokens, max_reasks=config.max_output_reasks, deadline_s=config.deadline_s
        )
        self.transport = EndpointTransport(config)

    @property
    def format_mode(self) -> FormatMode:
        """The structured-output mode that later calls will use (downgraded when refused)."""
        return self.transport.format_mode

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.config.display_url!r}, model={self.config.model!r})"

    def describe(self) -> str:
        """The model and the endpoints that serve it (no key, no credentials in a URL)."""
        return f"{self.config.describe()}, an OpenAI-compatible endpoint"

    async def aclose(self) -> None:
        """Close the HTTP session of the running loop."""
        await self.transport.aclose()

    @property
    def backend(self) -> str:
        return self.config.describe()

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        deadline: Deadline | None = None,
        context: str = "chat",
    ) -> ChatReply:
        """One chat completion through the endpoint transport (retries, structured-output downgrade)."""
        return await self.transport.complete(
            messages,
            schema=schema,
            schema_name="transition",
            strict=schema is not None and every_property_required(schema),
            context=context,
            deadline=deadline,
        )

    def _annotated(self, transition: Transition) -> Transition:
        transition.usage.endpoints = self.transport.counts()
        return transition


def every_property_required(schema: Mapping[str, Any]) -> bool:
    """Whether every object in ``schema`` requires all its properties (what strict structured output needs)."""
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if set(schema.get("required") or ()) != set(properties):
            return False
        return all(
            every_property_required(value) for value in properties.values() if isinstance(value, Mapping)
        )
    return all(
        every_property_required(item)
        for key in ("items", "anyOf", "oneOf")
        for item in ([schema[key]] if isinstance(schema.get(key), Mapping) else schema.get(key) or [])
        if isinstance(item, Mapping)
    )
