"""Free-form JSON answers from the experience model's endpoint, for writing new tasks.

The experience-model interface predicts transitions; the task generator needs another answer
(a JSON list of tasks) from the same model: any :class:`~dreamgym_env.experience.backend.ChatBackend`
(``await complete(messages, schema=...) -> ChatReply``), here called :data:`ChatModel`. :class:`EndpointChat` provides it for any
OpenAI-compatible endpoint, with the settings of :class:`~dreamgym_env.experience.config.
EndpointConfig` (so ``EndpointChat.from_experience_model(model)`` talks to the same server as an
:class:`~dreamgym_env.experience.openai_backend.OpenAIExperienceModel`) and the same transport
(:class:`~dreamgym_env.experience.transport.EndpointTransport`: retries honouring
``Retry-After``, structured-output downgrade, token-field switch, error translation): a call
that keeps failing raises a :class:`~dreamgym_env.errors.ExperienceModelError` subclass, never an
``aiohttp`` or ``asyncio`` exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from dreamgym_env.errors import ConfigurationError
from dreamgym_env.experience.answers import ChatReply
from dreamgym_env.experience.backend import ChatBackend, Deadline
from dreamgym_env.experience.base import BackgroundLoop
from dreamgym_env.experience.config import EndpointConfig

DEFAULT_GENERATION_TEMPERATURE: Final = 0.8
"""Task writing samples (variety matters); transitions are predicted at the endpoint's own setting."""
DEFAULT_GENERATION_MAX_TOKENS: Final = 4096

__all__ = ["ChatModel", "ChatReply", "EndpointChat"]


ChatModel = ChatBackend
"""The chat model of the task writer: any :class:`~dreamgym_env.experience.backend.ChatBackend`."""


class EndpointChat(BackgroundLoop):
    """A :class:`ChatModel` on an OpenAI-compatible ``/chat/completions`` endpoint.

    Settings resolve like the experience model's (arguments, then ``DREAMGYM_*``/``OPENAI_*``
    variables, then defaults); ``temperature`` and ``max_tokens`` default to values suited to
    writing tasks. Structured output falls back from ``json_schema`` to ``json_object`` to plain
    text when the server refuses it. :meth:`run` runs a coroutine on a loop this object owns in a
    background thread (:class:`~dreamgym_env.experience.base.BackgroundLoop`), so that sync code
    (and code inside a running loop) can call it.
    ``context`` starts the message of its errors (``"task generation: ..."`` by default; the
    LLM agent's chat says ``"agent"``).

    Example::

        chat = EndpointChat(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-8B")
        chat = EndpointChat.from_experience_model(openai_experience_model)
    """

    loop_name = "dreamgym-chat"

    def __init__(
        self,
        config: EndpointConfig | None = None,
        *,
        temperature: float = DEFAULT_GENERATION_TEMPERATURE,
        max_tokens: int = DEFAULT_GENERATION_MAX_TOKENS,
        context: str = "task generation",
        **settings: Any,
    ) -> None:
        from dreamgym_env.experience.discovery import resolve_config  # the transport: only when used

        base = config if config is not None else resolve_config(**settings)
        if config is not None and settings:
            base = base.replace(**settings)
        self.config = base.replace(temperature=temperature, max_tokens=max_tokens)
        self.model_id = self.config.model
        self.context = context
        from dreamgym_env.experience.transport import EndpointTransport  # imports aiohttp: only when used

        self.transport = EndpointTransport(self.config)
        super().__init__()

    @classmethod
    def from_experience_model(cls, model: object, **overrides: Any) -> EndpointChat:
        """A chat on the endpoint of an OpenAI-compatible experience model (or a cache around one)."""
        inner = getattr(model, "inner", model)
        config = getattr(inner, "config", None)
        if not isinstance(config, EndpointConfig):
            raise ConfigurationError(
                f"{model!r} is not an endpoint experience model; pass an EndpointChat (or any ChatModel) "
                "to the task generator instead"
            )
        return cls(config, **overrides)

    def __repr__(self) -> str:
        return f"EndpointChat({self.config.describe()!r})"

    async def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        deadline: Deadline | None = None,
        context: str | None = None,
    ) -> ChatReply:
        """Answer ``messages`` through the shared endpoint transport (retries, format downgrade)."""
        reply = await self.transport.complete(
            messages,
            schema=schema,
            schema_name="tasks",
            strict=False,
            context=context or self.context,
            deadline=deadline,
        )
        return (
            reply
            if reply.text is not None
            else ChatReply("", "no choices", reply.prompt_tokens, reply.completion_tokens, reply.calls)
        )

    async def aclose(self) -> None:
        """Close the HTTP clients of the running loop."""
        await self.transport.aclose()
