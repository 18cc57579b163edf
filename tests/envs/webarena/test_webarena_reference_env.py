from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dreamgym_env.envs.webarena.domain import WebArenaDomain
from dreamgym_env.envs.webarena.reference_env import MAX_EPISODE_STEPS, WebArenaRefEnv
from dreamgym_env.envs.webarena.state import MORE_ABOVE, MORE_BELOW, VIEWPORT, WebArenaState, render
from dreamgym_env.errors import ConfigurationError, UnknownNameError


def test_check_env_passes():
    gym.register("Test/WebArenaRef-v0", entry_point=WebArenaRefEnv, max_episode_steps=MAX_EPISODE_STEPS)  # type: ignore[arg-type]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(gym.make("Test/WebArenaRef-v0").unwrapped, skip_render_check=True)
    finally:
        del gym.registry["Test/WebArenaRef-v0"]


def test_reset_shows_the_site_home_page_and_info(env):
    obs, info = env.reset(seed=3)
    task = info["task"]
    assert obs == task.initial_state
    assert obs.startswith("Tab 0 (current): ")
    assert obs.split("\n")[1] == "" and f"\nURL: {task.metadata['start_url']}\n" in f"{obs}\n"
    assert info["source"] == "real" and info["task_id"] == task.id and task in env.tasks
    assert "stop [<answer>]" in info["admissible_actions"]
    assert any(a.startswith("click [") for a in info["admissible_actions"])


def test_same_seed_same_task_and_episode():
    runs = []
    for _ in range(2):
        env = WebArenaRefEnv()
        obs, info = env.reset(seed=11)
        trace = [obs]
        for i in range(8):
            obs, *_ = env.step(info["admissible_actions"][i % len(info["admissible_actions"])])
            trace.append(obs)
        runs.append((info["task_id"], trace))
    assert runs[0] == runs[1]


def test_reset_restores_the_seeded_state(env, element_id, task_of):
    task = task_of("reddit.subscribe", "train")
    env.reset(options={"task": task})
    forum = task.metadata["slots"]["forum"]
    env.step(f"goto [http://reddit.local/f/{forum}]")
    env.step(f"click [{element_id(env.state, 'button', 'Subscribe')}]")
    *_, info = env.step("stop []")
    assert info["won"]
    obs, _ = env.reset(options={"task": task})
    obs, *_ = env.step(f"goto [http://reddit.local/f/{forum}]")
    assert "button 'Subscribe'" in obs


# -- one state-changing task per site, by hand ---------------------------------------------------
def _solve_shopping(env, slots, element_id):
    obs = env.state
    obs, *_ = env.step(
        f"type [{element_id(obs, 'textbox', 'Search entire store here...')}] [{slots['product']}]"
    )
    obs, *_ = env.step(f"click [{element_id(obs, 'link', slots['product'])}]")
    return env.step(f"click [{element_id(obs, 'button', 'Add to Cart')}]")


def _solve_admin(env, slots, element_id):
    obs, *_ = env.step(f"goto [http://admin.local/sales/order/{slots['order']}]")
    obs, *_ = env.step(f"click [{element_id(obs, 'combobox', 'Status')}]")
    assert "expanded: True" in obs
    obs, *_ = env.step(f"click [{element_id(obs, 'option', slots['status'])}]")
    return env.step(f"click [{element_id(obs, 'button', 'Update Status')}]")


def _solve_reddit(env, slots, element_id):
    obs, *_ = env.step(f"click [{element_id(env.state, 'link', 'Forums')}]")
    obs, *_ = env.step(f"click [{element_id(obs, 'link', slots['forum'])}]")
    obs, *_ = env.step(f"click [{element_id(obs, 'link', slots['post'])}]")
    obs, *_ = env.step(f"type [{element_id(obs, 'textbox', 'Comment')}] [{slots['comment']}] [0]")
    return env.step(f"click [{element_id(obs, 'button', 'Post')}]")


