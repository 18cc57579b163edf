r"""WebShopServerEnv: ``DreamGym/WebShop-Real-v0``, the real WebShop on AgentGym's ``agentenv-webshop``.

The protocol as AgentGym's source defines it (github.com/WooooDyy/AgentGym, commit
3ef9235d23e68e7c2920c5422ad957dc8ced5c6c: ``agentenv-webshop/agentenv_webshop/server.py``,
``environment.py``, ``model.py``; the client ``agentenv/agentenv/envs/webshop.py``):

| route | request | answer |
|---|---|---|
| ``POST /create`` | no body | the new instance's id, an int |
| ``POST /reset`` | ``{"env_idx": id, "session_id": index}`` | ``[observation, null]`` |
| ``POST /step`` | ``{"env_idx": id, "action": text}`` | ``{"state", "reward", "done", "info": null}`` |
| ``GET /available_actions?env_idx=id`` | | ``{"has_search_bar": bool, "clickables": [str]}`` |
| ``GET /observation``, ``/instruction_text``, ``/state`` | ``?env_idx=id`` | the page's text; its instruction; its URL and HTML |

Each instance is WebShop's own ``WebAgentTextEnv(observation_mode="text", num_products=1000)``.
``reset(session=index)`` gives the session the server's goal number ``index`` (its goal list,
shuffled with seed 233), so a task is an index: AgentGym's item id ``webshop_<index>``. The step's
``reward`` is WebShop's score of the purchase, paid with ``done`` at ``click[Buy Now]``; an action
the page cannot take leaves it unchanged. Errors are FastAPI's: HTTP 500 for an unknown instance or
a session index past the goals, 422 for a malformed body. There is no ``/close`` route.

The page text is WebShop's ``' [SEP] '``-joined text, which the reference env's default
observation already is (:mod:`~dreamgym_env.envs.webshop.real_text`): observations pass as they
come. The clickables do not: the server lower-cases buttons and product links (``back to
search``, ``b0abc12345``) and lists buttons and links before options; :func:`page_labels` gives
them back as the page shows them, in page order, as the reference env's ``click[label]`` actions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, Final

from dreamgym_env.domain import RewardMode
from dreamgym_env.envs.real import (
    RealServerEnv,
    ServerReply,
    expect_fields,
)
from dreamgym_env.envs.webshop.real_text import SEP

__all__ = ["WebShopServerEnv", "page_labels"]

SEARCH_ACTION: Final = "search[<query>]"
EVALUATION_SESSIONS: Final = range(200)
"""The session indices AgentGym's evaluation tutorial runs (``idxs=list(range(200))``)."""
WON_SCORE: Final = 1.0 - 1e-9
_ACTION = re.compile(r"(.+)\[(.+)\]")
"""``parse_action`` of WebShop's ``web_agent_site/engine/engine.py``, which the server steps with."""


def page_labels(observation: str, clickables: Sequence[str]) -> list[str]:
    """The server's clickables as the page shows them, in page order.

    A clickable found as it is among the page's elements keeps its text (an option value, which
    the server does not lower-case); one found lower-cased takes the element's text (``back to
    search`` -> ``Back to Search``, a product id in capitals); one not on the page is kept as
    given, after the others.
    """
    elements = observation.split(SEP)
    exact: dict[str, int] = {}
    folded: dict[str, int] = {}
    for i, element in enumerate(elements):
        exact.setdefault(element, i)
        folded.setdefault(element.lower(), i)
    placed = []
    for order, clickable in enumerate(clickables):
        if clickable in exact:
            position, shown = exact[clickable], clickable
        elif clickable in folded:
            position = folded[clickable]
            shown = elements[position]
        else:
            position, shown = len(elements), clickable
        placed.append((position, order, shown))
    return list(dict.fromkeys(shown for _, _, shown in sorted(placed)))


