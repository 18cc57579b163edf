"""Test doubles: a scripted OpenAI-compatible server and an in-process scripted experience model.

Named as doubles and never used as defaults: tests and benchmarks pick them on purpose.
"""

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
