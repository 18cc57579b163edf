from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from dreamgym_env.envs.webshop.domain import WebShopDomain
from dreamgym_env.envs.webshop.goal import Goal
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.errors import ConfigurationError, UnknownNameError
from dreamgym_env.types import Task

DOMAIN = WebShopDomain()


@pytest.fixture
def env() -> WebShopRefEnv:
    """An env that shows the Markov page text (its state), the format these tests pin."""
    return WebShopRefEnv(split="test", observation_mode="pages")


def first_task(env: WebShopRefEnv) -> Task:
    return env.tasks[0]


def open_target(env: WebShopRefEnv) -> tuple[Goal, str]:
    """Search with the goal's type and open the target product's page; returns the goal and page."""
    task = first_task(env)
    goal = Goal.of_task(task)
    env.reset(options={"task": task})
    product = env.catalog.by_id[goal.target_id]
    obs, *_ = env.step(f"search[{product.title}]")
    assert f"[{product.id}]" in obs
    obs, reward, terminated, truncated, info = env.step(f"click[{product.id}]")
    assert obs.startswith(f"WebShop | item {product.id}") and info["action_valid"]
    return goal, obs


def test_check_env_passes():
    gym.register("Test/WebShopRef-v0", entry_point=WebShopRefEnv, max_episode_steps=15)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(gym.make("Test/WebShopRef-v0").unwrapped)
    finally:
        del gym.registry["Test/WebShopRef-v0"]


def test_reset_shows_the_search_page_and_info(env):
    obs, info = env.reset(seed=3)
    assert obs == info["task"].initial_state
    assert obs.startswith("WebShop | search\nInstruction: ")
    assert info["source"] == "real" and info["task_id"] == info["task"].id
    assert info["admissible_actions"] == ["search[<query>]"]
    assert info["task"] in env.tasks


def test_same_seed_same_task_and_episode(env):
    other = WebShopRefEnv(split="test", observation_mode="pages")
    actions = ["search[yoga mat]", "click[Next >]", "click[< Prev]", "click[Buy Now]", "click[nowhere]"]
    for seed in (0, 1, 2):
        a, b = env.reset(seed=seed), other.reset(seed=seed)
        assert a[0] == b[0]
        for action in actions:
            ra, rb = env.step(action), other.step(action)
            assert ra[:4] == rb[:4] and ra[4]["admissible_actions"] == rb[4]["admissible_actions"]


def test_search_results_and_pagination(env):
    env.reset(options={"task": first_task(env)})
    obs, reward, terminated, truncated, info = env.step("search[Black  WATERPROOF]")
    assert obs.split("\n")[0] == 'WebShop | results | query "black waterproof" | page 1 of 5 | 50 results'
    assert info["admissible_actions"][:2] == ["click[Back to Search]", "click[Next >]"]
    assert len(info["admissible_actions"]) == 12 and (reward, terminated) == (0.0, False)
    page_one = obs
    obs, *_ = env.step("click[next >]")  # labels are case-insensitive
    assert "| page 2 of 5 |" in obs and "[< Prev] [Next >]" in obs
    for _ in range(3):
        obs, *_ = env.step("click[Next >]")
    assert "| page 5 of 5 |" in obs and "[< Prev] [Next >]" in obs  # results_page.html always has Next >
    obs, reward, terminated, truncated, info = env.step("click[Next >]")
    assert (
        info["action_valid"]
        and "| page 6 of 5 |" in obs
        and obs.endswith("[Back to Search] [< Prev] [Next >]")
    )
    for _ in range(5):
        obs, *_ = env.step("click[< Prev]")
    assert obs == page_one
    obs, *_ = env.step("click[Back to Search]")
    assert obs == first_task(env).initial_state


