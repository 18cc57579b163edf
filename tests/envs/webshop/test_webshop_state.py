"""The structured WebShop state: schema, rendering, the reference env's abstract states, the rubric."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from pydantic import ValidationError

from dreamgym_env.agents import make_policy
from dreamgym_env.agents.rollouts import iter_episodes
from dreamgym_env.domain import Policy
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.domain import WebShopDomain
from dreamgym_env.envs.webshop.goal import Goal
from dreamgym_env.envs.webshop.pages import Page
from dreamgym_env.envs.webshop.pages import render as render_page
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.envs.webshop.state import (
    Choice,
    Item,
    ResultRow,
    WebShopState,
    render,
    score_state,
    state_of_page,
    state_of_text,
)
from dreamgym_env.errors import ConfigurationError
from dreamgym_env.types import ActionError, ParsedAction, Task

DOMAIN = WebShopDomain()
BUY = ParsedAction(verb="click", argument="Buy Now", text="click[Buy Now]")
INVALID_ACTIONS = (
    "click[nowhere]",
    "search[running shoes]",  # invalid everywhere but on the search page
    "click[Search]",
    "buy the first one",
    "click[]",
    "click[Next >]",  # invalid on the last results page and off the results pages
    "click[Buy Now]",  # valid on item pages only
)


class Recorder(gym.Wrapper):
    """Keeps every observation with its info (reset and steps) of the episodes played through it."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def reset(self, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self.seen.append((observation, info))
        return observation, info

    def step(self, action: str) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        result = self.env.step(action)
        self.seen.append((result[0], result[4]))
        return result


class WithInvalid:
    """Another policy, with an invalid (or off-page) action a share of the time."""

    def __init__(self, policy: Policy, rate: float, seed: int) -> None:
        self.policy, self.rate, self.rng = policy, rate, np.random.default_rng(seed)

    def reset(self) -> None:
        reset = getattr(self.policy, "reset", None)
        if callable(reset):
            reset()

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        if self.rng.random() < self.rate:
            return INVALID_ACTIONS[int(self.rng.integers(len(INVALID_ACTIONS)))]
        return self.policy(observation, info)


class RandomBuyer:
    """Searches random words of the page, opens a random result, picks random options, buys."""

    def __init__(self, seed: int) -> None:
        self.random = make_policy("random", DOMAIN, seed=seed)
        self.rng = np.random.default_rng(seed + 1)

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        actions: list[str] = info["admissible_actions"]
        kind = observation.split("\n")[0].split(" ")[2]
        ids = [a for a in actions if a.startswith("click[B0")]
        if kind == "results" and ids:
            return ids[int(self.rng.integers(len(ids)))]
        if kind == "item":
            values = [
                a
                for a in actions[2:]
                if a not in ("click[Description]", "click[Features]", "click[Reviews]", "click[Buy Now]")
            ]
            if values and self.rng.random() < 0.6:
                return values[int(self.rng.integers(len(values)))]
            return "click[Buy Now]"
        if kind in ("description", "features", "reviews"):
            return "click[< Prev]"
        return self.random(observation, info)


def play(policy: Policy, episodes: int, seed: int, split: str = "train") -> list[tuple[str, dict[str, Any]]]:
    pages = WebShopRefEnv(split=split, observation_mode="pages")  # the Markov text these tests pin
    env = Recorder(gym.wrappers.TimeLimit(pages, max_episode_steps=15))
    for _ in iter_episodes(env, policy, episodes, seed=seed, progress=False):
        pass
    return env.seen


@pytest.fixture(scope="module")
def episodes() -> list[tuple[str, dict[str, Any]]]:
    """Every page of 60 expert, 120 noisy and 200 random episodes, a share with invalid actions."""
    seen = play(make_policy("expert", DOMAIN), 40, seed=0)
    seen += play(WithInvalid(make_policy("expert", DOMAIN), 0.2, seed=1), 20, seed=100, split="test")
    seen += play(make_policy("noisy", DOMAIN, seed=2), 80, seed=200)
    seen += play(WithInvalid(make_policy("noisy", DOMAIN, seed=3), 0.2, seed=4), 40, seed=300)
    seen += play(make_policy("random", DOMAIN, seed=5), 100, seed=400)
    seen += play(WithInvalid(make_policy("random", DOMAIN, seed=6), 0.25, seed=7), 100, seed=500)
    return seen


