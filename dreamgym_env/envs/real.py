"""RealServerEnv: a Gymnasium env that plays a domain on a running real-benchmark server.

AgentGym (github.com/WooooDyy/AgentGym, commit 3ef9235d23e68e7c2920c5422ad957dc8ced5c6c) serves
the real WebShop and ALFWorld as HTTP env servers, ``agentenv-webshop`` and ``agentenv-alfworld``
(FastAPI apps, ``agentenv-<name>/agentenv_<name>/server.py``): one server process holds many env
instances, each made by ``POST /create`` and then driven by ``POST /reset`` (to a task index) and
``POST /step`` (an action text) with the instance's id. :class:`RealServerEnv` holds what every
client of such a server shares:

- the base URL (an argument, else the pack's ``DREAMGYM_<NAME>_SERVER`` variable; shorthand
  ``127.0.0.1:36001`` means ``http://127.0.0.1:36001``) and the HTTP client
  (:class:`ServerClient`, httpx), whose failures all become
  :class:`~dreamgym_env.errors.RealServerError` in one place (:meth:`ServerClient.request`);
- the server's tasks: AgentGym names a task by its index on the server (its data's item id
  ``webshop_12`` is index 12), which ``reset(options={"task": ...})`` takes as an int, an item
  id or a :class:`~dreamgym_env.types.Task` of :attr:`RealServerEnv.tasks`;
- step counting, truncation, the reward mode, the ``info`` keys, and the answer to a
  non-string action: an invalid action, answered without the server, as the reference env does.

A pack subclasses it for its server and overrides these hooks, converting the server's texts into
its reference env's where they differ:

- :meth:`~RealServerEnv._create`: create an instance, return its id;
- :meth:`~RealServerEnv._reset_instance`: reset it to a task index;
- :meth:`~RealServerEnv._step_instance`: send one action text;
- :meth:`~RealServerEnv._check_action`: why an action is invalid now (``None``: valid), by the
  server's own rule, so that ``info["action_valid"]`` means what it means in the reference env.

A task's instruction is the one its domain finds in the reset's observation
(:meth:`~dreamgym_env.domain.Domain.instruction_in`).

The instance is created at the first ``reset``: ``gym.make`` needs the address, not the server.
``close`` posts ``/close`` with the instance's id, as AgentGym's clients do; its servers have no
such route at the pinned commit, so a 404 there is expected and the instance lives on until the
server stops. ``docs/real-servers.md`` says how to start the servers.
"""

from __future__ import annotations

import contextlib
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final
from urllib.parse import urlsplit

import gymnasium as gym
import httpx
import numpy as np

from dreamgym_env.domain import ActionError, Domain, RewardMode, StepResult
from dreamgym_env.envs.reference import DEFAULT_MAX_TEXT_LENGTH, TextRendering
from dreamgym_env.envs.tasksets import reset_task
from dreamgym_env.errors import (
    ConfigurationError,
    RealServerError,
    RealServerTimeoutError,
    excerpt,
)
from dreamgym_env.experience.prompt import utf8_safe
from dreamgym_env.types import Task

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "RealServerEnv",
    "ServerClient",
    "ServerReply",
    "expect_fields",
    "resolve_base_url",
]

DEFAULT_TIMEOUT_S: Final = 300.0
"""Seconds one request may take: what AgentGym's clients wait (a WebShop instance loads its catalog)."""
CLOSE_ROUTE_MISSING: Final = frozenset({404, 405, 422})
"""Answers to ``POST /close`` from a server without that route (AgentGym's, at the pinned commit)."""


def resolve_base_url(base_url: str | None, variable: str, hint: str) -> str:
    """``base_url``, else the environment variable ``variable``; ``host:port`` gets ``http://``.

    Raises :class:`~dreamgym_env.errors.ConfigurationError` (whose message ends with ``hint``)
    when neither is set or the address is no HTTP URL.
    """
    url = (base_url if base_url is not None else os.environ.get(variable, "")).strip()
    if not url:
        raise ConfigurationError(f"no server address: pass base_url= to gym.make or set {variable}. {hint}")
    if "://" not in url:
        url = f"http://{url}"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(f"the server address must be an http(s) URL, got {url!r}. {hint}")
    return url.rstrip("/")


