"""WebArenaRefEnv: the programmatic WebArena sites, ground truth beside the synthetic env."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import gymnasium as gym

from dreamgym_env.envs.domain import ActionError, Domain
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.tasksets import check_reference_arguments, resolve_reference_task, utf8_action
from dreamgym_env.envs.webarena.browser import ActionFailed, Browser
from dreamgym_env.envs.webarena.evaluators import Verdict, evaluate
from dreamgym_env.envs.webarena.grammar import Command, parse_command
from dreamgym_env.envs.webarena.html import page_html
from dreamgym_env.envs.webarena.state import (
    ERROR_PREFIX,
    OBSERVATION_MODES,
    Element,
    ObservationMode,
    WebArenaState,
)
from dreamgym_env.envs.webarena.tasks import load_tasks, tasks_of_sites
from dreamgym_env.envs.webarena.world import DEFAULT_DATA_SEED, World, load_data
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.spaces import UnicodeText
from dreamgym_env.types import Task

RewardMode = Literal["outcome", "score"]
StepResult = tuple[str, float, bool, bool, dict[str, Any]]
MAX_EPISODE_STEPS = 30
"""The registered horizon (WebArena-Lite's agents get 30 steps)."""
TYPE_ACTION = "type [{id}] [<text>]"
STOP_ACTION = "stop [<answer>]"


class WebArenaRefEnv(gym.Env[str, str]):
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
    restorable: ClassVar[bool] = False

    def __init__(
        self,
        *,
        split: str = "train",
        tasks: Sequence[Task] | None = None,
        reward: RewardMode = "outcome",
        max_steps: int | None = None,
        render_mode: str | None = None,
        observation: ObservationMode = "axtree",
        sites: Sequence[str] | None = None,
        max_text_length: int = 16_384,
        data_seed: int = DEFAULT_DATA_SEED,
        domain: Domain | None = None,
    ) -> None:
        check_reference_arguments(reward, max_steps, render_mode, self.metadata["render_modes"])
        if observation not in OBSERVATION_MODES:
            raise ConfigurationError(f"observation must be one of {OBSERVATION_MODES}, got {observation!r}")
        self.domain: Domain = domain if domain is not None else get_domain("webarena")
        self.data = load_data(data_seed)
        self.task_set = load_tasks(data_seed)
        self.split = split
        chosen = tuple(tasks) if tasks is not None else self.task_set.split(split)
        self._tasks = tasks_of_sites(chosen, tuple(sites) if sites is not None else None)
        self._by_id = {t.id: t for t in self._tasks}
        self.reward_mode: RewardMode = reward
        self.max_steps = max_steps
        self.render_mode = render_mode
        self.observation_mode: ObservationMode = observation
        self.max_text_length = max_text_length
        self.observation_space = UnicodeText(max_text_length)
        self.action_space = UnicodeText(max_text_length)
        self.task: Task | None = None
        self.world = World(self.data)
        self.browser = Browser(self.world, self.world.home("shopping"))
        self.elapsed_steps = 0
        self.last_verdict: Verdict | None = None
        self._message = ""
        self._done = True

    # -- state -------------------------------------------------------------------------------
    @property
    def tasks(self) -> Sequence[Task]:
        return self._tasks

    @property
    def state(self) -> str:
        """The current observation text (with the failure line after an invalid action)."""
        text = self.browser.render(self.observation_mode)
        text = f"{text}\n{self._message}" if self._message else text
        return text[: self.max_text_length]

    @property
    def abstract_state(self) -> WebArenaState:
        """The current page as a :class:`WebArenaState` (``render(state, mode)`` gives :attr:`state`)."""
        browser = self.browser
        return WebArenaState(
            url=browser.url,
            title=browser.elements()[0].name,
            tabs=browser.tab_titles(),
            active_tab=browser.active,
            elements=[
                Element(id=e.id, role=e.role, name=e.name, depth=e.depth, properties=dict(e.properties))
                for e in browser.visible()
            ],
            more_above=browser.more_above,
            more_below=browser.more_below,
            message=self._message,
        )

    def page_text(self, url: str) -> str:
        """The text of the page at ``url`` now (``"last"``: the current page, all of it).

        What ``program_html``'s whole-page locator reads: every element, not only the viewport.
        """
        browser = self.browser if url == "last" else Browser(self.world, url)
        return "\n".join(
            " ".join([e.name, str(e.properties["value"])]) if "value" in e.properties else e.name
            for e in browser.elements()
        )

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

    def resolve_task(self, spec: Task | str | None) -> Task:
        """Turn a Task or task id into a Task with an evaluator; ``None`` draws one at random."""
        if not isinstance(spec, Task):  # drawn or looked up: one of the env's own tasks
            return resolve_reference_task(
                spec,
                self._tasks,
                ChainMap(self._by_id, self.task_set.by_id),
                self.np_random,
                needs="an evaluator",
            )
        if "eval" not in spec.metadata or "site" not in spec.metadata:
            raise ConfigurationError(f"task {spec.id!r} has no evaluator (metadata['eval']) to score it")
        seed = spec.metadata.get("data_seed", DEFAULT_DATA_SEED)
        if seed != self.data.seed:
            raise ConfigurationError(
                f"task {spec.id!r} belongs to data seed {seed}, this env has {self.data.seed}"
            )
        return spec

    def restore(self, task: Task, state: str) -> None:
        """Not possible: a page's text does not hold the sites' state; replay the actions instead."""
        raise ConfigurationError("WebArena pages are not Markov: use replay(task, actions) to reach a state")

    # -- gymnasium API -----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        task = self.resolve_task((options or {}).get("task"))
        self.task = task
        self.world = World(self.data)
        self.browser = Browser(
            self.world, task.metadata.get("start_url") or self.world.home(task.metadata["site"])
        )
        self.elapsed_steps, self.last_verdict, self._message, self._done = 0, None, "", False
        info = {
            "task": task,
            "task_id": task.id,
            "source": "real",
            "admissible_actions": self.admissible_actions(),
        }
        return self.state, info

    def step(self, action: str) -> StepResult:
        if self.task is None or self._done:
            raise ConfigurationError("call reset() before step() (the episode has ended or not begun)")
        action = utf8_action(action)
        command = (
            parse_command(action)
            if isinstance(action, str)
            else ActionError(f"an action must be a string, got {type(action).__name__}")
        )
        self.elapsed_steps += 1
        truncated = self.max_steps is not None and self.elapsed_steps >= self.max_steps
        info: dict[str, Any] = {"task": self.task, "task_id": self.task.id, "source": "real"}
        error = command if isinstance(command, ActionError) else self._act(command)
        if error is not None:
            self._message = f"{ERROR_PREFIX}{error.message}"
            self._done = truncated
            info.update(
                action_valid=False,
                error=error.message,
                score=0.0,
                won=False,
                admissible_actions=self.admissible_actions(),
            )
            return self.state, 0.0, False, truncated, info
        self._message = ""
        spec = self.task.metadata["eval"]
        # As WebArena's run loop: only the agent's stop ends an episode, and the evaluator
        # judges the final page and state then (a finished form alone never ends it).
        verdict: Verdict | None = None
        if isinstance(command, Command) and command.verb == "stop":
            verdict = evaluate(spec, command.text, self.browser.url, self.world, self.page_text)
        terminated = verdict is not None
        self.last_verdict = verdict
        score = verdict.score if verdict else 0.0
        won = bool(verdict and verdict.won)
        reward = score if self.reward_mode == "score" else float(won)
        self._done = terminated or truncated
        info.update(action_valid=True, score=score, won=won, admissible_actions=self.admissible_actions())
        if self.render_mode == "human":
            print(f"> {action}\n{self.state}")
        return self.state, reward, terminated, truncated and not terminated, info

    def _act(self, command: Command) -> ActionError | None:
        if command.verb == "stop":
            return None
        try:
            self.browser.act(command)
        except ActionFailed as exc:
            return ActionError(str(exc))
        return None

    def replay(self, task: Task | str, actions: Sequence[str]) -> tuple[str, dict[str, Any]]:
        """Reset to ``task`` and take ``actions`` in order (stopping where the episode ends).

        Deterministic: the same task and actions give the same observation and info. Returns the
        last observation and info (the reset's when ``actions`` is empty).
        """
        observation, info = self.reset(options={"task": task})
        for action in actions:
            if self._done:
                break
            observation, _, _, _, info = self.step(action)
        return observation, info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.state
        if self.render_mode == "html":
            browser = self.browser
            return page_html(
                browser.url, browser.tab_titles(), browser.active, browser.visible(), self._message
            )
        if self.render_mode == "human":
            print(self.state)
        return None
