"""DreamGym ids served with the OpenEnv standard: reset, step and state over HTTP and WebSocket.

OpenEnv (``openenv-core``) gives the server (a FastAPI app: one env per WebSocket session, the
``/reset``, ``/step``, ``/state``, ``/schema`` and ``/health`` routes) and the clients
(``openenv.GenericEnvClient``, WebSocket: one session each); this module puts a Gymnasium text
env behind its :class:`~openenv.core.env_server.interfaces.Environment` interface.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import uuid
from typing import Any

import gymnasium as gym
import numpy as np
from fastapi import FastAPI
from openenv.core.env_server.http_server import create_app as create_openenv_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, Field, JsonValue
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocketDisconnect

from dreamgym_env.experience.base import ExperienceModel
from dreamgym_env.experience.prompt import utf8_safe
from dreamgym_env.scale import DEFAULT_MAX_SESSIONS


class TextAction(Action):
    """An agent's action: its text. Any JSON value is accepted; the env answers what it does not take."""

    action: JsonValue = Field(description="the action, e.g. 'search[red shoes]'")


class TextObservation(Observation):
    """The page after a reset or a step, with Gymnasium's flags and the step's info (JSON-safe).

    OpenEnv's own ``reward`` and ``done`` (terminated or truncated) travel beside it.
    """

    text: str = Field(default="", description="the observation: the current page")
    terminated: bool = Field(default=False, description="the episode ended (Gymnasium's terminated)")
    truncated: bool = Field(default=False, description="the episode was cut (Gymnasium's truncated)")
    info: dict[str, Any] = Field(default_factory=dict, description="the step's info, made JSON-safe")


class GymnasiumEnvironment(Environment[TextAction, TextObservation, State]):
    """One session's env: ``gym.make(env_id, **make_kwargs)`` behind OpenEnv's interface.

    ``reset(seed=..., options=...)`` and ``step(action)`` are the Gymnasium calls; the state is
    the episode id, the step count and the task id. A step while no episode runs (before the
    first reset, after the end) is answered, not raised: the current page, reward 0, ``done``,
    and ``info["error"]`` saying to reset.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_id: str,
        experience_model: ExperienceModel | None = None,
        make_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        kwargs = dict(make_kwargs or {})
        if experience_model is not None:
            kwargs["experience_model"] = experience_model
        self.env_id = env_id
        self.env = gym.make(env_id, **kwargs)
        self._state = State(episode_id=None, step_count=0)
        self._text = ""
        self._running = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> TextObservation:
        text, info = self.env.reset(seed=seed, options=options)
        text = utf8_safe(text)
        self._text, self._running = text, True
        self._state = State(
            episode_id=episode_id or str(uuid.uuid4()), step_count=0, task_id=info.get("task_id")
        )
        return TextObservation(text=text, info=to_jsonable(info), reward=None, done=False)

    def step(self, action: TextAction, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        if not self._running:
            error = "no episode is running (it has ended or not begun): reset first"
            return TextObservation(
                text=self._text, reward=0.0, done=True, info={"action_valid": False, "error": error}
            )
        text, reward, terminated, truncated, info = self.env.step(action.action)
        # The step is applied: from here on nothing may fail, or the client loses a step it cannot
        # see. Lone surrogates (an env may echo the action) would fail the JSON encoding.
        self._text, self._running = utf8_safe(text), not (terminated or truncated)
        self._state.step_count += 1
        return TextObservation(
            text=self._text,
            reward=float(reward),
            done=bool(terminated or truncated),
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=to_jsonable(info),
        )

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        self.env.close()


def create_app(
    env_id: str,
    *,
    experience_model: ExperienceModel | None = None,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    **make_kwargs: Any,
) -> FastAPI:
    """OpenEnv's FastAPI app serving ``env_id``: one env per session, ``max_sessions`` at once.

    ``experience_model`` (synthetic ids) is shared by every session's env and stays the
    caller's to close; ``make_kwargs`` go to ``gym.make`` for each session.

    Example:
        >>> app = create_app("DreamGym/WebShop-Ref-v0")  # doctest: +SKIP
        >>> import uvicorn; uvicorn.run(app, port=8001)  # doctest: +SKIP
    """
    gym.spec(env_id)  # an unknown id fails here, not in the first session
    factory = functools.partial(GymnasiumEnvironment, env_id, experience_model, make_kwargs)
    app = create_openenv_app(
        factory, TextAction, TextObservation, env_name=env_id, max_concurrent_envs=max_sessions
    )
    app.add_middleware(QuietDisconnects)
    app.add_middleware(CapacityCloseReason)
    return app


WS_TRY_AGAIN_LATER = 1013
"""The WebSocket close code of a server that is overloaded (RFC 6455 registry)."""
MAX_CLOSE_REASON_BYTES = 123
"""The most a close frame's reason may hold (UTF-8)."""


class CapacityCloseReason:
    """ASGI middleware: a session refused at ``max_sessions`` is closed with code 1013 and the reason.

    OpenEnv sends the refusal as an error message, then closes with code 1000 and no reason; a
    client that sends before reading (OpenEnv's clients send ``reset`` first) sees only a normal
    close. The refusal is the session's first message, so only that one is looked at.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        first = True
        reason: str | None = None

        async def send_with_reason(message: Message) -> None:
            nonlocal first, reason
            if message["type"] == "websocket.send" and first:
                first = False
                reason = _capacity_refusal(message.get("text"))
            elif message["type"] == "websocket.close" and reason is not None:
                message = {**message, "code": WS_TRY_AGAIN_LATER, "reason": reason}
            await send(message)

        await self.app(scope, receive, send_with_reason)


def _capacity_refusal(text: str | None) -> str | None:
    """The reason of OpenEnv's capacity error message (its text, cut to fit a close frame), else ``None``."""
    if not text or "CAPACITY_REACHED" not in text:
        return None
    try:
        data = json.loads(text).get("data", {})
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, dict) or data.get("code") != "CAPACITY_REACHED":
        return None
    reason = f"{data.get('message', 'server at capacity')} (max_sessions={data.get('max_sessions')})"
    return reason.encode()[:MAX_CLOSE_REASON_BYTES].decode("utf-8", "ignore")


class QuietDisconnects:
    """ASGI middleware: a WebSocket session that the client closed ends without a traceback.

    OpenEnv's session handler closes the socket once more after the client's ``close`` message,
    which raises ``WebSocketDisconnect`` after the session is over (and its env closed); the
    server would log it as an error at every disconnect.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            if scope["type"] != "websocket":
                raise


def to_jsonable(value: Any) -> Any:
    """``value`` with what JSON cannot hold converted: models and dataclasses to dicts, arrays to lists.

    Strings lose their lone surrogates (U+FFFD instead: UTF-8 cannot encode them); anything else
    that is not a JSON type becomes its ``str``.
    """
    if isinstance(value, str):
        return utf8_safe(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict):
        return {utf8_safe(str(k)): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, np.ndarray | np.generic):
        return to_jsonable(value.tolist())
    return utf8_safe(str(value))