def states(seen: list[tuple[str, dict[str, Any]]]) -> Iterator[WebShopState]:
    for _, info in seen:
        yield info["abstract_state"]


# -- the reference env's abstract states ----------------------------------------------------------


def test_render_is_the_reference_page_on_every_step(episodes):
    kinds, invalid = set(), 0
    for observation, info in episodes:
        state = info["abstract_state"]
        assert isinstance(state, WebShopState)
        text = render(state)
        if info.get("action_valid", True):
            assert text == observation
        else:
            invalid += 1
            assert text == observation == DOMAIN.invalid_action_feedback(text, ActionError(info["error"]))
        kinds.add(state.kind)
    assert kinds == {"search", "results", "item", "description", "features", "reviews", "done"}
    assert invalid > 100


def test_render_is_deterministic_and_survives_json(episodes):
    for state in states(episodes):
        again = WebShopState.model_validate_json(state.model_dump_json())
        assert again == state
        assert render(again) == render(state) == render(state.model_copy())
        assert WebShopState.model_validate(json.loads(state.model_dump_json(exclude_defaults=True))) == state


def test_render_shows_every_admissible_action(episodes):
    for state in states(episodes):
        text = render(state)
        for action in DOMAIN.admissible_actions(text) or []:
            label = action[action.index("[") + 1 : -1]
            assert f"[{label}]" in text or label == "<query>"


def test_states_validate(episodes):
    """The env's states are built without validation (for speed): they must pass it all the same."""
    for state in states(episodes):
        assert WebShopState.model_validate(state.model_dump()) == state


def test_env_abstract_state_and_text_parse(episodes):
    env = WebShopRefEnv()
    with pytest.raises(ConfigurationError):
        _ = env.abstract_state
    observation, info = env.reset(seed=0)
    assert env.abstract_state == info["abstract_state"] == DOMAIN.initial_abstract_state(info["task"])
    observation, *_, info = env.step("search[yoga mat]")
    assert env.abstract_state == info["abstract_state"]
    catalog = env.catalog
    for observation, info in episodes[::7]:
        assert state_of_text(observation, catalog) == info["abstract_state"]
    assert state_of_text("WebShop | search", catalog) is None
    assert state_of_text("not a page", catalog) is None
    page = render_page(Page("results", query="yoga mat", page=1), "buy a mat", catalog).text
    assert state_of_text(page.replace("page 1 of", "page 9 of"), catalog) is None


def test_state_of_page_caches_without_sharing_instructions():
    catalog = WebShopRefEnv().catalog
    page = Page("results", query="yoga mat", page=1)
    a, b = state_of_page(page, "first", catalog), state_of_page(page, "second", catalog)
    assert (a.instruction, b.instruction) == ("first", "second")
    assert a.results == b.results and a.total == b.total
    assert render(b) == render_page(page, "second", catalog).text


# -- the schema -----------------------------------------------------------------------------------


def test_schema_is_a_valid_json_schema_and_states_conform(episodes):
    jsonschema = pytest.importorskip("jsonschema")
    schema = WebShopState.model_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for state in list(states(episodes))[::5]:
        validator.validate(json.loads(state.model_dump_json()))
    assert not validator.is_valid({"kind": "results", "instruction": "x", "color": "red"})
    assert not validator.is_valid({"kind": "shop", "instruction": "x"})
    described = [
        (name, field)
        for model in (WebShopState, Item, ResultRow, Choice)
        for name, field in model.model_fields.items()
    ]
    assert all(field.description for _, field in described)


def typical(episodes, kind: str) -> list[int]:
    return [len(s.model_dump_json()) for s in states(episodes) if s.kind == kind]


def test_schema_and_state_sizes(episodes, capsys):
    schema = len(json.dumps(WebShopState.model_json_schema()))
    sizes = {kind: typical(episodes, kind) for kind in ("search", "results", "item", "reviews", "done")}
    with capsys.disabled():
        print(f"\nWebShopState.model_json_schema(): {schema} characters")
        for kind, lengths in sizes.items():
            print(f"  {kind} state JSON: median {int(np.median(lengths))}, max {max(lengths)} characters")
    assert schema < 6_000
    assert np.median(sizes["results"]) < 1_500 and np.median(sizes["item"]) < 1_000
    assert max(max(lengths) for lengths in sizes.values()) < 2_500


