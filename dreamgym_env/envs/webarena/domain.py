"""The WebArena domain: five web sites seen as accessibility trees, WebArena's id-based actions."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from dreamgym_env.domain import (
    ACTION_SLOT,
    ActionError,
    Domain,
    DomainPrompt,
    ParsedAction,
    Policy,
    Split,
    SuppliedFields,
)
from dreamgym_env.envs.tasksets import free_task_id
from dreamgym_env.envs.webarena.given import next_page_fields, start_page_state, stop_line
from dreamgym_env.envs.webarena.grammar import MAX_ACTION_CHARS, NOT_APPLICABLE, parse_action, parse_command
from dreamgym_env.envs.webarena.prompt import PROMPT
from dreamgym_env.envs.webarena.state import MORE_ABOVE, MORE_BELOW, WebArenaState, parse_state, render
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

if TYPE_CHECKING:
    from dreamgym_env.envs.webarena.expert import WebArenaExpert
    from dreamgym_env.envs.webarena.reference_env import WebArenaRefEnv
    from dreamgym_env.envs.webarena.task_variations import WebArenaTaskVariations

MAX_FILLS = 8
"""Candidates one free slot gives at most (an RL adapter's action set stays small)."""
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")
_FROM_TO = re.compile(r"\bfrom (.+?) to (.+?)[?.]?$")
_PATH = re.compile(r"\b[\w.-]+/[\w.-]+\b")
_ORDER = re.compile(r"#(\d+)")
_PRICE = re.compile(r"\$(\d+(?:\.\d+)?)")
_MEMBER = re.compile(r"\bAdd (\S+) as an? (\w+)")
_NAME = re.compile(r"\b[A-Z][\w'-]*(?: [A-Z][\w'-]*)+")
_STATIC = re.compile(r"^\s*\[\d+\] StaticText ('.*'|\".*\")\s*$")
_AMOUNT = re.compile(r"^\$?([\d,]+(?:\.\d+)?)$")
MAX_ANSWER_CHARS = 60
MAX_ANSWERS = 16
"""Answer candidates ``stop [<answer>]`` gives at most."""
_NUMBERS = re.compile(r"\d+(?:[.:]\d+)?")


def instruction_phrases(instruction: str) -> list[str]:
    """The phrases of an instruction worth typing into a field, in a stable order, at most :data:`MAX_FILLS`."""
    found: list[str] = [a or b for a, b in _QUOTED.findall(instruction)]
    route = _FROM_TO.search(instruction.rstrip())
    if route is not None:
        found += [route.group(1), route.group(2)]
    found += _PATH.findall(instruction) + _ORDER.findall(instruction) + _PRICE.findall(instruction)
    unquoted = _QUOTED.sub(" ", instruction)
    for name in _NAME.findall(unquoted):
        words = name.split()
        words = words[1:] if words[0] in _SENTENCE_STARTS else words  # "Buy Bluebird Natural Notebook"
        if words:
            found.append(" ".join(words))
    member = _MEMBER.search(unquoted)
    if member is not None:  # "Add mrdoob as a Developer of ..."
        found += [member.group(1), member.group(2)]
    last = unquoted.rstrip(" .?").rsplit(" to ", 1)
    if len(last) == 2 and len(last[1].split()) <= 2:  # "Change the status ... to Processing."
        found.append(last[1])
    return list(dict.fromkeys(p.strip() for p in found if p.strip()))[:MAX_FILLS]


_SENTENCE_STARTS = frozenset(
    {"What", "How", "Who", "Add", "Buy", "Change", "Update", "Post", "Create", "Close"}
)


def _filled(action: str, value: str) -> str:
    """``action`` with its free slot replaced by ``value`` (taken literally, not as a regex template)."""
    return ACTION_SLOT.sub(lambda _: value, action)


def _literal(quoted: str) -> str:
    """The text of a name as the tree prints it (Python's ``repr``)."""
    try:
        return str(ast.literal_eval(quoted))
    except (ValueError, SyntaxError):
        return quoted[1:-1]


def page_values(observation: str) -> list[str]:
    """Short values the page shows (static texts, without their labels, their numbers and last words), at most :data:`MAX_ANSWERS`."""
    values: list[str] = []
    for line in observation.split("\n"):
        match = _STATIC.match(line)
        if match is None:
            continue
        text = _literal(match.group(1)).strip()
        if not text or len(text) > MAX_ANSWER_CHARS:
            continue
        value = text.split(": ", 1)[1].strip() if ": " in text else text
        amount = _AMOUNT.match(value)
        values += [value, amount.group(1).replace(",", "")] if amount else [value]
        values += _NUMBERS.findall(value) + value.split()[-1:]  # "5 Reviews", "Posted by quietstorm"
    return list(dict.fromkeys(values))[:MAX_ANSWERS]


CLICKABLE = frozenset({"link", "button", "combobox", "option", "checkbox"})
TYPABLE = frozenset({"textbox", "searchbox"})
SITE_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "shopping_admin",
        ("admin", "order status", "customer", "bestsell", "best selling", "best-selling", "sales report"),
    ),
    ("reddit", ("forum", "reddit", "post ", "comment", "upvote", "downvote", "subscribe", "/f/")),
    ("gitlab", ("gitlab", "project", "issue", "merge request", "repository", "repo ")),
    ("map", ("drive", "walk", "bike", "route", "direction", "distance", " map", "address of")),
    ("shopping", ("buy", "cart", "price", "product", "shop", "order", "review")),
)


