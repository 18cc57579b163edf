"""What the seeded sites fix for a synthetic WebArena request: the next page and the evaluator's checks at stop."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from pydantic import BaseModel

from dreamgym_env.bench.fidelity import ReferenceTransition
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.webarena.reference_env import WebArenaRefEnv
from dreamgym_env.envs.webarena.state import TabHistory, WebArenaState
from dreamgym_env.training.dataset import policy_transitions
from dreamgym_env.types import Task

domain = get_domain("webarena")


def _given(task: Task, state: BaseModel, action: str) -> dict[str, Any]:
    """The fields the sites fix in the next page of ``action`` on the abstract ``state``."""
    return domain.answer_fields(state.model_dump_json(), action, task)["given_fields"]


def _world(task: Task, state: str, action: str) -> tuple[str, ...]:
    """The world lines a request for ``action`` on ``state`` (a page's JSON or text) shows."""
    return tuple(domain.answer_fields(state, action, task)["world"])


@cache
def _transitions(policy: str) -> list[ReferenceTransition]:
    return policy_transitions(domain, "test", policy, 300, seed=3)


def test_the_given_page_is_the_reference_envs_next_page():
    """Where a request is given the next page and the episode's changes, they are the reference env's."""
    given = wrong = 0
    for policy in ("expert", "noisy", "random"):
        for transition in _transitions(policy):
            request = transition.request
            if not request.given_fields:
                continue
            after = json.loads(transition.truth.next_state)
            # the JSON leaves out false flags and an empty message
            after = {"more_above": False, "more_below": False, "message": "", "changes": [], **after}
            given += 1
            wrong += any(after[name] != value for name, value in request.given_fields.items())
    # of 900: the history's and the tabs' pages are given too; a few scrolled pages are not read back
    assert given > 890
    assert wrong == 0


def test_a_page_the_episode_changed_is_given():
    env = WebArenaRefEnv(split="test")
    task = next(t for t in env.tasks if t.metadata["eval"].get("program", {}).get("check") == "cart_contains")
    observation, info = env.reset(options={"task": task})
    expert = domain.expert_policy()
    pages = []
    while True:
        action = expert(observation, info)
        pages.append((env.abstract_state, action))
        if action.startswith("stop"):
            break
        observation, _, _, _, info = env.step(action)
    start, first = pages[0]
    assert _given(task, start, first)["url"].startswith("http://shopping.local/")
    # the cart's count on the page after adding the item is the episode's: its changes rebuild it
    changed, stop = pages[-1]
    assert "My Cart (1)" in json.dumps(changed.model_dump()) and changed.changes[0].startswith("cart [")
    home = next(e.id for e in changed.elements if e.role == "link" and e.name == "One Stop Market")
    env.step(f"click [{home}]")
    given = _given(task, changed, f"click [{home}]")
    assert given == env.abstract_state.model_dump() and given["changes"] == changed.changes
    # without its changes the page is not the sites' (no item in the seeded cart), and unreadable ones give nothing
    for changes in ([], ["cart [1]"], ["refund [3, 1]"]):
        page = changed.model_copy(update={"changes": changes})
        assert _given(task, page, f"click [{home}]") == {}
    # a stop keeps any page
    assert _given(task, changed, stop) == changed.model_dump()


def _given_along(env: WebArenaRefEnv, actions: list[str]) -> list[WebArenaState]:
    """The reference env's page after each action, checking that the domain gives exactly it from the page before."""
    pages = []
    for action in actions:
        before = env.abstract_state
        _, _, _, _, info = env.step(action)
        assert info["action_valid"], (action, info)
        given = _given(env.task, before, action)
        assert given == env.abstract_state.model_dump(), action
        pages.append(env.abstract_state)
    return pages


def test_go_back_on_the_first_page_keeps_it_and_go_forward_returns():
    env = WebArenaRefEnv(split="test")
    env.reset(seed=0)
    start = env.abstract_state
    assert start.history == [TabHistory(urls=[start.url])]
    back, clicked, back_again, forward = _given_along(env, ["go_back", "click [14]", "go_back", "go_forward"])
    assert back == start  # Playwright's page.go_back() with no page before does nothing
    assert back_again.url == start.url and back_again.history[0].index == 0
    assert forward.url == clicked.url and forward.history == clicked.history


def test_the_tabs_round_trip_lands_each_tab_on_its_site(task_of):
    env = WebArenaRefEnv(split="test")
    env.reset(options={"task": task_of("gitlab.stars")})
    actions = ["new_tab", "goto [map.local/search?q=park]", "tab_focus [0]", "tab_focus [1]", "go_back"]
    actions += ["go_forward", "tab_focus [0]", "close_tab", "goto [http://reddit.local/forums]", "go_back"]
    pages = _given_along(env, actions)
    blank, park, gitlab, park_again, back_to_blank = pages[:5]
    assert blank.tabs == ["Projects · GitLab", ""] and blank.url == "about:blank"
    assert gitlab.url.startswith("http://gitlab.local/") and gitlab.active_tab == 0
    assert park_again.url == park.url == "http://map.local/search?q=park" and park_again.active_tab == 1
    assert back_to_blank.url == "about:blank"
    closed, forums, back = pages[7:]
    assert closed.tabs == ["Search | OpenStreetMap"] and closed.url == park.url
    assert back.url == park.url and back.history[0].urls[-1] == forums.url


def test_a_tab_action_the_browser_refuses_or_an_unknown_history_gets_no_page():
    env = WebArenaRefEnv(split="test")
    env.reset(seed=0)
    start = env.abstract_state
    assert _given(env.task, start, "tab_focus [3]") == {}
    # a page read from its text has no history: its tabs cannot be rebuilt
    unknown = start.model_copy(update={"history": []})
    assert _given(env.task, unknown, "go_back") == {}
    # nor from a history that does not lead to the state's page
    elsewhere = start.model_copy(update={"history": [TabHistory(urls=["http://map.local/"])]})
    assert _given(env.task, elsewhere, "go_back") == {}


def _short(line: str) -> str:
    return line.rsplit("; short of the goal: ", 1)[1]


def test_the_stop_line_finds_what_the_evaluator_finds():
    stops = [
        transition
        for policy in ("expert", "noisy", "random")
        for transition in _transitions(policy)
        if domain.parse_action(transition.request.action).verb == "stop"
    ]
    assert len(stops) > 100
    for transition in stops:
        (line,) = transition.request.world
        assert line.startswith("At stop, WebArena's evaluator checks: the ")
        assert (_short(line) == "none") == (transition.truth.reward == 1.0), line
    # a check of the sites' data is decided by the state's changes, both ways
    data = [t for t in stops if "program_state" in t.request.task.metadata["eval"]["eval_types"]]
    assert {t.truth.reward for t in data} == {0.0, 1.0}
    assert all("the sites' data must show " in t.request.world[0] for t in data)


def test_the_stop_line_names_each_check():
    task = next(t for t in domain.tasks("test") if t.metadata["eval"]["eval_types"] == ["string_match"])
    (reference,) = task.metadata["eval"]["reference_answers"]["must_include"]
    start = domain.initial_abstract_state(task).model_dump_json()
    (wrong,) = _world(task, start, "stop [nothing]")
    assert wrong.endswith(f"the answer must include {reference!r}: no; short of the goal: answer")
    (right,) = _world(task, start, f"stop [It is {reference}]")
    assert right.endswith(": yes; short of the goal: none")
    assert _world(task, start, "scroll [down]") == ()
    # in text mode too
    assert _world(task, task.initial_state, f"stop [{reference}]") == (right,)
    free = domain.make_task("What is the price of the cheapest gel pen?")
    assert _world(free, start, "stop [1]") == ()


def test_the_reference_reasoning_of_a_given_page_names_no_url():
    from dreamgym_env.training.dataset import reference_reasoning

    transition = next(t for t in _transitions("expert") if t.request.given_fields and t.request.history)
    reasoning = reference_reasoning(domain, transition.request, transition.truth)
    assert "leads to the state the environment's data gives" in reasoning
    assert "http" not in reasoning


def test_a_url_urllib_refuses_is_an_invalid_goto_and_gets_no_page():
    env = WebArenaRefEnv(split="test")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("goto [http://[x/]")
    assert not info["action_valid"] and info["error"] == "no page at http://[x/" and not terminated
    task = env.task
    assert task is not None
    broken = env.abstract_state.model_copy(update={"url": "http://[x/"})
    assert _given(task, broken, "scroll [down]") == {}


def test_the_synthetic_start_page_is_the_reference_envs_so_the_first_page_is_given():
    env = WebArenaRefEnv(split="test")
    for task in domain.tasks("test")[:20]:
        env.reset(options={"task": task})
        start = domain.initial_abstract_state(task)
        assert start == env.abstract_state and domain.render_state(start) == env.state
        assert _given(task, start, "scroll [down]") or not start.more_below


def test_the_episodes_changes_make_the_same_sites_again():
    """A fresh world given an episode's changes holds what the episode's world holds: the same changes, the same pages."""
    from dreamgym_env.envs.webarena.browser import Browser
    from dreamgym_env.envs.webarena.world import World

    env = WebArenaRefEnv(split="test")
    kinds = set()
    for task in domain.tasks("test"):
        observation, info = env.reset(options={"task": task})
        expert = domain.expert_policy()
        while not (action := expert(observation, info)).startswith("stop"):
            observation, _, _, _, info = env.step(action)
        changes = env.world.changes()
        kinds |= {line.split(" [")[0] for line in changes}
        again = World(env.data)
        again.apply(changes)
        assert again.changes() == changes
        url = env.browser.url
        assert Browser(again, url).render("axtree") == Browser(env.world, url).render("axtree")
    assert len(kinds) >= 8  # cart, orders, prices, forums, votes, comments, posts, issues, members ...
    with pytest.raises(ValueError, match=r"not a change of the sites: 'vote \[1\]'"):
        World(env.data).apply(["vote [1]"])


def test_only_stop_ends_a_synthetic_episode_and_is_paid():
    """As WebArena's run loop: a model's "done" or reward on any other action is ignored."""
    from dreamgym_env.envs.synthetic import DreamEnv
    from dreamgym_env.testing import ScriptedExperienceModel
    from dreamgym_env.types import ExperienceRequest, Transition

    def always_won(request: ExperienceRequest) -> Transition:
        return Transition(next_state=request.state, reward=1.0, terminated=True)

    task = domain.tasks("test")[0]
    env = DreamEnv("webarena", ScriptedExperienceModel(always_won), state_mode="structured")
    env.reset(options={"task": task})
    for action in ("scroll [down]", "go_back"):
        _, reward, terminated, _, info = env.step(action)
        assert not terminated and reward == 0.0 and not info["won"], action
    _, reward, terminated, _, info = env.step("stop [done]")
    assert terminated and reward == 1.0 and info["won"]


def test_go_back_after_a_click_is_the_reference_envs_page_with_the_shipped_model():
    """The model writes only the reasoning, the reward and the episode's end: the sites give the page back."""
    import gymnasium as gym

    import dreamgym_env  # noqa: F401  (registers the envs)

    env = gym.make("DreamGym/WebArena-v0")
    reference = WebArenaRefEnv()
    try:
        _, info = env.reset(seed=0)
        start, _ = reference.reset(options={"task": info["task"]})
        assert "go_back" in info["admissible_actions"]
        for action in ("click [14]", "go_back"):
            observation, reward, terminated, _, info = env.step(action)
            expected, *_ = reference.step(action)
            assert observation == expected and info["action_valid"], action
        assert observation == start and (reward, terminated) == (0.0, False)
    finally:
        env.close()
