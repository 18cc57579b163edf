"""WebArenaRefEnv: the programmatic WebArena sites, ground truth beside the synthetic env."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dreamgym_env.domain import ActionError
from dreamgym_env.envs.reference import ActionOutcome, ReferenceEnvBase, parse_text_action
from dreamgym_env.envs.tasksets import TaskSet
from dreamgym_env.envs.webarena.browser import ActionFailed, Browser
from dreamgym_env.envs.webarena.evaluators import Verdict, evaluate
from dreamgym_env.envs.webarena.given import page_state, text_of
from dreamgym_env.envs.webarena.grammar import Command, parse_command
from dreamgym_env.envs.webarena.html import page_html
from dreamgym_env.envs.webarena.state import (
    ERROR_PREFIX,
    OBSERVATION_MODES,
    ObservationMode,
    WebArenaState,
)
from dreamgym_env.envs.webarena.tasks import load_tasks, tasks_of_sites
from dreamgym_env.envs.webarena.world import DEFAULT_DATA_SEED, World, load_data
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

MAX_EPISODE_STEPS = 30
"""The registered horizon (WebArena-Lite's agents get 30 steps)."""
TYPE_ACTION = "type [{id}] [<text>]"
STOP_ACTION = "stop [<answer>]"


class WebArenaRefEnv(ReferenceEnvBase):
    """Five deterministic, programmatic web sites with WebArena's observations, actions and evaluators.

    ## Description
    The reference env of the WebArena domain: ``shopping`` (a store front), ``shopping_admin``
    (its admin panel), ``reddit`` (forums), ``gitlab`` (projects, issues, merge requests) and
    ``map`` (places and routes), each an in-memory app over seeded data, reached by URL
    (``http://shopping.local/``, ``http://admin.local/``, ``http://reddit.local/``,
    ``http://gitlab.local/``, ``http://map.local/``; the URL schemes are in each site's module).
    Tasks are WebArena-style intents ("Change the status of order #120 to Complete", "How long
    does it take to drive from A to B?"). It is ground truth for offline trajectories, fidelity
    and sim-to-real; never the default behind a synthetic id.

    ## Observation Space
    ``UnicodeText``: with ``observation="axtree"`` WebArena's accessibility tree (a tab line, the
    URL, then ``[id] role 'name' properties`` lines indented by depth); with ``"compact"`` the
    paper's abstract state (``[id] role: name`` of interactive and content elements). See
    :mod:`~dreamgym_env.envs.webarena.state`. Only the viewport's elements are shown: at most
    :data:`~dreamgym_env.envs.webarena.state.VIEWPORT` (40) after the root, ``scroll [down]``
    moves on by 30, and a last line ``(more below: scroll [down])`` / ``(more above: scroll [up])``
    says when scrolling shows more.

    ## Action Space
    ``UnicodeText``: WebArena's actions ``click [id]``, ``type [id] [text] [0|1]``, ``hover [id]``,
    ``press [key_comb]``, ``scroll [up|down]``, ``new_tab``, ``tab_focus [i]``, ``close_tab``,
    ``goto [url]``, ``go_back``, ``go_forward``, ``stop [answer]``. A malformed action, an id
    that is not on the page, an unknown URL or a history without a page to go to is invalid:
    the page stays, with a line ``Invalid action: ...``; it never raises.

    ## Rewards
    The task's evaluator (``task.metadata["eval"]``: WebArena's ``string_match``, ``url_match``
    and ``program_html``, and ``program_state`` checks of the sites' state, see
    :mod:`~dreamgym_env.envs.webarena.evaluators`) judges the episode at ``stop [answer]`` only,
    as WebArena's run loop does: a state-changing task must still be stopped after its change.
    The score is the product of the evaluators' 0/1 scores (``EvaluatorComb``), so
    ``reward="outcome"`` (default) and ``reward="score"`` give the same 1 or 0; ``info["score"]``
    is that score.

    ## Starting State
    The home page of the task's site in a fresh world (the seeded data, nothing changed).
    ``reset(seed=..., options={"task": task})`` takes a Task or task id; without one it draws a
    task of ``split`` (of ``sites``) with the env's seeded RNG.

    ## Episode End
    Terminated only by ``stop [...]`` (WebArena's ``stop`` action, the only one that ends an
    episode there). Truncated after
    ``max_steps`` steps when set (``gym.make`` applies :data:`MAX_EPISODE_STEPS` through
    ``TimeLimit`` instead).

    ## Info
    ``task``, ``task_id``, ``source`` (``"real"``), ``admissible_actions`` (``click [id]`` for
    every clickable element, ``type [id] [<text>]`` for every text field, scrolling and history
    actions that do something, ``stop [<answer>]``), and after a step ``action_valid``,
    ``score``, ``won`` and, for an invalid action, ``error``.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``split`` | ``"train"`` | where random tasks come from (``"train"`` or ``"test"``, 165 tasks) |
    | ``tasks`` | ``None`` | an explicit task list instead of the split |
    | ``reward`` | ``"outcome"`` | ``"outcome"`` or ``"score"`` (the same here, see Rewards) |
    | ``max_steps`` | ``None`` | truncate after this many steps |
    | ``render_mode`` | ``None`` | ``"ansi"`` (text), ``"human"`` (print), ``"html"`` (an HTML page) |
    | ``observation`` | ``"axtree"`` | ``"axtree"`` or ``"compact"`` |
    | ``sites`` | ``None`` | draw tasks of these sites only (e.g. ``("reddit", "gitlab")``) |
    | ``max_text_length`` | ``16384`` | the spaces' length bound (longer pages are cut) |
    | ``data_seed`` | ``0`` | seed of the sites' data and of the tasks |

    ## Version History
    * v0: first release.
    """

    metadata = {"render_modes": ["ansi", "human", "html"], "render_fps": 4}
    task_needs = "an evaluator"

    domain_name = "webarena"

    def __init__(
        self,
        *,
        observation: ObservationMode = "axtree",
        sites: Sequence[str] | None = None,
        data_seed: int = DEFAULT_DATA_SEED,
        **kwargs: Any,
    ) -> None:
        """``kwargs``: the arguments every reference env takes (:class:`ReferenceEnvBase`)."""
        self.data = load_data(data_seed)
        super().__init__(**kwargs)
        if observation not in OBSERVATION_MODES:
            raise ConfigurationError(f"observation must be one of {OBSERVATION_MODES}, got {observation!r}")
        self._use_tasks(
            self.task_set, tasks_of_sites(self._tasks, tuple(sites) if sites is not None else None)
        )
        self.observation_mode: ObservationMode = observation
        self.world = World(self.data)
        self.browser = Browser(self.world, self.world.home("shopping"))
        self._message = ""

    def _task_set(self) -> TaskSet:
        return load_tasks(self.data.seed)

    # -- state -------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        """The current observation text (with the failure line after an invalid action)."""
        text = self.browser.render(self.observation_mode)
        text = f"{text}\n{self._message}" if self._message else text
        return text[: self.max_text_length]

    @property
    def abstract_state(self) -> WebArenaState:
        """The current page and the episode's changes as a :class:`WebArenaState` (``render(state, mode)`` gives :attr:`state`)."""
        return page_state(self.browser, message=self._message)

    def page_text(self, url: str) -> str:
        """The text of the page at ``url`` now (``"last"``: the current page, all of it).

        What ``program_html``'s whole-page locator reads: every element, not only the viewport.
        """
        browser = self.browser if url == "last" else Browser(self.world, url)
        return text_of(browser.elements())

    def admissible_actions(self) -> list[str]:
        """Clicks, typing, the scrolls and history moves that do something, and ``stop [<answer>]``."""
        actions: list[str] = []
        for e in self.browser.visible()[1:]:
            if e.role in ("textbox", "searchbox"):
                actions.append(TYPE_ACTION.format(id=e.id))
            elif e.node.href is not None or e.node.op is not None or e.role in ("combobox", "option"):
                actions.append(f"click [{e.id}]")
        if self.browser.more_below:
            actions.append("scroll [down]")
        if self.browser.more_above:
            actions.append("scroll [up]")
        if self.browser.tab.index > 0:
            actions.append("go_back")
        actions.append(STOP_ACTION)
        return actions

    def _check_task(self, task: Task) -> None:
        if "eval" not in task.metadata or "site" not in task.metadata:
            raise ConfigurationError(f"task {task.id!r} has no evaluator (metadata['eval']) to score it")
        seed = task.metadata.get("data_seed", DEFAULT_DATA_SEED)
        if seed != self.data.seed:
            raise ConfigurationError(
                f"task {task.id!r} belongs to data seed {seed}, this env has {self.data.seed}"
            )

    def restore(self, task: Task, state: str) -> None:
        """Not possible: a page's text does not hold the sites' state; replay the actions instead."""
        raise ConfigurationError("WebArena pages are not Markov: use replay(task, actions) to reach a state")

    # -- the hooks of ReferenceEnvBase --------------------------------------------------------
    def _start(self, task: Task) -> None:
        self.task = task
        self.world = World(self.data)
        self.browser = Browser(
            self.world, task.metadata.get("start_url") or self.world.home(task.metadata["site"])
        )
        self._message = ""

    def _apply(self, action: object) -> ActionOutcome:
        assert self.task is not None
        command = parse_text_action(action, parse_command)
        error = command if isinstance(command, ActionError) else self._act(command)
        if error is not None:
            self._message = f"{ERROR_PREFIX}{error.message}"
            info = {"action_valid": False, "error": error.message, "score": 0.0, "won": False}
            return ActionOutcome(self.state, 0.0, False, info)
        self._message = ""
        spec = self.task.metadata["eval"]
        # As WebArena's run loop: only the agent's stop ends an episode, and the evaluator
        # judges the final page and state then (a finished form alone never ends it).
        verdict: Verdict | None = None
        if isinstance(command, Command) and command.verb == "stop":
            verdict = evaluate(spec, command.text, self.browser.url, self.world, self.page_text)
        score = verdict.score if verdict else 0.0
        won = bool(verdict and verdict.won)
        self._print_step(action, self.state)
        info = {"action_valid": True, "score": score, "won": won}
        return ActionOutcome(self.state, self.reward_of(score, won), verdict is not None, info)

    def _act(self, command: Command) -> ActionError | None:
        if command.verb == "stop":
            return None
        try:
            self.browser.act(command)
        except ActionFailed as exc:
            return ActionError(str(exc))
        return None

    def render(self) -> str | None:
        if self.render_mode == "html":
            browser = self.browser
            return page_html(
                browser.url, browser.tab_titles(), browser.active, browser.visible(), self._message
            )
        return super().render()
