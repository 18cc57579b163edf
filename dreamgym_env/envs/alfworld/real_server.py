"""ALFWorldServerEnv: ``DreamGym/ALFWorld-Real-v0``, the real ALFWorld on AgentGym's ``agentenv-alfworld``.

The protocol as AgentGym's source defines it (github.com/WooooDyy/AgentGym, commit
3ef9235d23e68e7c2920c5422ad957dc8ced5c6c: ``agentenv-alfworld/agentenv_alfworld/server.py``,
``env_wrapper.py``, ``model.py``, ``utils.py``; the client ``agentenv/agentenv/envs/alfworld.py``):

| route | request | answer |
|---|---|---|
| ``POST /create`` | no body | ``{"id": id}`` |
| ``POST /reset`` | ``{"id": id, "game": index, "world_type": "Text"}`` | ``{"id", "observation", "available_actions", "task_type"}`` |
| ``POST /step`` | ``{"id": id, "action": text}`` | ``{"observation", "reward", "available_actions", "done"}`` |
| ``GET /available_actions``, ``/observation``, ``/detail`` | ``?id=id`` | the last answer's actions; its observation; all it knows |

A failure is answered with HTTP 200 and ``{"error": message}`` (an unknown id, a finished task,
a game index past the list); a malformed body gets FastAPI's 422. There is no ``/close`` route.
``game`` indexes the server's list of TextWorld games: the 2,420 of ``configs/mappings_train.json``
(``json_2.1.1/train``, indices 0-2419), then the 200 of ``mappings_test.json``
(``json_2.1.1/valid_train``, indices 2420-2619), AgentGym's evaluation set; AgentGym's item id
is ``alfworld_<index>``. ``reward`` is ``float(info["won"])``; ``done`` is TextWorld's (won, or
its own step limit).

The server changes ALFWorld's texts in two ways, which :class:`ALFWorldServerEnv` undoes, so the
agent sees the reference env's format:

- the reset drops the first paragraph (``-= Welcome to TextWorld, ALFRED! =-``) and joins the
  others with one newline instead of a blank line (:func:`start_observation` puts both back);
- ``process_ob`` cuts ``You arrive at loc N. `` from an arrival. :func:`arrival_observation`
  puts the sentence back with the reference env's ``N`` for the receptacle
  (:func:`~dreamgym_env.envs.alfworld.state.location_numbers` of the room the reset listed):
  ALFWorld's own ``N`` is lost on the server, and bears no relation to the receptacle there either.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, Final

from dreamgym_env.domain import ActionError, RewardMode
from dreamgym_env.envs.alfworld.grammar import Command, parse_command
from dreamgym_env.envs.alfworld.state import BANNER, location_numbers
from dreamgym_env.envs.real import (
    RealServerEnv,
    ServerReply,
    expect_fields,
)
from dreamgym_env.errors import RealServerError

__all__ = ["ALFWorldServerEnv", "arrival_observation", "room_receptacles", "start_observation"]

WORLD_TYPE: Final = "Text"
"""The ``world_type`` every reset sends: TextWorld only (AgentGym's instances are text envs)."""
TRAIN_GAMES: Final = range(0, 2420)
"""``configs/mappings_train.json``: item ids 0-2419."""
TEST_GAMES: Final = range(2420, 2620)
"""``configs/mappings_test.json``: item ids 2420-2619, AgentGym's ALFWorld evaluation set."""
ARRIVAL: Final = "You arrive at "
_ROOM = re.compile(r"Looking quickly around you, you see (.*)\.$", re.MULTILINE)
_NAME = re.compile(r"\ba ([a-z]+ \d+)")


def start_observation(text: str) -> str:
    r"""A reset's observation as ALFWorld shows it: the banner, then the paragraphs blank-line apart.

    The server sent ``"\n".join(ob.split("\n\n")[1:])``: each newline was a paragraph break
    (ALFWorld's intro paragraphs hold none of their own). A text that starts with the banner is
    returned as it is.
    """
    if text.startswith(BANNER):
        return text
    return "\n\n".join([BANNER, *text.split("\n")])


def room_receptacles(start: str) -> tuple[str, ...]:
    """The receptacles an intro lists, in the order the reference env's rooms hold them.

    The intro lists them type ascending, number descending (TextWorld's order); a room holds
    them type and number ascending, the order :func:`location_numbers` is seeded with.
    """
    room = _ROOM.search(start)
    names = _NAME.findall(room.group(1)) if room else []
    return tuple(sorted(set(names), key=lambda name: (name.rpartition(" ")[0], int(name.rpartition(" ")[2]))))


def arrival_observation(text: str, receptacle: str, receptacles: Sequence[str]) -> str:
    """The answer to ``go to <receptacle>`` with ``You arrive at loc N.`` before it, as ALFWorld prints it.

    ``N`` is the reference env's number of the receptacle in the room (0 for a receptacle the
    room does not list, as the reference env's ``arrive_text``); a text that already starts with
    ``You arrive at`` is returned as it is.
    """
    if text.startswith(ARRIVAL):
        return text
    number = location_numbers(tuple(receptacles)).get(receptacle, 0)
    return f"{ARRIVAL}loc {number}. {text}"


class ALFWorldServerEnv(RealServerEnv):
    """The real ALFWorld, played on a running AgentGym ``agentenv-alfworld`` server.

    ## Description
    ALFWorld's TextWorld games (``alfworld==0.3.3`` as AgentGym's ``setup.sh`` installs it) over
    AgentGym's HTTP protocol (the module docstring). The env creates one instance on the server
    at its first reset and plays every episode on it. It is the real side of sim-to-real:
    ``SimToReal(gym.make("DreamGym/ALFWorld-v0"), gym.make("DreamGym/ALFWorld-Real-v0"))``.

    ## Observation Space
    ``UnicodeText(max_text_length)``, as the reference env's: ALFWorld's feedback text, with the
    server's two changes undone (module docstring), e.g. ``You arrive at loc 7. The cabinet 1 is
    closed.``

    ## Action Space
    ``UnicodeText(max_text_length)``: any string, sent to the server as it is. TextWorld takes one
    of ``info["admissible_actions"]`` (surrounding whitespace aside) and answers anything else with
    ``Nothing happens.`` (``info["action_valid"]`` False, ``info["error"]`` says why). A non-string
    action is never sent: it is invalid, as in the reference env. Step never raises for an action;
    it raises :class:`~dreamgym_env.errors.RealServerError` when the server fails.

    ## Rewards
    1 at the step that wins the game, else 0 (the server's ``float(won)``). Only
    ``reward="outcome"``: the server reports no goal score for the reference env's ``"score"``.

    ## Starting State
    The intro of the server's game ``index``: the banner, the room and ``Your task is to: ...``.
    ``reset(options={"task": ...})`` takes an index, an item id (``"alfworld_2420"``) or a task of
    :attr:`tasks`; without one it draws one of :attr:`tasks` with the env's seeded RNG. Tasks of
    the reference or synthetic env are refused: their rooms are not the server's games.

    ## Episode End
    Terminated when the game is won. Truncated when the server ends it unwon (TextWorld's own step
    limit) or after ``max_steps`` steps when set (``gym.make`` applies the registered
    ``max_episode_steps``, 50, through ``TimeLimit``).

    ## Info
    ``task`` (a :class:`~dreamgym_env.types.Task` with id ``alfworld_<index>``, the intro's
    instruction, ``metadata["server_index"]``), ``task_id``, ``source`` (``"real"``),
    ``admissible_actions`` (the server's), and after a step ``action_valid``, ``won`` and, for an
    invalid action, ``error``. The reference env's ``score`` (the share of the goal met) is not given.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``base_url`` | ``DREAMGYM_ALFWORLD_SERVER`` | the server, e.g. ``http://127.0.0.1:36001`` |
    | ``split`` | ``"test"`` | ``"train"`` (games 0-2419) or ``"test"`` (2420-2619, AgentGym's evaluation set) |
    | ``tasks`` | ``None`` | game indices or item ids to draw from instead of the split |
    | ``reward`` | ``"outcome"`` | only ``"outcome"`` |
    | ``max_steps`` | ``None`` | truncate after this many steps |
    | ``timeout_s`` | ``300`` | seconds one request may take (``None``: no limit) |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns text, ``"human"`` prints it |
    | ``max_text_length`` | ``16384`` | the text spaces' maximum length |

    ## Version History
    * v0 (dreamgym-env 0.1.0, 2026-12-03): first release, against AgentGym 3ef9235.
    """

    server_name = "AgentGym's ALFWorld server (agentenv-alfworld)"
    base_url_variable = "DREAMGYM_ALFWORLD_SERVER"
    launch_command = "alfworld --host 0.0.0.0 --port 36001"
    item_prefix = "alfworld"
    domain_name = "alfworld"
    _receptacles: tuple[str, ...] = ()
    instance_field = "id"
    splits: ClassVar = {"train": TRAIN_GAMES, "test": TEST_GAMES}
    reward_modes: ClassVar[tuple[RewardMode, ...]] = ("outcome",)

    def _answer(self, path: str, answer: object, fields: dict[str, Any]) -> dict[str, Any]:
        """``answer`` with ``fields``; the server's ``{"error": ...}`` raised as a RealServerError."""
        if isinstance(answer, dict) and "error" in answer:
            raise RealServerError(
                f"{self.server_name} answered {self.base_url}{path} with an error: {answer['error']}",
                url=f"{self.base_url}{path}",
                status=200,
            )
        checked = expect_fields(self.client, path, answer, fields)
        actions = checked.get("available_actions", [])
        if not all(isinstance(a, str) for a in actions):
            raise self.client.off_protocol(path, answer, "available_actions that are strings")
        return checked

    def _create(self) -> int:
        return int(self._answer("/create", self.client.post("/create"), {"id": int})["id"])

    def _reset_instance(self, instance: int, index: int) -> ServerReply:
        body = {"id": instance, "game": index, "world_type": WORLD_TYPE}
        answer = self._answer(
            "/reset", self.client.post("/reset", body), {"observation": str, "available_actions": list}
        )
        observation = start_observation(answer["observation"])
        self._receptacles = room_receptacles(observation)
        return ServerReply(observation, tuple(answer["available_actions"]))

    def _step_instance(self, instance: int, action: str) -> ServerReply:
        command = parse_command(action) if action.strip() in self._reply.admissible_actions else None
        answer = self._answer(
            "/step",
            self.client.post("/step", {"id": instance, "action": action}),
            {"observation": str, "reward": (int, float), "available_actions": list, "done": bool},
        )
        observation = answer["observation"]
        if isinstance(command, Command) and command.verb == "go" and command.recep is not None:
            observation = arrival_observation(observation, command.recep, self._receptacles)
        won = float(answer["reward"]) >= 1.0
        done = answer["done"]
        return ServerReply(
            observation,
            tuple(answer["available_actions"]),
            won=won,
            terminated=won,
            truncated=done and not won,
        )

    def _check_action(self, action: str) -> str | None:
        if action.strip() in self._reply.admissible_actions:
            return None
        command = parse_command(action)
        if isinstance(command, ActionError):
            return command.message
        return f"{command.text!r} cannot be done here and now"
