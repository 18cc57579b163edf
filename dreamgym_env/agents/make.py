"""Agents by name, for ``dreamgym bench``: ``random``, ``expert`` and ``llm[:model]``.

``llm[:model]`` chooses its chat model like this:

* ``llm:<preset>`` (``qwen-0.5b``, ``qwen-1.5b``), ``llm:<file>.gguf`` or ``llm:local``: the
  embedded model (the ``local`` extra), the default preset for ``local``;
* ``llm:<name>``: model ``<name>`` on the OpenAI-compatible endpoint of ``DREAMGYM_BASE_URL``
  (or ``base_url=``; key from ``DREAMGYM_API_KEY``, see
  :class:`~dreamgym_env.experience.config.EndpointConfig`);
* ``llm``: the endpoint's ``DREAMGYM_MODEL`` where an endpoint is configured
  (``DREAMGYM_BASE_URL``, ``OPENAI_BASE_URL`` or ``OPENAI_API_KEY``), else the embedded model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from dreamgym_env.agents.agent import Agent
from dreamgym_env.agents.baselines import ExpertAgent, RandomAgent
from dreamgym_env.agents.llm import AgentChat, LLMAgent
from dreamgym_env.curriculum.chat import EndpointChat
from dreamgym_env.domain import Domain
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.experience.config import UNSET, EndpointConfig
from dreamgym_env.experience.provision import DEFAULT_PRESET, PRESETS
from dreamgym_env.experience.selection import ENDPOINT_VARIABLES

AGENT_KINDS: Final = ("random", "expert", "llm")
LOCAL_ALIAS: Final = "local"
"""``llm:local``: the embedded model's default preset."""
AGENT_CONTEXT: Final = "agent"
"""How the agent's endpoint errors are labelled (``"agent: ..."``)."""


def split_agent_spec(spec: str) -> tuple[str, str | None]:
    """``"llm:qwen-0.5b"`` -> ``("llm", "qwen-0.5b")``; checks the kind (``random``, ``expert``, ``llm``)."""
    kind, sep, model = spec.strip().partition(":")
    kind = kind.lower()
    if kind not in AGENT_KINDS:
        raise UnknownNameError("agent", spec, AGENT_KINDS)
    if sep and kind != "llm":
        raise ConfigurationError(f"only the llm agent takes a model (llm:<model>), got {spec!r}")
    if sep and not model.strip():
        raise ConfigurationError(f"no model after 'llm:' in {spec!r}")
    return kind, model.strip() if sep else None


def make_chat_client(
    model: str | None = None,
    *,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
    **settings: Any,
) -> AgentChat:
    """The chat model of ``llm[:model]`` (see the module docstring); ``settings`` go to its backend.

    ``settings`` are :class:`~dreamgym_env.experience.config.EndpointConfig` fields for an
    endpoint (``temperature``, ``max_tokens``, ``retry`` ...), :class:`~dreamgym_env.experience.
    local.LocalSettings` fields for the embedded model.
    """
    env = os.environ if environ is None else environ
    local = model is not None and (
        model.lower() == LOCAL_ALIAS or model.lower() in PRESETS or model.lower().endswith(".gguf")
    )
    endpoint_configured = base_url is not None or any(
        env.get(name, "").strip() for name in ENDPOINT_VARIABLES
    )
    if local or (model is None and not endpoint_configured):
        from dreamgym_env.experience.local import LocalExperienceModel

        if model is not None and model.lower().endswith(".gguf"):
            return LocalExperienceModel(model, **settings)
        preset = DEFAULT_PRESET if model is None or model.lower() == LOCAL_ALIAS else model
        return LocalExperienceModel(preset=preset, **settings)
    config = EndpointConfig.resolve(
        base_url=base_url if base_url is not None else UNSET,
        model=model if model is not None else UNSET,
        environ=env,
        **settings,
    )
    # The agent acts at the endpoint's settings (temperature 0 unless configured), not at the
    # task writer's defaults that EndpointChat otherwise applies.
    return EndpointChat(
        config, temperature=config.temperature, max_tokens=config.max_tokens, context=AGENT_CONTEXT
    )


def make_agent(spec: str, domain: Domain | str, *, chat: AgentChat | None = None) -> Agent:
    """The agent ``spec`` (``random``, ``expert``, ``llm[:model]``) for ``domain``.

    An ``llm`` agent talks to ``chat`` (made by :func:`make_chat_client` from the spec's model
    when not given; then the caller closes ``agent.client``).
    """
    kind, model = split_agent_spec(spec)
    if kind == "random":
        return RandomAgent()
    if kind == "expert":
        return ExpertAgent(domain)
    return LLMAgent(domain, chat if chat is not None else make_chat_client(model))
