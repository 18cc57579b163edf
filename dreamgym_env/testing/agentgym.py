"""A local stand-in for AgentGym's WebShop and ALFWorld env servers: a test double for ``-Real-v0`` envs.

:class:`AgentGymServer` speaks the protocol of ``agentenv-webshop`` or ``agentenv-alfworld`` as
AgentGym's source defines it (github.com/WooooDyy/AgentGym, commit
3ef9235d23e68e7c2920c5422ad957dc8ced5c6c, ``agentenv-<name>/agentenv_<name>/server.py`` and the
modules it calls): the same routes, JSON fields and status codes, on 127.0.0.1 (an ephemeral
port), from a background thread::

    make_env = lambda: get_domain("webshop").make_reference_env(reward="score")
    with AgentGymServer("webshop", make_env, get_domain("webshop").tasks("test")) as server:
        env = gym.make("DreamGym/WebShop-Real-v0", base_url=server.url)

Every instance ``POST /create`` makes is an env of ``make_env`` (any Gymnasium env whose reset
takes ``options={"task": task}``, e.g. a reference env), and task index ``i`` (WebShop's
``session_id``, ALFWorld's ``game``) is ``tasks[i]``, so the answers are that env's, reshaped as
AgentGym's server reshapes the real benchmark's:

- WebShop: ``reward`` is the env's reward (make it pay WebShop's score, ``reward="score"``),
  ``done`` its ``terminated``; ``/available_actions`` turns ``info["admissible_actions"]`` into
  ``has_search_bar`` (the only action is ``search[<query>]``) and ``clickables`` (the labels of
  ``click[label]``, lower-cased as WebShop keys its buttons and links). Errors are FastAPI's:
  an unknown instance or task index is HTTP 500 ``Internal Server Error``, a malformed body 422.
  ``/state`` (the page's URL and HTML) is not served: an env of text has no HTML.
- ALFWorld: the reset's observation loses its first paragraph and has its paragraphs joined by
  one newline, a step's loses ``You arrive at loc N. `` (``process_ob``); ``reward`` is
  ``float(info["won"])``, ``done`` the env's ``terminated or truncated``; ``task_type`` is the
  task's ``id`` where the real server names the game's folder. Failures answer HTTP 200
  ``{"error": ...}``, as the real server does.
- Neither has a ``/close`` route (404), as at that commit.

Faults for tests: :meth:`AgentGymServer.enqueue` queues replies of
:mod:`~dreamgym_env.testing.replies` (``http_error``, ``delay``, ``drop``, ``raw``) for the next
requests to a path; :attr:`AgentGymServer.requests` records every request.
"""

from __future__ import annotations

import json
import random
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import gymnasium as gym

from dreamgym_env.testing.loopback import LoopbackServer
from dreamgym_env.testing.replies import Delay, Drop, HTTPError, Raw, Reply

Flavor = Literal["webshop", "alfworld"]
FLAVORS: tuple[Flavor, ...] = ("webshop", "alfworld")
WEBSHOP_MAX_INSTANCE_ID = 48_950_076
"""agentenv-webshop draws instance ids from ``random.randint(0, 48950076)``."""
SEP = " [SEP] "
SEARCH_ACTION = "search[<query>]"
ARRIVAL = "You arrive at loc "
WORLD_TYPES = ("Text", "Embody", "Hybrid")