def test_validation_refuses_what_cannot_render():
    item = Item(id="B0X", title="T", price=1.0, rating=4.0, brand="b", category="c", type="t", attrs=("a",))
    WebShopState(kind="item", instruction="i", item=item)
    with pytest.raises(ValidationError):
        WebShopState(kind="item", instruction="i")  # an item page needs its item
    with pytest.raises(ValidationError):
        WebShopState.model_validate({"kind": "search", "instruction": "i", "extra": 1})
    with pytest.raises(ValidationError):
        WebShopState(
            kind="results", instruction="i", results=(ResultRow(id="B0X", title="T", price=1.0),) * 11
        )
    with pytest.raises(ValidationError):
        WebShopState(kind="results", instruction="i", page=0)
    with pytest.raises(ValidationError):
        item.title = "other"  # states are immutable (the env shares their parts)


def test_results_navigation_follows_page_and_total():
    row = ResultRow(id="B0X", title="T", price=2.5)
    first = render(WebShopState(kind="results", instruction="i", query="q", page=1, total=12, results=(row,)))
    assert first.split("\n")[0] == 'WebShop | results | query "q" | page 1 of 2 | 12 results'
    assert first.split("\n")[2] == "[Back to Search] [Next >]" and first.endswith("[B0X] T | $2.50")
    beyond = render(WebShopState(kind="results", instruction="i", query="q", page=3, total=12))
    assert beyond.split("\n")[2:] == [
        "[Back to Search] [< Prev] [Next >]"
    ]  # results_page.html: Next > always
    none = render(WebShopState(kind="results", instruction="i", query="q", total=0))
    assert none.split("\n")[2:] == ["[Back to Search] [Next >]", "No products match the query."]


# -- the domain -----------------------------------------------------------------------------------


def test_domain_structured_members():
    assert DOMAIN.state_schema is WebShopState
    for task in [*DOMAIN.tasks("train")[:200], *DOMAIN.tasks("test")[:50], DOMAIN.make_task("a red mug")]:
        state = DOMAIN.initial_abstract_state(task)
        assert state.kind == "search" and DOMAIN.render_state(state) == task.initial_state
    env = WebShopRefEnv()
    _, info = env.reset(seed=1)
    _, *_, info = env.step("search[shirt]")
    assert DOMAIN.render_state(info["abstract_state"]) == env.state


def test_rubric_is_none_off_purchases_and_without_goal():
    env = WebShopRefEnv()
    _, info = env.reset(seed=0)
    task = info["task"]
    assert DOMAIN.rubric_reward(task, info["abstract_state"], BUY) is None
    env.step("search[shirt]")
    _, *_, info = env.step(env.admissible_actions()[-1])
    assert info["abstract_state"].kind == "item"
    assert DOMAIN.rubric_reward(task, info["abstract_state"], BUY) is None
    _, *_, info = env.step("click[Buy Now]")
    done = info["abstract_state"]
    assert DOMAIN.rubric_reward(task, done, BUY) == float(info["won"])
    free = DOMAIN.make_task(task.instruction)
    assert DOMAIN.rubric_reward(free, done, BUY) is None
    assert (
        DOMAIN.rubric_reward(
            Task(id="t", domain="webshop", instruction="x", initial_state="", metadata={"goal": "junk"}),
            done,
            BUY,
        )
        is None
    )


def test_rubric_scores_the_state_not_the_catalog():
    """A purchase the model describes differently is scored as described."""
    env = WebShopRefEnv(split="test")
    task = env.tasks[0]
    goal = Goal.of_task(task)
    product = env.catalog.by_id[goal.target_id]
    selection = tuple((o.label, goal.options.get(o.label, o.values[0])) for o in product.options)
    done = state_of_page(Page("done", item=product.index, selection=selection), task.instruction, env.catalog)
    assert done.item is not None
    assert DOMAIN.rubric_reward(task, done, BUY) == 1.0
    expensive = done.model_copy(update={"item": done.item.model_copy(update={"price": goal.price_upper + 1})})
    assert DOMAIN.rubric_reward(task, expensive, BUY) == 0.0
    assert DOMAIN.rubric_reward(task, done.model_copy(update={"selected": ()}), BUY) == (
        0.0 if goal.options else 1.0
    )
    other = done.item.model_copy(update={"type": "garden hose", "category": "nowhere", "title": "Hose"})
    assert DOMAIN.rubric_reward(task, done.model_copy(update={"item": other}), BUY) == 0.0
    score = score_state(done, goal)
    assert (
        score is not None and score.won and score_state(env.reset(seed=0)[1]["abstract_state"], goal) is None
    )