def test_item_page_options_sub_pages_and_back(env):
    goal, item_page = open_target(env)
    product = env.catalog.by_id[goal.target_id]
    assert "Selected: none" in item_page
    assert f"Price: ${product.price:.2f} | Rating: {product.rating:.1f} stars" in item_page
    first, second = product.options[0].values[:2]
    obs, *_ = env.step(f"click[{first}]")
    assert f"Selected: {product.options[0].label}={first}" in obs
    obs, *_ = env.step(f"click[{second.upper()}]")  # a new click replaces the group's value
    assert f"Selected: {product.options[0].label}={second}\n" in obs
    for label, kind in (("Description", "description"), ("Features", "features"), ("Reviews", "reviews")):
        sub, _, _, _, info = env.step(f"click[{label}]")
        assert sub.startswith(f"WebShop | {kind} {product.id} |")
        assert f"Selected: {product.options[0].label}={second}" in sub
        assert info["admissible_actions"] == ["click[Back to Search]", "click[< Prev]"]
        back, *_ = env.step("click[< Prev]")
        assert back == obs
    results, *_ = env.step("click[< Prev]")
    assert results.startswith("WebShop | results | query ")
    assert f"[{product.id}]" in results


def test_buy_now_scores_the_purchase(env):
    goal, _ = open_target(env)
    for value in goal.options.values():
        env.step(f"click[{value}]")
    obs, reward, terminated, truncated, info = env.step("click[Buy Now]")
    assert obs.startswith("WebShop | done") and f"Purchased {goal.target_id} with " in obs
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["won"] and info["score"] == 1.0 and info["admissible_actions"] == []
    with pytest.raises(ConfigurationError):
        env.step("click[Back to Search]")


def test_partial_purchase_outcome_and_score_rewards():
    for mode, expected in (("outcome", 0.0), ("score", None)):
        env = WebShopRefEnv(split="test", reward=mode, observation_mode="pages")
        goal, _ = open_target(env)
        obs, reward, terminated, _, info = env.step("click[Buy Now]")  # no options selected
        assert terminated and not info["won"] and 0.0 < info["score"] < 1.0
        assert info["score"] == pytest.approx(
            (len(goal.attributes) + 1) / (len(goal.attributes) + len(goal.options) + 1)
        )
        assert reward == (expected if expected is not None else info["score"])
        assert "with no options" in obs


@pytest.mark.parametrize(
    ("action", "error"),
    [
        ("click[B0NOTHERE1]", 'there is no "B0NOTHERE1" to click on this page'),
        ("click[Search]", 'there is no "Search" to click on this page'),
        ("click[ Next > ]", 'there is no " Next > " to click on this page'),
        ("buy the first one", "expected search[query] or click[label]"),
        ("click[]", "expected search[query] or click[label]"),
        ("Click[Next >]", "expected search[query] or click[label]"),
        ("click [Next >]", "expected search[query] or click[label]"),
        ("click[x][Next >]", "expected search[query] or click[label]"),
    ],
)
def test_invalid_actions_leave_the_page(env, action, error):
    r"""``WebAgentTextEnv.step`` (web_agent_site/envs/web_agent_text_env.py): an action that is no search
    and no click on a clickable of the page "performs nothing", the page is unchanged; the grammar is
    ``parse_action`` of engine/engine.py (``(.+)\[(.+)\]``, exact lower-case verbs)."""
    env.reset(options={"task": first_task(env)})
    page, *_ = env.step("search[yoga mat]")
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs == page
    assert (reward, terminated, info["action_valid"], info["error"]) == (0.0, False, False, error)
    assert env.state == page
    assert env.step("click[Next >]")[4]["action_valid"]  # the page still works


def test_search_works_on_every_page_and_text_after_the_bracket_is_ignored(env):
    """``WebAgentTextEnv.step`` runs ``search[...]`` whatever the page (only ``get_available_actions``
    reports the search bar); ``parse_action``'s ``re.match`` ignores text after the closing bracket."""
    env.reset(options={"task": first_task(env)})
    results, *_ = env.step("search[yoga mat]")
    env.step(f"click[{env.admissible_actions()[2][6:-1]}]")
    obs, _, _, _, info = env.step("search[Yoga Mat]")  # from an item page; the query is lower-cased
    assert info["action_valid"] and obs == results
    assert "search[<query>]" not in info["admissible_actions"]
    assert env.step("click[Next >] please")[4]["action_valid"]