def _solve_gitlab(env, slots, element_id):
    # The project list is longer than the viewport: filter it first, as a user would.
    obs, *_ = env.step(
        f"type [{element_id(env.state, 'textbox', 'Filter by name')}] [{slots['project']}] [1]"
    )
    obs, *_ = env.step(f"click [{element_id(obs, 'link', slots['project'])}]")
    obs, *_ = env.step(f"click [{element_id(obs, 'link', 'Issues')}]")
    obs, *_ = env.step(f"click [{element_id(obs, 'link', 'New issue')}]")
    obs, *_ = env.step(f"type [{element_id(obs, 'textbox', 'Title')}] [{slots['title']}] [0]")
    return env.step(f"click [{element_id(obs, 'button', 'Create issue')}]")


@pytest.mark.parametrize(
    ("template", "solve"),
    [
        ("shopping.add_to_cart", _solve_shopping),
        ("shopping_admin.set_status", _solve_admin),
        ("reddit.comment", _solve_reddit),
        ("gitlab.new_issue", _solve_gitlab),
    ],
)
def test_state_changing_task_done_by_hand_is_won_and_left_undone_is_lost(
    env, template, solve, task_of, element_id
):
    """Only ``stop`` ends an episode, as in WebArena's run.py ``test`` loop (``action_type == STOP`` breaks it):
    the change itself gives no reward and does not terminate; the stop after it is judged."""
    task = task_of(template)
    env.reset(options={"task": task})
    obs, reward, terminated, truncated, info = solve(env, task.metadata["slots"], element_id)
    assert (reward, terminated, truncated, info["won"], info["action_valid"]) == (
        0.0,
        False,
        False,
        False,
        True,
    )
    obs, reward, terminated, truncated, info = env.step("stop []")
    assert (reward, terminated, truncated, info["won"]) == (1.0, True, False, True)
    env.reset(options={"task": task})
    obs, reward, terminated, truncated, info = env.step("stop []")
    assert (reward, terminated, info["won"]) == (0.0, True, False)


def test_map_route_answer_right_and_wrong(env, element_id, task_of):
    task = task_of("map.drive_time")
    slots = task.metadata["slots"]
    expected = task.metadata["eval"]["reference_answers"]["must_include"][0].split(" |OR| ")[0]
    for answer, won in ((expected, True), ("0:00", False)):
        obs, _ = env.reset(options={"task": task})
        obs, *_ = env.step(f"click [{element_id(obs, 'link', 'Find directions between two points')}]")
        obs, *_ = env.step(f"type [{element_id(obs, 'textbox', 'From')}] [{slots['start']}] [0]")
        obs, *_ = env.step(f"type [{element_id(obs, 'textbox', 'To')}] [{slots['end']}] [0]")
        obs, *_ = env.step(f"click [{element_id(obs, 'button', 'Go')}]")
        assert f"Time: {expected}." in obs
        obs, reward, terminated, _, info = env.step(f"stop [{answer}]")
        assert (reward, terminated, info["won"]) == (float(won), True, won)


@pytest.mark.parametrize(
    "template",
    ["shopping.price", "shopping_admin.customer_orders", "reddit.author", "gitlab.stars", "map.address"],
)
def test_info_task_scores_the_reference_answer_and_not_a_wrong_one(env, template, task_of):
    task = task_of(template)
    answers = task.metadata["eval"]["reference_answers"]
    right = answers.get("exact_match") or (answers.get("must_include") or answers.get("fuzzy_match"))[0]
    env.reset(options={"task": task})
    assert env.step(f"stop [{right}]")[1] == 1.0
    env.reset(options={"task": task})
    assert env.step("stop [zzz 999999]")[1] == 0.0


def test_navigation_task_is_judged_by_the_url_at_stop(env, element_id, task_of):
    task = task_of("shopping.category")
    obs, _ = env.reset(options={"task": task})
    assert env.step("stop []")[1] == 0.0
    env.reset(options={"task": task})
    env.step(f"click [{element_id(obs, 'link', task.metadata['slots']['category'])}]")
    assert env.step("stop []")[1] == 1.0