@dataclass(frozen=True)
class AgentGymRequest:
    """One request the server received: method, path, query parameters and JSON body."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass
class _Instance:
    env: gym.Env[Any, Any]
    observation: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    done: bool = False


@dataclass(frozen=True)
class _Answer:
    status: int
    payload: Any = None
    text: str | None = None
    """A plain-text body instead of JSON (Starlette's ``Internal Server Error``)."""


class _UnprocessableError(Exception):
    """A request body or query that FastAPI's validation refuses (HTTP 422)."""

    def __init__(self, location: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.location = location


_INTERNAL_ERROR = _Answer(500, text="Internal Server Error")
_NOT_FOUND = _Answer(404, {"detail": "Not Found"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: AgentGymServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read :attr:`AgentGymServer.requests`, not stderr."""

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        owner = self.server.owner
        parts = urlsplit(self.path)
        query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        owner._record(AgentGymRequest(method, parts.path, query, body))
        reply = owner._next_fault(parts.path)
        while isinstance(reply, Delay):
            owner._stopping.wait(reply.seconds)
            reply = reply.then
        if isinstance(reply, Drop):
            self.close_connection = True
            return
        if isinstance(reply, HTTPError):
            body_text = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            self._send(reply.status, body_text.encode(), "application/json")
            return
        if isinstance(reply, Raw):
            self._send(reply.status, reply.body, reply.content_type)
            return
        answer = owner._answer(method, parts.path, query, body)
        if answer.text is not None:
            self._send(answer.status, answer.text.encode(), "text/plain; charset=utf-8")
        else:
            self._send(answer.status, json.dumps(answer.payload).encode(), "application/json")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            self.close_connection = True


class AgentGymServer(LoopbackServer):
    """A local server speaking AgentGym's WebShop or ALFWorld env-server protocol (a test double).

    Args:
        flavor: ``"webshop"`` (agentenv-webshop) or ``"alfworld"`` (agentenv-alfworld).
        make_env: builds the env behind each instance ``POST /create`` makes.
        tasks: task index ``i`` of a reset is ``tasks[i]``, passed as ``options={"task": ...}``.
        seed: seeds the instance ids of WebShop and the task a reset without an index draws.

    :attr:`instances` maps live instance ids to their envs; :attr:`requests` holds every request
    received, in arrival order. Use it as a context manager, or :meth:`start` and :meth:`close`.
    """

    server_class = _Server
    handler_class = _Handler

    def __init__(
        self,
        flavor: Flavor,
        make_env: Callable[[], gym.Env[Any, Any]],
        tasks: Sequence[Any],
        *,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {FLAVORS}, got {flavor!r}")
        self.flavor: Flavor = flavor
        self.make_env, self.tasks = make_env, list(tasks)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._instances: dict[int, _Instance] = {}
        self._next_id = 0
        self._faults: dict[str, deque[Reply]] = {}
        self._requests: list[AgentGymRequest] = []
        self._routes: dict[tuple[str, str], Callable[[dict[str, str], Any], _Answer]] = (
            self._webshop_routes() if flavor == "webshop" else self._alfworld_routes()
        )

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop serving (requests held by a delay are released) and close every instance's env."""
        super().close()
        with self._lock:
            instances, self._instances = list(self._instances.values()), {}
        for instance in instances:
            instance.env.close()

    # -- what tests use ------------------------------------------------------------------------
    def enqueue(self, path: str, *replies: Reply) -> None:
        """Answer the next requests to ``path`` with ``replies``, in order, instead of the protocol.

        A :class:`~dreamgym_env.testing.replies.Delay` without ``then`` holds the request and then
        answers it as the protocol does.
        """
        with self._lock:
            self._faults.setdefault(path, deque()).extend(replies)

    @property
    def requests(self) -> list[AgentGymRequest]:
        """The requests received so far (a copy), in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[AgentGymRequest]:
        """The requests received so far for ``path``."""
        return [r for r in self.requests if r.path == path]

    @property
    def instances(self) -> dict[int, gym.Env[Any, Any]]:
        """The live instances' envs by instance id (a copy)."""
        with self._lock:
            return {i: instance.env for i, instance in self._instances.items()}

    def _record(self, request: AgentGymRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_fault(self, path: str) -> Reply | None:
        with self._lock:
            queue = self._faults.get(path)
            return queue.popleft() if queue else None

    def _answer(self, method: str, path: str, query: dict[str, str], body: Any) -> _Answer:
        route = self._routes.get((method, path))
        if route is None:
            known = any(p == path for _, p in self._routes)
            return _Answer(405, {"detail": "Method Not Allowed"}) if known else _NOT_FOUND
        try:
            return route(query, body)
        except _UnprocessableError as exc:
            detail = {"type": "value_error", "loc": list(exc.location), "msg": str(exc)}
            return _Answer(422, {"detail": [detail]})
        except Exception:  # an exception in a route is Starlette's plain 500
            return _INTERNAL_ERROR

    def _instance(self, index: int) -> _Instance:
        with self._lock:
            return self._instances[index]  # KeyError: an unknown id

    def _new_instance(self, index: int) -> _Instance:
        instance = _Instance(self.make_env())
        with self._lock:
            self._instances[index] = instance
        return instance

    def _reset_env(self, instance: _Instance, task_index: int | None) -> None:
        with self._lock:
            task = self._rng.choice(self.tasks) if task_index is None else self.tasks[task_index]
        observation, info = instance.env.reset(options={"task": task})
        instance.observation, instance.info, instance.done = observation, info, False

    # -- agentenv-webshop --------------------------------------------------------------------------
    def _webshop_routes(self) -> dict[tuple[str, str], Callable[[dict[str, str], Any], _Answer]]:
        return {
            ("GET", "/"): lambda query, body: _Answer(200, "ok"),
            ("GET", "/list_envs"): lambda query, body: _Answer(200, list(self.instances)),
            ("POST", "/create"): self._webshop_create,
            ("POST", "/step"): self._webshop_step,
            ("POST", "/reset"): self._webshop_reset,
            ("GET", "/available_actions"): self._webshop_available_actions,
            ("GET", "/instruction_text"): self._webshop_instruction_text,
            ("GET", "/observation"): lambda query, body: _Answer(
                200, self._instance(_query_int(query, "env_idx")).observation
            ),
        }

    def _webshop_create(self, query: dict[str, str], body: Any) -> _Answer:
        with self._lock:
            index = self._rng.randint(0, WEBSHOP_MAX_INSTANCE_ID)
            while index in self._instances:
                index = self._rng.randint(0, WEBSHOP_MAX_INSTANCE_ID)
        instance = self._new_instance(index)
        self._reset_env(instance, None)  # WebShopEnvServer.create resets the new env once
        return _Answer(200, index)

    def _webshop_reset(self, query: dict[str, str], body: Any) -> _Answer:
        fields = _body(body, {"env_idx": int}, optional={"session_id": int})
        instance = self._instance(fields["env_idx"])
        self._reset_env(instance, fields.get("session_id"))
        return _Answer(200, [instance.observation, None])

    def _webshop_step(self, query: dict[str, str], body: Any) -> _Answer:
        fields = _body(body, {"env_idx": int, "action": str})
        instance = self._instance(fields["env_idx"])
        observation, reward, terminated, _, info = instance.env.step(fields["action"])
        instance.observation, instance.info, instance.done = observation, info, bool(terminated)
        return _Answer(
            200, {"state": observation, "reward": float(reward), "done": bool(terminated), "info": None}
        )

    def _webshop_available_actions(self, query: dict[str, str], body: Any) -> _Answer:
        instance = self._instance(_query_int(query, "env_idx"))
        actions = list(instance.info.get("admissible_actions") or [])
        if actions == [SEARCH_ACTION]:
            return _Answer(200, {"has_search_bar": True, "clickables": ["search"]})
        labels = [
            a[len("click[") : -1].lower() for a in actions if a.startswith("click[") and a.endswith("]")
        ]
        return _Answer(200, {"has_search_bar": False, "clickables": list(dict.fromkeys(labels))})

    def _webshop_instruction_text(self, query: dict[str, str], body: Any) -> _Answer:
        # WebAgentTextEnv.get_instruction_text: the text of the page's instruction heading.
        elements = self._instance(_query_int(query, "env_idx")).observation.split(SEP)
        at = elements.index("Instruction:") + 1
        return _Answer(200, f"Instruction: {elements[at]}")

    # -- agentenv-alfworld -------------------------------------------------------------------------
    def _alfworld_routes(self) -> dict[tuple[str, str], Callable[[dict[str, str], Any], _Answer]]:
        return {
            ("GET", "/"): lambda query, body: _Answer(200, "This is environment AlfWorld."),
            ("POST", "/create"): self._alfworld_create,
            ("POST", "/step"): self._alfworld_step,
            ("POST", "/reset"): self._alfworld_reset,
            ("GET", "/available_actions"): lambda query, body: self._alfworld_read(
                query, lambda i: i.info.get("admissible_actions", [])
            ),
            ("GET", "/observation"): lambda query, body: self._alfworld_read(query, lambda i: i.observation),
            ("GET", "/detail"): lambda query, body: self._alfworld_read(query, self._alfworld_detail),
        }

    def _alfworld_create(self, query: dict[str, str], body: Any) -> _Answer:
        with self._lock:
            index, self._next_id = self._next_id, self._next_id + 1
        try:
            self._new_instance(index)
        except Exception as exc:  # ALFWorld_Wrapper.create answers its errors
            return _Answer(200, {"error": f"{exc}"})
        return _Answer(200, {"id": index})

    def _alfworld_instance(self, index: int, *, resetting: bool = False) -> _Instance:
        """ALFWorld_Wrapper._check_id: the instance, or the NameError its routes answer as ``error``."""
        with self._lock:
            instance = self._instances.get(index)
        if instance is None:
            raise NameError(f"The id {index} is not valid.")
        if not resetting and instance.done:
            raise NameError(f"The task with environment {index} has finished.")
        return instance

    def _alfworld_reset(self, query: dict[str, str], body: Any) -> _Answer:
        fields = _body(body, {"id": int, "game": int, "world_type": str})
        if fields["world_type"] not in WORLD_TYPES:
            return _Answer(200, {"error": 'world_type must be one of "Text", "Embody" and "Hybrid"'})
        try:
            instance = self._alfworld_instance(fields["id"], resetting=True)
            self._reset_env(instance, fields["game"])
        except Exception as exc:
            return _Answer(200, {"error": str(exc)})
        # ALFWorld_Wrapper.reset drops the intro's first paragraph and joins the rest with "\n".
        observation = "\n".join(instance.observation.split("\n\n")[1:])
        instance.observation = observation
        task = self.tasks[fields["game"]]
        return _Answer(
            200,
            {
                "id": fields["id"],
                "observation": observation,
                "available_actions": list(instance.info.get("admissible_actions", [])),
                "task_type": str(getattr(task, "id", fields["game"])),
            },
        )

    def _alfworld_step(self, query: dict[str, str], body: Any) -> _Answer:
        fields = _body(body, {"id": int, "action": str})
        try:
            instance = self._alfworld_instance(fields["id"])
            observation, _, terminated, truncated, info = instance.env.step(fields["action"])
        except Exception as exc:
            return _Answer(200, {"error": f"{exc}"})
        if observation.startswith(ARRIVAL):  # utils.process_ob
            observation = observation[observation.find(". ") + 2 :]
        instance.observation, instance.info = observation, info
        instance.done = bool(terminated or truncated)
        return _Answer(
            200,
            {
                "observation": observation,
                "reward": float(bool(info.get("won"))),
                "available_actions": list(info.get("admissible_actions", [])),
                "done": instance.done,
            },
        )

    def _alfworld_read(self, query: dict[str, str], read: Callable[[_Instance], Any]) -> _Answer:
        index = _query_int(query, "id")
        try:
            return _Answer(200, read(self._alfworld_instance(index)))
        except Exception as exc:
            return _Answer(200, {"error": str(exc)})

    @staticmethod
    def _alfworld_detail(instance: _Instance) -> dict[str, Any]:
        return {
            "observation": instance.observation,
            "available_actions": list(instance.info.get("admissible_actions", [])),
            "done": instance.done,
            "reward": float(bool(instance.info.get("won"))),
            "deleted": False,
        }


def _body(
    body: Any, required: Mapping[str, type], *, optional: Mapping[str, type] | None = None
) -> dict[str, Any]:
    """The fields of a JSON body as the server's pydantic model takes them, else HTTP 422."""
    if not isinstance(body, dict):
        raise _UnprocessableError(("body",), "Input should be a valid dictionary")
    fields: dict[str, Any] = {}
    for name, kind in {**required, **(optional or {})}.items():
        value = body.get(name)
        if value is None and name not in required:
            continue
        if value is None:
            raise _UnprocessableError(("body", name), "Field required")
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _UnprocessableError(("body", name), f"Input should be a valid {kind.__name__}")
        fields[name] = value
    return fields


def _query_int(query: dict[str, str], name: str) -> int:
    value = query.get(name)
    if value is None:
        raise _UnprocessableError(("query", name), "Field required")
    try:
        return int(value)
    except ValueError:
        raise _UnprocessableError(("query", name), "Input should be a valid integer") from None