def purchases(seen: list[tuple[str, dict[str, Any]]]) -> list[tuple[float | None, bool, float, float]]:
    """(rubric reward, env's won, env's score, the state's score) of every purchase.

    The rubric's score (``reward="score"``) is checked against the state's on the way.
    """
    out = []
    for _, info in seen:
        state = info["abstract_state"]
        if info.get("action_valid") and state.kind == "done":
            score = score_state(state, Goal.of_task(info["task"]))
            assert score is not None
            assert DOMAIN.rubric_reward(info["task"], state, BUY, "score") == score.value
            out.append(
                (DOMAIN.rubric_reward(info["task"], state, BUY), info["won"], info["score"], score.value)
            )
    return out


def test_rubric_equals_won_on_expert_episodes(episodes):
    bought = purchases(play(make_policy("expert", DOMAIN), 100, seed=1_000))
    assert len(bought) == 100
    assert all(reward == float(won) for reward, won, _, _ in bought)
    assert all(env_score == state_score for _, _, env_score, state_score in bought)


def test_rubric_agrees_with_won_on_random_purchases():
    seen = play(RandomBuyer(seed=0), 200, seed=2_000)
    seen += play(make_policy("noisy", DOMAIN, seed=9, epsilon=0.3), 100, seed=3_000)
    bought = purchases(seen)
    agree = sum(reward == float(won) for reward, won, _, _ in bought)
    wins = sum(won for _, won, _, _ in bought)
    print(f"\nrubric agrees with won on {agree}/{len(bought)} purchases ({wins} won)")
    assert len(bought) >= 250 and 0 < wins < len(bought)
    assert agree / len(bought) >= 0.99
    assert all(env_score == state_score for _, _, env_score, state_score in bought)


def test_an_item_page_without_its_item_fails_the_json_schema_so_the_backend_reasks():
    import json

    from dreamgym_env.envs.registry import get_domain
    from dreamgym_env.experience.parsing import OutputParseError, parse_transition

    domain = get_domain("webshop")
    task = domain.tasks("test")[0]
    answer = {
        "reasoning": "x",
        "next_state": {"kind": "item", "instruction": task.instruction},
        "reward": 0,
        "done": False,
    }
    with pytest.raises(OutputParseError, match="'item' is a required property"):
        parse_transition(json.dumps(answer), None, domain.state_json_schema)


def test_the_synthetic_env_pays_the_kind_of_rubric_reward_the_reference_env_pays():
    """Oracle transitions, rubric ``score``: every episode's reward is the score-mode reference env's."""
    model = OracleExperienceModel(DOMAIN)
    synthetic = DreamEnv(DOMAIN, model, max_steps=15, state_mode="structured", reward_mode="rubric", rubric="score")
    reference = DOMAIN.make_reference_env(split="train", max_steps=15, reward="score")
    policy = make_policy("noisy", DOMAIN, seed=0, epsilon=0.5)  # purchases of partly fitting items
    partial = 0
    for task in DOMAIN.tasks("train")[:12]:
        observation, info = synthetic.reset(options={"task": task})
        reference.reset(options={"task": task})
        done = False
        while not done:
            action = policy(observation, info)
            observation, reward, terminated, truncated, info = synthetic.step(action)
            _, real_reward, real_terminated, _, _ = reference.step(action)
            assert (reward, terminated) == (real_reward, real_terminated)
            done = terminated or truncated
        partial += terminated and 0 < reward < 1 and info["reward_source"] == "rubric"
    assert partial > 0
    with pytest.raises(ConfigurationError, match="rubric must be one of"):
        DreamEnv(DOMAIN, model, state_mode="structured", reward_mode="rubric", rubric="points")  # type: ignore[arg-type]