def test_non_string_action_is_invalid(env):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(123)  # type: ignore[arg-type]
    assert not info["action_valid"] and reward == 0.0


def test_max_steps_truncates():
    env = WebShopRefEnv(max_steps=2)
    env.reset(seed=0)
    assert env.step("nonsense")[3] is False
    assert env.step("nonsense")[3] is True


def test_admissible_actions_and_validation_agree_with_the_domain(env):
    from dreamgym_env.agents import RandomPolicy

    policy = RandomPolicy(seed=5)
    for episode in range(20):
        obs, info = env.reset(seed=episode)
        for _ in range(15):
            assert info["admissible_actions"] == DOMAIN.admissible_actions(env.state)
            action = policy(obs, info)
            assert DOMAIN.validate_action(DOMAIN.parse_action(action), env.state) is None  # type: ignore[arg-type]
            obs, _, terminated, _, info = env.step(action)
            assert info["action_valid"]
            if terminated:
                break


def test_restore_continues_from_a_page(env):
    goal, item_page = open_target(env)
    task = first_task(env)
    other = WebShopRefEnv(split="test")  # the default real text: restored from the Markov state
    other.restore(task, item_page)
    assert other.state == item_page
    assert other.step("click[Features]")[4]["state"] == env.step("click[Features]")[0]
    with pytest.raises(ConfigurationError):
        other.restore(task, item_page.replace("Selected: none", "Selected: size=enormous"))
    with pytest.raises(ConfigurationError):
        other.restore(task, "not a page")


def test_a_failed_restore_leaves_the_env_where_it_was(env):
    task = first_task(env)
    env.reset(options={"task": task})
    results = env.step("search[resistance bands]")[4]["state"]
    other = WebShopRefEnv(split="test")
    other.reset(options={"task": task})
    searched = other.step("search[camping tent]")[4]["state"]
    # the rows of one query under another's header: parsed and reachable, but not what renders
    mislabelled = results.replace('query "resistance bands"', 'query "face moisturizer"')
    assert mislabelled != results
    with pytest.raises(ConfigurationError, match="does not match"):
        other.restore(task, mislabelled)
    assert other.state == searched
    assert other.step("click[Next >]")[4]["state"].startswith('WebShop | results | query "camping tent" | page 2')


def test_task_resolution(env):
    task = first_task(env)
    assert env.reset(options={"task": task.id})[1]["task"] is task
    train_id = env.task_set.train[0].id
    assert env.reset(options={"task": train_id})[1]["task_id"] == train_id
    with pytest.raises(UnknownNameError, match="Did you mean"):
        env.reset(options={"task": task.id[:-1] + "x"})
    with pytest.raises(ConfigurationError, match="free instructions"):
        env.reset(options={"task": "i need red shoes"})
    with pytest.raises(ConfigurationError, match="belongs to catalog"):
        env.reset(
            options={"task": task.model_copy(update={"metadata": {**task.metadata, "catalog_seed": 9}})}
        )
    with pytest.raises(ConfigurationError):
        env.reset(options={"task": 42})


def test_bad_arguments():
    with pytest.raises(ConfigurationError):
        WebShopRefEnv(reward="shaped")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        WebShopRefEnv(max_steps=0)
    with pytest.raises(ConfigurationError):
        WebShopRefEnv(render_mode="rgb_array")


def test_render_modes(capsys):
    env = WebShopRefEnv(render_mode="ansi")
    obs, _ = env.reset(seed=0)
    assert env.render() == obs
    env = WebShopRefEnv(render_mode="human")
    obs, _ = env.reset(seed=0)
    env.render()
    assert obs in capsys.readouterr().out


@settings(max_examples=200, deadline=None)
@given(action=st.text(max_size=80) | st.builds(lambda s: f"click[{s}]", st.text(max_size=20)))
def test_any_string_never_raises(action):
    env = WebShopRefEnv(split="test")
    env.reset(seed=0)
    env.step("search[shirt]")
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and reward in (0.0, 1.0)
    assert info["state"] == env.state
    assert info["action_valid"] or obs == env.observation