def test_score_mode_gives_no_partial_credit():
    """evaluation_harness/evaluators.py ``EvaluatorComb`` multiplies 0/1 scores: one of two products named scores 0 in either mode."""
    env = WebArenaRefEnv(reward="score")
    task = next(
        t
        for t in env.task_set.train
        if t.metadata["template"] == "shopping_admin.bestsellers_year"
        and len(t.metadata["eval"]["reference_answers"]["must_include"]) == 2
    )
    env.reset(options={"task": task})
    first, second = task.metadata["eval"]["reference_answers"]["must_include"]
    _, reward, _, _, info = env.step(f"stop [{first}]")
    assert reward == 0.0 and info["score"] == 0.0 and not info["won"]
    env.reset(options={"task": task})
    _, reward, _, _, info = env.step(f"stop [{second}; {first}]")
    assert reward == 1.0 and info["won"]


def test_unachievable_task_is_won_by_answering_n_a_only(env, task_of):
    """config_files/test.raw.json's unachievable tasks: ``fuzzy_match: "N/A"``, which
    evaluation_harness/evaluators.py ``StringEvaluator.__call__`` judges as an exact match of "N/A"."""
    task = task_of("shopping.price_unavailable")
    assert task.metadata["eval"]["reference_answers"] == {"fuzzy_match": "N/A"}
    for answer, reward in (("N/A", 1.0), ("", 0.0), ("0.00", 0.0)):
        env.reset(options={"task": task})
        assert env.step(f"stop [{answer}]")[1] == reward


def test_goto_lower_cases_the_host_and_url_match_then_passes(env, task_of):
    """Chromium shows a navigated URL with a lower-case host; evaluation_harness/evaluators.py
    ``URLEvaluator`` then matches it."""
    task = task_of("reddit.forum_page")
    forum = task.metadata["slots"]["forum"]
    env.reset(options={"task": task})
    obs, *_ = env.step(f"goto [http://REDDIT.Local/f/{forum}/]")
    assert env.browser.url == f"http://reddit.local/f/{forum}/"
    assert env.step("stop []")[1] == 1.0


def test_a_new_post_is_judged_by_the_content_of_the_page_at_stop(env, task_of):
    """evaluation_harness/evaluators.py ``HTMLContentEvaluator``: url ``last`` and an empty locator read the page at stop."""
    task = task_of("reddit.new_post")
    spec = task.metadata["eval"]
    assert spec["eval_types"] == ["url_match", "program_html"]
    assert spec["program_html"][0]["url"] == "last"
    title, forum = task.metadata["slots"]["title"], task.metadata["slots"]["forum"]
    env.reset(options={"task": task})
    env.step(f"goto [http://reddit.local/f/{forum}]")
    assert title not in env.page_text("last") and env.step("stop []")[1] == 0.0  # the URL alone
    from dreamgym_env.envs.webarena.expert import WebArenaExpert

    expert, (observation, info) = WebArenaExpert(), env.reset(options={"task": task})
    terminated = False
    while not terminated:
        observation, reward, terminated, _, info = env.step(expert(observation, info))
    assert title in env.page_text("last") and reward == 1.0


# -- invalid actions ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("action", "error"),
    [
        ("click [9999]", "no element [9999]"),
        ("goto [http://nowhere.local/]", "no page"),
        ("goto [http://shopping.local/product/99999]", "no page"),
        ("tab_focus [3]", "no tab 3"),
        ("dance", "unknown action"),
        ("type [1] [x]", "not a text field"),
    ],
)
def test_invalid_action_keeps_the_page_with_a_failure_line(env, action, error):
    obs, _ = env.reset(seed=0)
    after, reward, terminated, truncated, info = env.step(action)
    assert after.startswith(obs) and after.split("\n")[-1].startswith("Invalid action: ")
    assert error in info["error"]
    assert (reward, terminated, truncated, info["action_valid"]) == (0.0, False, False, False)
    again, *_ = env.step("scroll [up]")
    assert again == obs