class WebShopServerEnv(RealServerEnv):
    """The real WebShop, played on a running AgentGym ``agentenv-webshop`` server.

    ## Description
    WebShop (princeton-nlp/WebShop, as AgentGym serves it: 1,000 products, WebShop's own search,
    goals and reward) over AgentGym's HTTP protocol (the module docstring). The env creates one
    instance on the server at its first reset and plays every episode on it. It is the real side
    of sim-to-real: ``SimToReal(gym.make("DreamGym/WebShop-v0"), gym.make("DreamGym/WebShop-Real-v0"))``.

    ## Observation Space
    ``UnicodeText(max_text_length)``, as the reference env's: the page as WebShop's text env
    prints it, elements joined by ``' [SEP] '`` (the server's text itself).

    ## Action Space
    ``UnicodeText(max_text_length)``: any string. The server takes ``search[query]`` on any page
    and ``click[label]`` for a clickable of the page (the argument lower-cased); anything else
    leaves the page unchanged (``info["action_valid"]`` False, ``info["error"]`` says why). A
    non-string action is never sent: it is invalid, as in the reference env. Step never raises
    for an action; it raises :class:`~dreamgym_env.errors.RealServerError` when the server fails.

    ## Rewards
    The server's reward is WebShop's score of the purchase at ``click[Buy Now]``
    (``info["score"]``, 0 before). ``reward="outcome"`` (the default) pays 1 when the score is 1
    (``won``), else 0; ``reward="score"`` pays the score itself.

    ## Starting State
    The search page of the server's goal ``index``. ``reset(options={"task": ...})`` takes an
    index, an item id (``"webshop_12"``) or a task of :attr:`tasks`; without one it draws one of
    :attr:`tasks` with the env's seeded RNG. Tasks of the reference or synthetic env are refused:
    their catalog is not the server's.

    ## Episode End
    Terminated by ``click[Buy Now]``. Truncated after ``max_steps`` steps when set (``gym.make``
    applies the registered ``max_episode_steps``, 15, through ``TimeLimit``).

    ## Info
    ``task`` (a :class:`~dreamgym_env.types.Task` with id ``webshop_<index>``, the instruction of
    the page and ``metadata["server_index"]``), ``task_id``, ``source`` (``"real"``),
    ``admissible_actions`` (``search[<query>]`` on the search page, else ``click[label]`` for every
    clickable, as the reference env lists them), and after a step ``action_valid``, ``score``,
    ``won`` and, for an invalid action, ``error``. The reference env's ``state`` (its Markov page
    text) and ``abstract_state`` need its catalog and are not given.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``base_url`` | ``DREAMGYM_WEBSHOP_SERVER`` | the server, e.g. ``http://127.0.0.1:36001`` |
    | ``split`` | ``"test"`` | ``"test"``: sessions 0-199, as AgentGym's evaluation tutorial runs (no train range is defined) |
    | ``tasks`` | ``None`` | session indices or item ids to draw from instead of the split |
    | ``reward`` | ``"outcome"`` | ``"outcome"`` (1 when won) or ``"score"`` (WebShop's score) |
    | ``max_steps`` | ``None`` | truncate after this many steps |
    | ``timeout_s`` | ``300`` | seconds one request may take (``None``: no limit) |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns text, ``"human"`` prints it |
    | ``max_text_length`` | ``16384`` | the text spaces' maximum length |

    ## Version History
    * v0 (dreamgym-env 0.1.0, 2026-12-03): first release, against AgentGym 3ef9235.
    """

    server_name = "AgentGym's WebShop server (agentenv-webshop)"
    base_url_variable = "DREAMGYM_WEBSHOP_SERVER"
    launch_command = "webshop --host 0.0.0.0 --port 36001"
    item_prefix = "webshop"
    domain_name = "webshop"
    _clickables: frozenset[str] = frozenset()
    instance_field = "env_idx"
    splits: ClassVar = {"test": EVALUATION_SESSIONS}
    reward_modes: ClassVar[tuple[RewardMode, ...]] = ("outcome", "score")

    def _create(self) -> int:
        created = self.client.post("/create")
        if not isinstance(created, int) or isinstance(created, bool):
            raise self.client.off_protocol("/create", created, "an instance id (an integer)")
        return created

    def _reset_instance(self, instance: int, index: int) -> ServerReply:
        answer = self.client.post("/reset", {"env_idx": instance, "session_id": index})
        if not isinstance(answer, list) or len(answer) != 2 or not isinstance(answer[0], str):
            raise self.client.off_protocol("/reset", answer, "[observation, null]")
        return self._page(instance, answer[0], 0.0, False)

    def _step_instance(self, instance: int, action: str) -> ServerReply:
        answer = self.client.post("/step", {"env_idx": instance, "action": action})
        fields = expect_fields(
            self.client, "/step", answer, {"state": str, "reward": (int, float), "done": bool}
        )
        return self._page(instance, fields["state"], float(fields["reward"]), fields["done"])

    def _page(self, instance: int, observation: str, score: float, done: bool) -> ServerReply:
        """The reply of a page, with its clickables asked from the server."""
        answer: Any = self.client.get("/available_actions", {"env_idx": instance})
        fields = expect_fields(
            self.client, "/available_actions", answer, {"has_search_bar": bool, "clickables": list}
        )
        clickables = fields["clickables"]
        if not all(isinstance(c, str) for c in clickables):
            raise self.client.off_protocol("/available_actions", answer, "clickables that are strings")
        self._clickables = frozenset(clickables)
        if fields["has_search_bar"]:
            admissible: tuple[str, ...] = (SEARCH_ACTION,)
        else:
            admissible = tuple(f"click[{label}]" for label in page_labels(observation, clickables))
        return ServerReply(
            observation, admissible, won=done and score >= WON_SCORE, score=score, terminated=done
        )

    def _check_action(self, action: str) -> str | None:
        # WebAgentTextEnv.step: a search with any keywords, or a click on a clickable but the search button.
        match = _ACTION.match(action)
        if match is None or match.group(1) not in ("search", "click"):
            return "expected search[query] or click[label]"
        verb, argument = match.groups()
        label = argument.lower()
        if verb == "search" or (label in self._clickables and label != "search"):
            return None
        return f"click[{argument}] is not a clickable of this page"
