"""Test doubles: scripted OpenAI-compatible server and experience model, a stand-in AgentGym server.

:class:`AgentGymServer` speaks AgentGym's WebShop and ALFWorld env-server protocol over an env of
the caller's (for the ``DreamGym/<X>-Real-v0`` envs).

Named as doubles and never used as defaults: tests and benchmarks pick them on purpose.
"""

from dreamgym_env.testing.agentgym import AgentGymRequest, AgentGymServer
from dreamgym_env.testing.doubles import ScriptedExperienceModel, echo_transition
from dreamgym_env.testing.replies import (
    Delay,
    Drop,
    HTTPError,
    Ok,
    Raw,
    Reply,
    delay,
    drop,
    echo_responder,
    http_error,
    ok,
    raw,
    request_action,
    truncated,
)
from dreamgym_env.testing.server import ScriptedOpenAIServer

__all__ = [
    "AgentGymRequest",
    "AgentGymServer",
    "Delay",
    "Drop",
    "HTTPError",
    "Ok",
    "Raw",
    "Reply",
    "ScriptedExperienceModel",
    "ScriptedOpenAIServer",
    "delay",
    "drop",
    "echo_responder",
    "echo_transition",
    "http_error",
    "ok",
    "raw",
    "request_action",
    "truncated",
]