class ServerClient:
    """JSON over HTTP to one server; every failure is a :class:`~dreamgym_env.errors.RealServerError`.

    httpx's errors are translated here and nowhere else: a refused connection, a timeout
    (:class:`~dreamgym_env.errors.RealServerTimeoutError`), an HTTP error status, or a body that
    is not JSON. Messages name the URL and end with ``hint`` (how to start the server). The httpx
    client is made at the first request, so that building one never touches the network.
    """

    def __init__(self, base_url: str, *, timeout_s: float | None, server: str, hint: str) -> None:
        self.base_url, self.timeout_s, self.server, self.hint = base_url, timeout_s, server, hint
        self._http: httpx.Client | None = None

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """``GET path?params``; the answer's JSON."""
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """``POST path`` with a JSON body (none when ``body`` is ``None``); the answer's JSON."""
        return self.request("POST", path, body=body)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
        accept: frozenset[int] = frozenset(),
    ) -> Any:
        """Send one request; the answer's JSON, or ``None`` for a status in ``accept``."""
        url = f"{self.base_url}{path}"
        if self._http is None:
            self._http = httpx.Client(timeout=self.timeout_s)
        try:
            response = self._http.request(method, url, params=params, json=body)
        except httpx.TimeoutException as exc:
            raise RealServerTimeoutError(
                f"{self.server} at {url} did not answer within timeout_s={self.timeout_s:g} s. {self.hint}",
                url=url,
            ) from exc
        except httpx.ConnectError as exc:
            raise RealServerError(
                f"could not connect to {self.server} at {url} ({exc}). {self.hint}", url=url
            ) from exc
        except httpx.HTTPError as exc:  # the connection broke, or the answer was no HTTP
            raise RealServerError(
                f"the request to {self.server} at {url} failed: {type(exc).__name__}: {exc}. {self.hint}",
                url=url,
            ) from exc
        status = response.status_code
        if status in accept:
            return None
        if status != 200:
            raise RealServerError(
                f"{self.server} answered {method} {url} with HTTP {status}: {excerpt(response.text)!r}",
                url=url,
                status=status,
            )
        try:
            return response.json()
        except ValueError as exc:
            raise RealServerError(
                f"{self.server} answered {method} {url} with a body that is not JSON: "
                f"{excerpt(response.text)!r}",
                url=url,
                status=status,
            ) from exc

    def off_protocol(self, path: str, answer: object, expected: str) -> RealServerError:
        """The error for an answer to ``path`` that is not what the protocol defines."""
        return RealServerError(
            f"{self.server} answered {self.base_url}{path} with {excerpt(repr(answer))}, not {expected}",
            url=f"{self.base_url}{path}",
            status=200,
        )

    def close(self) -> None:
        """Close the connections (a later request opens new ones)."""
        if self._http is not None:
            self._http.close()
            self._http = None


def expect_fields(
    client: ServerClient, path: str, answer: object, fields: Mapping[str, type | tuple[type, ...]]
) -> dict[str, Any]:
    """``answer`` as a dict with ``fields`` of those types (bools are no numbers), else an error."""
    if not isinstance(answer, dict):
        raise client.off_protocol(path, answer, f"an object with {', '.join(fields)}")
    for name, kind in fields.items():
        value = answer.get(name)
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
            raise client.off_protocol(path, answer, f"an object whose {name!r} is {_type_names(kind)}")
    return answer


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _type_names(kind: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in _types(kind))


@dataclass(frozen=True)
class ServerReply:
    """What one reset or step of a server instance showed, in the reference env's format.

    ``score`` is the server's score where it reports one (WebShop's reward), else ``None``;
    ``truncated`` is an episode the server ended without the task done (its own step limit).
    """

    observation: str
    admissible_actions: tuple[str, ...] = ()
    won: bool = False
    score: float | None = None
    terminated: bool = False
    truncated: bool = False