@pytest.mark.parametrize("action", ["go_back", "go_forward"])
def test_history_moves_with_no_page_there_change_nothing(env, action):
    """WebArena's browser_env/actions.py execute_action calls Playwright's page.go_back() /
    page.go_forward(), which do nothing (and raise nothing) when there is no page to go to."""
    obs, _ = env.reset(seed=0)
    after, reward, terminated, truncated, info = env.step(action)
    assert after == obs and info["action_valid"] and "error" not in info
    assert (reward, terminated, truncated) == (0.0, False, False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.text(max_size=200), st.sampled_from(["click [\ud800]", "type [3] [\ud800] [1]", "x" * 20_000])
    )
)
def test_any_string_action_never_raises(env, action):
    env.reset(seed=1)
    obs, reward, *_ = env.step(action)
    assert isinstance(obs, str) and reward in (0.0, 1.0)


def test_non_string_actions_are_invalid(env):
    env.reset(seed=1)
    *_, info = env.step(123)  # type: ignore[arg-type]
    assert not info["action_valid"]


# -- browser ----------------------------------------------------------------------------------------
def test_tabs_history_and_scrolling(env, task_of):
    env.reset(options={"task": task_of("gitlab.stars")})
    obs, *_ = env.step("new_tab")
    assert obs.startswith(
        "Tab 0: Projects · GitLab | Tab 1 (current): \n\n[1] RootWebArea '' focused: True"
    )  # about:blank
    obs, *_ = env.step("goto [map.local/search?q=park]")
    assert "link 'Schenley Park'" in obs
    obs, *_ = env.step("tab_focus [0]")
    assert "URL: http://gitlab.local/" in obs
    obs, *_ = env.step("close_tab")
    assert obs.startswith("Tab 0 (current): Search | OpenStreetMap")
    env.step("goto [http://reddit.local/forums]")
    obs, *_ = env.step("go_back")
    assert "URL: http://map.local/search?q=park" in obs
    obs, *_ = env.step("go_forward")
    assert "URL: http://reddit.local/forums" in obs
    env.step("goto [http://admin.local/sales/order]")
    top = env.state
    obs, *_ = env.step("scroll [down]")
    assert obs != top and "[1] RootWebArea" in obs
    assert env.step("scroll [up]")[0] == top


def test_a_page_longer_than_the_viewport_says_so_and_scrolls(env, task_of):
    obs, info = env.reset(options={"task": task_of("gitlab.stars")})  # the code host's 101 projects
    elements = env.abstract_state.elements
    assert len(elements) == VIEWPORT + 1 and obs.endswith(MORE_BELOW) and MORE_ABOVE not in obs
    assert "scroll [down]" in info["admissible_actions"] and "scroll [up]" not in info["admissible_actions"]
    first_hidden = elements[-1].id + 1
    obs, *_, info = env.step("scroll [down]")
    state = env.abstract_state
    assert (state.more_above, state.more_below) == (True, True)
    assert f"[{first_hidden}] " in obs and "[2] " not in obs  # scrolled by less than a viewport: none skipped
    # the synthetic env reads the same scrolls from the observation text
    assert WebArenaDomain().admissible_actions(obs) == [
        *info["admissible_actions"][:-1],
        "go_back",
        "stop [<answer>]",
    ]


def test_ids_are_stable_for_the_same_page(env, task_of):
    env.reset(options={"task": task_of("reddit.author")})
    first, *_ = env.step("goto [http://reddit.local/f/books]")
    env.step("goto [http://reddit.local/forums]")
    assert env.step("go_back")[0] == first


def test_typing_shows_the_value_and_focus(env, element_id, task_of):
    obs, _ = env.reset(options={"task": task_of("map.address")})
    box = element_id(obs, "textbox", "Search")
    obs, *_ = env.step(f"type [{box}] [Frick] [0]")
    assert f"[{box}] textbox 'Search' focused: True required: False value: Frick" in obs
    obs, *_ = env.step("press [Enter]")
    assert "link 'Frick Park'" in obs


