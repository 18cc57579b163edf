"""The WebArena domain: five web sites seen as accessibility trees, WebArena's id-based actions."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from dreamgym_env.envs.domain import ActionError, Domain, DomainPrompt, ParsedAction, Policy, Split
from dreamgym_env.envs.webarena.grammar import parse_action, parse_command
from dreamgym_env.envs.webarena.prompt import PROMPT
from dreamgym_env.envs.webarena.state import WebArenaState, parse_state, render
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

if TYPE_CHECKING:
    from dreamgym_env.envs.webarena.expert import WebArenaExpert
    from dreamgym_env.envs.webarena.reference_env import WebArenaRefEnv
    from dreamgym_env.envs.webarena.task_variations import WebArenaTaskVariations

CLICKABLE = frozenset({"link", "button", "combobox", "option", "checkbox"})
TYPABLE = frozenset({"textbox", "searchbox"})
SITE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("shopping_admin", ("admin", "order status", "customer", "bestsell", "best selling", "best-selling", "sales report")),
    ("reddit", ("forum", "reddit", "post ", "comment", "upvote", "downvote", "subscribe", "/f/")),
    ("gitlab", ("gitlab", "project", "issue", "merge request", "repository", "repo ")),
    ("map", ("drive", "walk", "bike", "route", "direction", "distance", " map", "address of")),
    ("shopping", ("buy", "cart", "price", "product", "shop", "order", "review")),
)


@lru_cache(maxsize=2048)
def _ids(state: str) -> dict[int, str]:
    return {e.id: e.role for e in parse_state(state).elements}


class WebArenaDomain(Domain):
    """WebArena: accessibility-tree pages of five sites, actions ``click [id]``, ``type [id] [text]``, ..."""

    name = "webarena"
    display_name = "WebArena"
    max_episode_steps = 30
    reward_modes = ("outcome", "score")

    state_schema = WebArenaState
    state_kind_field = "url"

    def render_state(self, state: Any) -> str:
        """The accessibility-tree observation of an abstract state."""
        return render(state)

    def initial_abstract_state(self, task: Task) -> WebArenaState:
        """The task's start page (its ``initial_state`` parsed back)."""
        return parse_state(task.initial_state)

    def parse_action(self, text: str) -> ParsedAction | ActionError:
        return parse_action(text)

    @property
    def prompt(self) -> DomainPrompt:
        return PROMPT

    def tasks(self, split: Split = "train") -> Sequence[Task]:
        """The tasks of the default data seed: 165 test, the rest (over 1,000) train."""
        from dreamgym_env.envs.webarena.tasks import load_tasks

        return load_tasks().split(split)

    def make_task(self, instruction: str) -> Task:
        """A task without an evaluator on the home page of the site the instruction is about."""
        from dreamgym_env.envs.webarena.tasks import start_page
        from dreamgym_env.envs.webarena.world import World, load_data

        folded = f" {instruction.lower()} "
        site = next((s for s, words in SITE_WORDS if any(w in folded for w in words)), None)
        if site is None:
            raise ConfigurationError(
                f"cannot tell which WebArena site the instruction is about: {instruction[:120]!r}")
        digest = hashlib.sha1(instruction.encode("utf-8")).hexdigest()[:10]
        return Task(id=f"webarena-free-{digest}", domain=self.name, instruction=instruction,
                    initial_state=start_page(site),
                    metadata={"site": site, "start_url": World(load_data()).home(site)})

    def make_reference_env(self, **kwargs: Any) -> WebArenaRefEnv:
        """The programmatic sites (see :class:`~dreamgym_env.envs.webarena.reference_env.WebArenaRefEnv`)."""
        from dreamgym_env.envs.webarena.reference_env import WebArenaRefEnv

        kwargs.setdefault("domain", self)
        return WebArenaRefEnv(**kwargs)

    def expert_policy(self) -> Policy:
        """A fresh expert (per-template scripts that find the page's elements by role and name)."""
        return self._expert()

    @staticmethod
    def _expert() -> WebArenaExpert:
        from dreamgym_env.envs.webarena.expert import WebArenaExpert

        return WebArenaExpert()

    def task_variations(self) -> WebArenaTaskVariations:
        from dreamgym_env.envs.webarena.task_variations import WebArenaTaskVariations

        return WebArenaTaskVariations(self)

    def admissible_actions(self, state: str) -> list[str] | None:
        """Read from the observation text: clicks, typing, ``go_back`` and ``stop [<answer>]``."""
        actions = []
        for element_id, role in _ids(state).items():
            if role in CLICKABLE:
                actions.append(f"click [{element_id}]")
            elif role in TYPABLE:
                actions.append(f"type [{element_id}] [<text>]")
        return [*actions, "go_back", "stop [<answer>]"]

    def validate_action(self, action: ParsedAction, state: str) -> ActionError | None:
        """An action naming an element id that is not on the page (or typing into a non-text one) is invalid."""
        command = parse_command(action.text)
        if isinstance(command, ActionError) or command.element is None:
            return None
        role = _ids(state).get(command.element)
        if role is None:
            return ActionError(f"there is no element [{command.element}] on the page")
        if command.verb == "type" and role not in TYPABLE:
            return ActionError(f"element [{command.element}] is a {role}, not a text field")
        return None

    def is_terminal_action(self, action: ParsedAction) -> bool:
        return action.verb == "stop"

    def invalid_action_feedback(self, state: str, error: ActionError) -> str:
        """The page without any earlier failure line, with this one."""
        kept = "\n".join(line for line in state.split("\n") if not re.match(r"^Invalid action: ", line))
        return f"{kept}\nInvalid action: {error.message}"
