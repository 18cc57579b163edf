"""WebShopRefEnv: the programmatic WebShop, ground truth beside the synthetic env."""

from __future__ import annotations

from typing import Any, Literal

from dreamgym_env.domain import ActionError, ParsedAction
from dreamgym_env.envs.reference import ActionOutcome, ReferenceEnvBase, parse_text_action
from dreamgym_env.envs.tasksets import TaskSet
from dreamgym_env.envs.webshop.catalog import DEFAULT_CATALOG_SEED, DEFAULT_NUM_PRODUCTS, load_catalog
from dreamgym_env.envs.webshop.goal import Goal, Score, score_purchase
from dreamgym_env.envs.webshop.grammar import parse_action
from dreamgym_env.envs.webshop.navigation import next_page
from dreamgym_env.envs.webshop.pages import (
    SEARCH_LABEL,
    Page,
    Rendered,
    is_reachable,
    parse_page,
    render,
)
from dreamgym_env.envs.webshop.real_text import real_text
from dreamgym_env.envs.webshop.state import WebShopState, state_of_page
from dreamgym_env.envs.webshop.tasks import load_tasks
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import Task

ObservationMode = Literal["pages", "text"]
SEARCH_ACTION = "search[<query>]"


class WebShopRefEnv(ReferenceEnvBase):
    """A deterministic, programmatic web shop with WebShop's text pages and actions.

    ## Description
    The reference env of the WebShop domain: a seeded catalog (default 2,000 products in 7
    categories) with BM25 search, and tasks generated from its products ("i need a long sleeve
    men's shirt that is machine washable, in navy blue, size large, price lower than 40.00
    dollars"). It is ground truth for offline trajectories, for measuring how faithfully an
    experience model predicts transitions, and for sim-to-real; never the default behind a
    synthetic id. Its observations are those the synthetic ``DreamGym/WebShop-v0`` shows the
    agent, and its states (``info["state"]``) those it shows its experience model
    (``WebShopDomain().prompt``).

    ## Observation Space
    ``UnicodeText``: the current page (search, results, item, description/features/reviews
    sub-page, or the purchase confirmation). ``observation_mode="text"`` (the default): the
    page exactly as WebShop's ``WebAgentTextEnv`` prints it in its ``'text'`` mode, elements
    joined by ``' [SEP] '`` (:func:`~dreamgym_env.envs.webshop.real_text.real_text`).
    ``observation_mode="pages"``: the Markov page text, in lines, clickable labels in square
    brackets, with the query, results page and selection that the real text leaves out. That
    text is the env's state in either mode (:attr:`state`, ``info["state"]``): the experience
    model's format, and what :meth:`restore` takes.

    ## Action Space
    ``UnicodeText``: any string. Valid actions are ``search[query]`` (on any page, as
    WebShop's ``WebAgentTextEnv.step`` allows) and ``click[label]`` for a label of the current
    page (the argument lower-cased, as there). Verbs are lower case. Any other string is an
    invalid action: the observation is the page unchanged, as in WebShop, and
    ``info["error"]`` says why (an extension); it never raises.

    ## Rewards
    Only ``click[Buy Now]`` is rewarded. WebShop's score of the purchase (``get_reward`` of
    princeton-nlp/WebShop 64fa2a5, :mod:`~dreamgym_env.envs.webshop.goal`), ``r_type x
    (matched attributes + matched options + price within bound) / (attributes + options + 1)``
    with ``r_type`` 1 / 0.5 / 0.1 / 0 from the title's nouns, search query and category, fuzzy
    attribute and option matching, is ``info["score"]``. The reward is 1 when the score is 1 (``won``) and 0
    otherwise (``reward="outcome"``, the default, comparable with the synthetic env's outcome
    reward), or the score itself (``reward="score"``, WebShop's shaped reward).

    ## Starting State
    The search page of a task. ``reset(seed=..., options={"task": task})`` takes a
    :class:`~dreamgym_env.types.Task` of this catalog or a task id; without one it draws a task
    of ``split`` with the env's seeded RNG.

    ## Episode End
    Terminated by ``click[Buy Now]``. Truncated after ``max_steps`` steps when set
    (``gym.make`` applies the registered ``max_episode_steps`` through ``TimeLimit`` instead).

    ## Info
    ``task``, ``task_id``, ``source`` (``"real"``), ``state`` (the Markov page text, also
    :attr:`state`), ``admissible_actions`` (``search[<query>]``
    on the search page, else ``click[label]`` for every label), ``abstract_state`` (the page as
    a :class:`~dreamgym_env.envs.webshop.state.WebShopState`, also :attr:`abstract_state`), and
    after a step ``action_valid``, ``score``, ``won`` and, for an invalid action, ``error``.

    ## Arguments
    | argument | default | meaning |
    |---|---|---|
    | ``split`` | ``"train"`` | where random tasks come from (``"train"`` or ``"test"``) |
    | ``tasks`` | ``None`` | an explicit task list instead of the split |
    | ``reward`` | ``"outcome"`` | ``"outcome"`` (1 when won) or ``"score"`` (WebShop's score) |
    | ``max_steps`` | ``None`` | truncate after this many steps (``None``: no limit of its own) |
    | ``catalog_seed`` | ``0`` | seed of the generated catalog and its tasks |
    | ``num_products`` | ``2000`` | catalog size (tasks: 3 per product, one in 6 for test) |
    | ``render_mode`` | ``None`` | ``"ansi"`` returns text, ``"human"`` prints it |
    | ``observation_mode`` | ``"text"`` | ``"text"`` (WebShop's own text) or ``"pages"`` (the Markov page text) |
    | ``domain`` | the registered ``webshop`` | the domain pack whose grammar and feedback it uses |

    The catalog, its search index and its tasks are built once per process per
    ``(catalog_seed, num_products)``; constructing further envs is cheap.

    ## Version History
    * v0 (dreamgym-env 0.1.0, 2026-11-30): first release. Since 2026-12-03: WebShop's own reward,
      grammar, invalid actions (page unchanged), search from any page, ``[Next >]`` on every
      results page, and WebShop's own page text as the default observation (``observation_mode="text"``).
    """

    restorable = True
    """A page's Markov text (:attr:`state`) determines the env's state, so :meth:`restore` works."""
    task_needs = "a goal to score purchases"

    domain_name = "webshop"

    def __init__(
        self,
        *,
        catalog_seed: int = DEFAULT_CATALOG_SEED,
        num_products: int = DEFAULT_NUM_PRODUCTS,
        observation_mode: ObservationMode = "text",
        **kwargs: Any,
    ) -> None:
        """``kwargs``: the arguments every reference env takes (:class:`ReferenceEnvBase`)."""
        if observation_mode not in ("pages", "text"):
            raise ConfigurationError(f'observation_mode must be "pages" or "text", got {observation_mode!r}')
        self.observation_mode: ObservationMode = observation_mode
        self.catalog = load_catalog(catalog_seed, num_products)
        super().__init__(**kwargs)
        self.goal: Goal | None = None
        self.page = Page("search")
        self._rendered = Rendered("", ())
        self._observation = ""
        self.last_score: Score | None = None

    def _task_set(self) -> TaskSet:
        return load_tasks(self.catalog.seed, self.catalog.num_products)

    # -- state -------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        """The current page's Markov text (the experience model's format, what :meth:`restore` takes)."""
        return self._rendered.text

    @property
    def observation(self) -> str:
        """What the agent sees of the current page (see ``observation_mode``)."""
        return self._observation

    @property
    def abstract_state(self) -> WebShopState:
        """The current page as a :class:`~dreamgym_env.envs.webshop.state.WebShopState`.

        ``render(env.abstract_state) == env.state``.
        """
        if self.task is None:
            raise ConfigurationError("call reset() before reading abstract_state")
        return state_of_page(self.page, self.task.instruction, self.catalog)

    def admissible_actions(self) -> list[str]:
        """The valid actions of the current page (as ``WebShopDomain.admissible_actions`` lists them)."""
        labels = self._rendered.labels
        if labels and labels[0] == SEARCH_LABEL:
            return [SEARCH_ACTION]
        return [f"click[{label}]" for label in labels]

    def _check_task(self, task: Task) -> None:
        seed = task.metadata.get("catalog_seed", DEFAULT_CATALOG_SEED)
        size = task.metadata.get("num_products", DEFAULT_NUM_PRODUCTS)
        if (seed, size) != (self.catalog.seed, self.catalog.num_products):
            raise ConfigurationError(
                f"task {task.id!r} belongs to catalog (seed={seed}, num_products={size}), this env has "
                f"(seed={self.catalog.seed}, num_products={self.catalog.num_products})"
            )

    def _show(self, page: Page, reward: float | None = None) -> None:
        assert self.task is not None
        self.page = page
        self._rendered = render(page, self.task.instruction, self.catalog)
        if self.observation_mode == "text":
            self._observation = real_text(state_of_page(page, self.task.instruction, self.catalog), reward)
        else:
            self._observation = self._rendered.text

    def restore(self, task: Task, state: str) -> None:
        """Put the env on page ``state`` of ``task``, as if the episode had led there.

        ``state`` is a page's Markov text (:attr:`state`, ``info["state"]``; pages are Markov, see
        :mod:`~dreamgym_env.envs.webshop.pages`), in either observation mode. Raises
        :class:`~dreamgym_env.errors.ConfigurationError` when ``state`` is not a page this env
        renders for ``task`` (or is the final page of an episode).
        """
        task = self.resolve_task(task)
        page = parse_page(state, self.catalog)
        if page is None or page.kind == "done" or not is_reachable(page, self.catalog):
            raise ConfigurationError(
                f"not a page the WebShop reference env can continue from: {state[:120]!r}"
            )
        before = (self.task, self.goal, self.page, self._rendered, self._observation)
        self.task, self.goal = task, Goal.of_task(task)
        self._show(page)
        if self.state != state:  # the env stays where it was: a failed restore changes nothing
            self.task, self.goal, self.page, self._rendered, self._observation = before
            raise ConfigurationError(f"page does not match what the reference env renders: {state[:120]!r}")
        self.elapsed_steps, self.last_score, self._done = 0, None, False

    # -- the hooks of ReferenceEnvBase --------------------------------------------------------
    def _start(self, task: Task) -> None:
        self.task, self.goal = task, Goal.of_task(task)
        self._show(Page("search"))
        self.last_score = None

    def _state_info(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "admissible_actions": self.admissible_actions(),
            "abstract_state": self.abstract_state,
        }

    def _apply(self, action: object) -> ActionOutcome:
        parsed: ParsedAction | ActionError = parse_text_action(action, parse_action)
        page = (
            next_page(self.catalog, self.page, self._rendered.labels, parsed)
            if isinstance(parsed, ParsedAction)
            else None
        )
        if page is None:
            error = parsed if isinstance(parsed, ActionError) else self._error(parsed)
            # The page is unchanged, as in WebShop; a domain's feedback would show on the Markov text.
            feedback = self.domain.invalid_action_feedback(self.state, error)
            observation = self.observation if feedback == self.state else feedback
            info = {"action_valid": False, "error": error.message, "score": 0.0, "won": False}
            return ActionOutcome(observation, 0.0, False, info)
        reward, terminated, score = 0.0, False, 0.0
        if page.kind == "done":
            assert self.goal is not None
            self.last_score = score_purchase(
                self.catalog.products[page.item], dict(page.selection), self.goal
            )
            score, terminated = self.last_score.value, True
            reward = self.reward_of(score, self.last_score.won)
        self._show(page, score)
        self._print_step(action, self.observation)
        info = {"action_valid": True, "score": score, "won": terminated and score >= 1.0 - 1e-9}
        return ActionOutcome(self.observation, reward, terminated, info)

    def _error(self, parsed: ParsedAction) -> ActionError:
        return self.domain.validate_action(parsed, self.state) or ActionError(
            f"{parsed.text} does nothing on this page"
        )