def test_abstract_state_renders_the_observation_and_round_trips(task_of):
    for mode in ("axtree", "compact"):
        env = WebArenaRefEnv(observation=mode)
        env.reset(options={"task": task_of("shopping.price")})
        env.step("click [9999]")
        state = env.abstract_state
        assert render(state, mode) == env.state
        assert WebArenaState.model_validate_json(state.model_dump_json()) == state


def test_compact_mode_lists_interactive_elements_only(task_of):
    env = WebArenaRefEnv(observation="compact")
    obs, _ = env.reset(options={"task": task_of("shopping.price")})
    assert obs.startswith("URL: http://shopping.local/\nTabs: [0] One Stop Market (current)")
    assert "[3] link: One Stop Market" in obs and "listitem" not in obs and "RootWebArea" not in obs


def test_replay_is_deterministic_and_max_steps_truncates(task_of):
    env = WebArenaRefEnv(max_steps=3)
    task = task_of("gitlab.star")
    actions = ["click [3]", "scroll [down]", "hover [3]", "click [3]"]
    first = env.replay_until_end(task, actions)  # the fourth action comes after the truncation
    second = env.replay_until_end(task.id, actions)
    assert first[0] == second[0] and first[1]["task_id"] == task.id
    with pytest.raises(ConfigurationError, match="ended after 3 of 4"):
        env.replay(task, actions)  # replay takes every action or raises
    env.reset(options={"task": task})
    results = [env.step("hover [3]") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    with pytest.raises(ConfigurationError):
        env.step("hover [3]")


def test_sites_restrict_the_tasks_and_bad_arguments_raise():
    env = WebArenaRefEnv(split="test", sites=("map",))
    assert env.tasks and all(t.metadata["site"] == "map" for t in env.tasks)
    with pytest.raises(UnknownNameError):
        WebArenaRefEnv(sites=("facebook",))
    with pytest.raises(ConfigurationError):
        WebArenaRefEnv(observation="pixels")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        WebArenaRefEnv(reward="dense")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        env.reset(options={"task": "Buy a phone please"})
    with pytest.raises(UnknownNameError):
        env.reset(options={"task": "webarena-nope"})
    with pytest.raises(ConfigurationError):
        env.restore(env.tasks[0], env.tasks[0].initial_state)


def test_the_answer_schema_bounds_a_page_and_every_page_of_the_sites_fits(env):
    from jsonschema import Draft202012Validator

    from dreamgym_env.envs.webarena.expert import WebArenaExpert
    from dreamgym_env.envs.webarena.state import Element, TabHistory

    validator = Draft202012Validator(WebArenaState.model_json_schema())
    env.reset(options={"task": env.tasks[0]})
    page = env.abstract_state
    assert validator.is_valid(page.model_dump(mode="json"))
    # what a small model writes when it loops: more elements than a viewport, an endless name
    looping = page.model_copy(
        update={"elements": [Element(id=i, role="link", name="x") for i in range(VIEWPORT + 2)]}
    )
    assert not validator.is_valid(looping.model_dump(mode="json"))
    endless = page.model_copy(update={"elements": [Element(id=1, role="RootWebArea", name="x" * 201)]})
    assert not validator.is_valid(endless.model_dump(mode="json"))
    # and a history copied on and on
    copied = page.model_copy(update={"history": [TabHistory(urls=[page.url] * 33)]})
    assert not validator.is_valid(copied.model_dump(mode="json"))
    seen = 0
    for task in env.tasks[::4]:  # every site: the expert's pages, scrolled ones included
        observation, info = env.reset(options={"task": task})
        expert, terminated = WebArenaExpert(), False
        while not terminated:
            assert validator.is_valid(env.abstract_state.model_dump(mode="json")), env.state
            seen += 1
            observation, _, terminated, truncated, info = env.step(expert(observation, info))
            terminated = terminated or truncated
    assert seen > 100