class RealServerEnv(TextRendering, gym.Env[str, str], ABC):
    """A domain played on a running real-benchmark server: what every pack's server client shares.

    Subclasses set the class attributes below, keep a Gymnasium docstring of their env
    (Observation and Action Space, Rewards, Episode End, Arguments, Version History) and
    implement the hooks the module docstring lists. The constructor checks its arguments
    (:class:`~dreamgym_env.errors.ConfigurationError`) and never touches the network.

    Spaces are the reference env's: ``UnicodeText(max_text_length)`` for both, so that
    :class:`~dreamgym_env.wrappers.SimToReal` pairs this env with the synthetic one. A failed
    request raises :class:`~dreamgym_env.errors.RealServerError` (never an invented step); after
    one in ``step`` the episode is over (the server may or may not have taken the action) and
    nothing of the step is counted: ``reset`` starts a new one.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "render_fps": 4}
    restorable: ClassVar[bool] = False
    """A server's state cannot be set from a text (as :meth:`ReferenceEnvBase.restore` would)."""
    server_name: ClassVar[str]
    """The server in messages, e.g. ``"AgentGym's WebShop server (agentenv-webshop)"``."""
    base_url_variable: ClassVar[str]
    """The environment variable read when no ``base_url`` is passed."""
    launch_command: ClassVar[str]
    """How the server is started (its README's command), for error messages."""
    item_prefix: ClassVar[str]
    """AgentGym's item ids are ``<item_prefix>_<index>``; tasks get them as ids."""
    instance_field: ClassVar[str]
    """The body field that names an instance (``env_idx`` or ``id``)."""
    splits: ClassVar[Mapping[str, range]]
    """The server's task indices per split, where its source defines them."""
    reward_modes: ClassVar[tuple[RewardMode, ...]] = ("outcome",)
    """The ``reward`` values the server's answers can pay."""
    domain_name: ClassVar[str]
    """The registered domain whose tasks and grammar the server plays (unless ``domain=`` is passed)."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        split: str = "test",
        tasks: Sequence[int | str | Task] | None = None,
        reward: RewardMode = "outcome",
        max_steps: int | None = None,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        render_mode: str | None = None,
        max_text_length: int = DEFAULT_MAX_TEXT_LENGTH,
        domain: Domain | None = None,
    ) -> None:
        if reward not in self.reward_modes:
            raise ConfigurationError(
                f"reward must be one of {list(self.reward_modes)} on {self.server_name}, got {reward!r}"
            )
        self._use_text_spaces(max_steps, render_mode, max_text_length)
        if timeout_s is not None and not timeout_s > 0:
            raise ConfigurationError(f"timeout_s must be > 0 or None (no limit), got {timeout_s}")
        if domain is None:
            from dreamgym_env.envs.registry import get_domain  # the packs import this module

            domain = get_domain(self.domain_name)
        self.domain: Domain = domain
        self.hint = (
            f"Start the server with `{self.launch_command}` (AgentGym's README) and pass its URL as "
            f"base_url= or {self.base_url_variable}; see docs/real-servers.md."
        )
        self.base_url = resolve_base_url(base_url, self.base_url_variable, self.hint)
        self.client = ServerClient(
            self.base_url, timeout_s=timeout_s, server=self.server_name, hint=self.hint
        )
        self.split = split
        self.reward_mode: RewardMode = reward
        if tasks is None:
            if split not in self.splits:
                raise ConfigurationError(
                    f"{self.server_name} defines no {split!r} split (its source has {list(self.splits)}); "
                    f"pass tasks=[...] with the server's task indices or item ids such as "
                    f"'{self.item_prefix}_12'"
                )
            indices: Sequence[int] = self.splits[split]
        else:
            if any(spec is None for spec in tasks):
                raise ConfigurationError("tasks must hold task indices, item ids or Tasks, not None")
            indices = [self.resolve_index(spec) for spec in tasks]
        self._tasks = tuple(self._task_of(i) for i in indices)
        self.task: Task | None = None
        self.elapsed_steps = 0
        self._instance: int | None = None
        self._reply = ServerReply("")
        self._done = True

    # -- what a pack provides ----------------------------------------------------------------
    @abstractmethod
    def _create(self) -> int:
        """Create an instance on the server; its id."""

    @abstractmethod
    def _reset_instance(self, instance: int, index: int) -> ServerReply:
        """Reset ``instance`` to the server's task ``index``."""

    @abstractmethod
    def _step_instance(self, instance: int, action: str) -> ServerReply:
        """Send ``action`` to ``instance``."""

    @abstractmethod
    def _check_action(self, action: str) -> str | None:
        """Why the server will not take ``action`` in the current state (``None``: it will)."""

    # -- tasks -------------------------------------------------------------------------------
    @property
    def tasks(self) -> Sequence[Task]:
        """The tasks a reset draws from: the server's indices of ``split``, or those of ``tasks``."""
        return self._tasks

    def _task_of(self, index: int, instruction: str = "", initial_state: str = "") -> Task:
        return Task(
            id=f"{self.item_prefix}_{index}",
            domain=self.domain.name,
            instruction=instruction,
            initial_state=initial_state,
            metadata={"server_index": index},
        )

    def resolve_index(self, spec: object) -> int:
        """The server's task index of ``spec``: an int, an item id (``webshop_12``) or a Task of this server.

        ``None`` draws one of :attr:`tasks` with the env's seeded RNG. A task of the reference or
        synthetic env (another world's) is refused with a
        :class:`~dreamgym_env.errors.ConfigurationError`.
        """
        if spec is None:
            if not self._tasks:
                raise ConfigurationError("this env has no tasks to draw from")
            spec = self._tasks[int(self.np_random.integers(len(self._tasks)))]
        if isinstance(spec, Task):
            index = _index(spec.metadata.get("server_index"))
            if spec.domain == self.domain.name and index is not None:
                return index
            raise ConfigurationError(
                f"task {spec.id!r} is not one of {self.server_name}'s: the server plays its own tasks, "
                f"named by index; pass an index, an item id such as '{self.item_prefix}_12', or a task "
                "of env.tasks"
            )
        if isinstance(spec, str):
            prefix, _, number = spec.strip().rpartition("_")
            if prefix == self.item_prefix and number.isascii() and number.isdigit():
                return int(number)
            raise ConfigurationError(
                f"an item id of {self.server_name} is '{self.item_prefix}_<index>', got {spec!r}"
            )
        index = _index(spec)
        if index is not None:
            return index
        raise ConfigurationError(
            f"options['task'] must be a server task index, an item id or a Task, got {type(spec).__name__}"
        )

    # -- the episode -------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        index = self.resolve_index(reset_task(options, type(self).__name__))
        self._done = True  # until the server has answered
        if self._instance is None:
            self._instance = self._create()
        reply = self._reset_instance(self._instance, index)
        self._check_observation(reply.observation, "/reset")
        self.task = self._task_of(index, self.domain.instruction_in(reply.observation), reply.observation)
        self._reply, self.elapsed_steps, self._done = reply, 0, False
        return reply.observation, {**self._task_info(), "admissible_actions": list(reply.admissible_actions)}

    def step(self, action: str) -> StepResult:
        if self.task is None or self._done or self._instance is None:
            raise ConfigurationError(
                "call reset() before step() (the episode has ended, has not begun, or its server failed)"
            )
        if isinstance(action, str):
            # A lone surrogate cannot be encoded as JSON for the server; the reference env does the same.
            text = utf8_safe(action)
            error = self._check_action(text)
            self._done = True  # a failed request leaves the server's episode unknown: reset() is needed
            reply = self._step_instance(self._instance, text)
            self._check_observation(reply.observation, "/step")
        else:  # never sent: the server's body takes a string; the reference env's invalid action instead
            error = f"an action must be a string, got {type(action).__name__}"
            feedback = self.domain.invalid_action_feedback(self._reply.observation, ActionError(error))
            score = 0.0 if "score" in self.reward_modes else None
            reply = ServerReply(feedback, self._reply.admissible_actions, score=score)
        self.elapsed_steps += 1
        truncated = reply.truncated or (self.max_steps is not None and self.elapsed_steps >= self.max_steps)
        self._reply, self._done = reply, reply.terminated or truncated
        reward = float(reply.won)
        if self.reward_mode == "score" and reply.score is not None:
            reward = reply.score
        info: dict[str, Any] = {**self._task_info(), "action_valid": error is None}
        if reply.score is not None:
            info["score"] = reply.score
        info["won"] = reply.won
        if error is not None:
            info["error"] = error
        info["admissible_actions"] = list(reply.admissible_actions)
        self._print_step(action, reply.observation)
        return reply.observation, reward, reply.terminated, truncated and not reply.terminated, info

    def _check_observation(self, observation: str, path: str) -> None:
        if not self.observation_space.contains(observation):
            raise RealServerError(
                f"{self.server_name} answered {path} with an observation of {len(observation)} characters, "
                f"longer than the observation space's {self.max_text_length} "
                "(pass a larger max_text_length)",
                url=f"{self.base_url}{path}",
                status=200,
            )

    @property
    def observation(self) -> str:
        """What the agent sees now (``""`` before the first reset)."""
        return self._reply.observation

    def close(self) -> None:
        """Close the server's instance (``POST /close``) and the connections; never raises.

        A server without the route (AgentGym's) or one that is gone is left as it is: close runs
        in ``finally`` blocks, where an error would hide the one that got there.
        """
        instance, self._instance, self._done = self._instance, None, True
        if instance is not None:
            with contextlib.suppress(RealServerError):
                self.client.request(
                    "POST", "/close", body={self.instance_field: instance}, accept=CLOSE_ROUTE_MISSING
                )
        self.client.close()
        super().close()


def _index(value: object) -> int | None:
    """``value`` as a task index (a non-negative int, NumPy's too), else ``None``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and int(value) >= 0:
        return int(value)
    return None