SCROLLS = ((MORE_BELOW, "scroll [down]"), (MORE_ABOVE, "scroll [up]"))
DATA_KEEPING_VERBS = frozenset(
    {"scroll", "hover", "new_tab", "tab_focus", "close_tab", "goto", "go_back", "go_forward", "stop"}
)
"""Verbs that submit no form, so never change the sites' data (a click, typing with Enter and a key press can)."""


@lru_cache(maxsize=2048)
def _ids(state: str) -> dict[int, str]:
    return {e.id: e.role for e in parse_state(state).elements}


class WebArenaDomain(Domain):
    """WebArena: accessibility-tree pages of five sites, actions ``click [id]``, ``type [id] [text]``, ..."""

    name = "webarena"
    display_name = "WebArena"
    max_episode_steps = 30
    max_action_chars = MAX_ACTION_CHARS
    ends_only_on_terminal_actions = True  # WebArena's run loop: only the agent's stop ends it, and is judged
    reward_modes = ("outcome", "score")

    state_schema = WebArenaState
    state_kind_field = "url"
    experience_model_dir = Path(__file__).parent / "experience_model"
    preferred_experience_model = "distilled"

    def render_state(self, state: Any) -> str:
        """The accessibility-tree observation of an abstract state."""
        return render(state)

    def initial_abstract_state(self, task: Task) -> WebArenaState:
        """The task's start page as the reference env's reset shows it (:func:`~dreamgym_env.envs.webarena.given.start_page_state`).

        The whole tree, its pruned layout nodes included, so that the first action's page can be
        given; the ``initial_state`` text parsed back where the sites have no such page.
        """
        return start_page_state(task) or parse_state(task.initial_state)

    def parse_action(self, text: str) -> ParsedAction | ActionError:
        return parse_action(text)

    def action_arguments(self, action: str) -> tuple[str, ...]:
        """The element and the text: ``type [12] [red shoes] [1]`` -> ``("12", "red shoes")``, ``goto [url]`` -> ``("url",)``."""
        command = parse_command(action)
        if isinstance(command, ActionError):
            return ()
        named = (command.element, command.index, command.text)
        return tuple(str(value) for value in named if value is not None and value != "")

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
                f"cannot tell which WebArena site the instruction is about: {instruction[:120]!r}"
            )
        return Task(
            id=free_task_id(self.name, instruction),
            domain=self.name,
            instruction=instruction,
            initial_state=start_page(site),
            metadata={"site": site, "start_url": World(load_data()).home(site)},
        )

    def supplies(
        self, task: Task | None, state: str, abstract: BaseModel | None, action: ParsedAction
    ) -> SuppliedFields:
        """What an action that submits nothing keeps, the page the sites open, and what the evaluators find at ``stop``.

        Carried: ``changes`` for an action that submits nothing (scrolling, hovering, the tabs
        and the history, ``goto``, ``stop``). Given: the whole next page when the current one is
        the sites' (:func:`~dreamgym_env.envs.webarena.given.next_page_fields`): a model cannot
        know the elements of a page it has not seen, so a link, a scroll, a ``goto``, typing or a
        button on a page the sites (the seeded data with the state's changes) show opens what
        the programmatic sites open, and the changes a form makes; ``go_back``, ``go_forward``
        and the tabs' actions open the page the state's history of the tabs holds. World: at
        ``stop [answer]``, what WebArena's evaluators find
        (:func:`~dreamgym_env.envs.webarena.given.stop_line`), in either mode. The reward and the
        episode's end stay the model's.
        """
        page = None if abstract is None else _as_page(abstract)
        carried = ("changes",) if page is not None and action.verb in DATA_KEEPING_VERBS else ()
        if task is None:
            return SuppliedFields(carried)
        if page is None:  # a page's text
            return SuppliedFields(world=_stop_line(task, state, None, action))
        return SuppliedFields(
            carried,
            given=next_page_fields(task, page, action.text),
            world=_stop_line(task, state, page, action),
        )

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
        """Read from the observation text: clicks, typing, the scrolls it offers, ``go_back`` and ``stop``."""
        actions = []
        for element_id, role in _ids(state).items():
            if role in CLICKABLE:
                actions.append(f"click [{element_id}]")
            elif role in TYPABLE:
                actions.append(f"type [{element_id}] [<text>]")
        lines = state.split("\n")
        scrolls = [action for line, action in SCROLLS if line in lines]
        return [*actions, *scrolls, "go_back", "stop [<answer>]"]

    def fill_slots(self, action: str, task: Task | None, observation: str = "") -> list[str]:
        """Typing takes phrases the instruction names; ``stop`` takes values the page shows.

        ``<text>``: the instruction's quoted phrases, the places of "from A to B", project paths,
        order numbers, prices and capitalised names (a product, a customer), at most
        :data:`MAX_FILLS`, each typed with Enter and without (``[0]``). ``<answer>``: nothing, ``N/A``,
        then the page's short static texts, each also without its
        label ("Price: $20.35" gives "$20.35" and "20.35"), their numbers and last words, at most
        :data:`MAX_ANSWERS`.
        """
        if "<answer>" in action:
            # no answer (a state task stops after its change) and "N/A" (WebArena's answer for a
            # task that cannot be done) come before the page's values
            return [_filled(action, value) for value in ("", NOT_APPLICABLE, *page_values(observation))]
        if "<text>" not in action or task is None:
            return []
        filled = [_filled(action, value) for value in instruction_phrases(task.instruction)]
        # typing then pressing Enter (a search), or only typing (a form with more fields)
        return [form for text in filled for form in (text, f"{text} [0]")]

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


def _as_page(state: BaseModel) -> WebArenaState:
    return state if isinstance(state, WebArenaState) else WebArenaState.model_validate(state.model_dump())


def _stop_line(task: Task, state: str, page: WebArenaState | None, action: ParsedAction) -> tuple[str, ...]:
    """At ``stop [answer]``, what WebArena's evaluators find on the page (``page``, else ``state``'s text read back); else none."""
    command = parse_command(action.text)
    if isinstance(command, ActionError) or command.verb != "stop":
        return ()
    return stop_line(task, page if page is not None else parse_state(state), command.text)
