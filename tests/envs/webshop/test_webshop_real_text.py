"""Pages as WebShop's text env prints them: ``WebAgentTextEnv.convert_html_to_text(html, simple=True)``
(web_agent_site/envs/web_agent_text_env.py, princeton-nlp/WebShop 64fa2a5) over web_agent_site/templates/."""

from __future__ import annotations

import pytest

from dreamgym_env.agents import make_policy
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.real_text import price_tag, real_text
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.envs.webshop.state import Choice, Item, OptionGroup, ResultRow, WebShopState
from dreamgym_env.errors import ConfigurationError

ASK = "i need a yoga mat"
MAT = Item(
    id="B0MAT00001",
    title="Aerolite Yoga Mat - Non Slip, Latex Free",
    price=25.5,
    rating=4.2,
    brand="Aerolite",
    category="sports",
    type="yoga mat",
    attrs=("non slip", "latex free"),
    options=(
        OptionGroup(name="color", values=("black", "navy blue")),
        OptionGroup(name="thickness", values=("6mm",)),
    ),
)
HEAD = f"Instruction: [SEP] {ASK} [SEP] Back to Search [SEP] < Prev [SEP] "


def test_search_page():
    """search_page.html: the logo, the instruction heading split at its <br>, the Search button."""
    state = WebShopState(kind="search", instruction=ASK)
    assert real_text(state) == f"WebShop [SEP] Instruction: [SEP] {ASK} [SEP] Search"


def test_results_pages():
    """results_page.html: 'Page p (Total results: n)', '< Prev' from page 2, 'Next >' on every page, rows."""
    rows = (
        ResultRow(id="B0MAT00001", title=MAT.title, price=25.5),
        ResultRow(id="B0MAT00002", title="Mat", price=100),
    )
    first = WebShopState(kind="results", instruction=ASK, query="yoga mat", page=1, total=12, results=rows)
    assert real_text(first) == (
        f"Instruction: [SEP] {ASK} [SEP] Back to Search [SEP] Page 1 (Total results: 12) [SEP] Next > "
        f"[SEP] B0MAT00001 [SEP] {MAT.title} [SEP] $25.5 [SEP] B0MAT00002 [SEP] Mat [SEP] $100.0"
    )
    last = first.model_copy(update={"page": 2, "results": ()})
    assert real_text(last) == (
        f"Instruction: [SEP] {ASK} [SEP] Back to Search [SEP] Page 2 (Total results: 12) [SEP] < Prev [SEP] Next >"
    )


def test_item_page():
    """item_page.html: option names and values (left column) before title, price, rating and the buttons; no selection."""
    state = WebShopState(
        kind="item", instruction=ASK, item=MAT, selected=(Choice(group="color", value="black"),)
    )
    assert real_text(state) == HEAD + (
        f"color [SEP] black [SEP] navy blue [SEP] thickness [SEP] 6mm [SEP] {MAT.title} [SEP] Price: $25.5 "
        "[SEP] Rating: 4.2 [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now"
    )


def test_description_features_and_reviews_pages():
    """description_page.html (the paragraph), features_page.html (each bullet point), review_page.html
    ('"title"', score, body per review)."""
    description = WebShopState(kind="description", instruction=ASK, item=MAT, text=("A mat. It is light.",))
    assert real_text(description) == HEAD + "A mat. It is light."
    features = WebShopState(kind="features", instruction=ASK, item=MAT)
    assert (
        real_text(features) == HEAD + "brand: Aerolite [SEP] category: sports [SEP] non slip [SEP] latex free"
    )
    reviews = WebShopState(kind="reviews", instruction=ASK, item=MAT, text=("Sam (4 stars): Good value.",))
    assert real_text(reviews) == HEAD + '"Sam" [SEP] 4 [SEP] Good value.'


def test_done_page():
    """done_page.html as SimServer.done renders it: the hidden purchase/target blocks print, unset fields
    as 'None' or nothing; options as sorted JSON; the score as Python prints the float."""
    state = WebShopState(
        kind="done",
        instruction=ASK,
        item=MAT,
        selected=(Choice(group="thickness", value="6mm"), Choice(group="color", value="black")),
    )
    assert real_text(state, 2 / 3) == (
        "Thank you for shopping with us! [SEP] Your code: [SEP] None [SEP] (Paste it in your MTurk interface.) "
        '[SEP] Purchased [SEP] asin [SEP] B0MAT00001 [SEP] options [SEP] {"color": "black", "thickness": "6mm"} '
        "[SEP] attrs [SEP] None [SEP] category [SEP] None [SEP] query [SEP] None [SEP] product category [SEP] None "
        "[SEP] Target [SEP] asin [SEP] options [SEP] attrs [SEP] price upper [SEP] instuction text [SEP] category "
        "[SEP] product category [SEP] query [SEP] Goal [SEP] None [SEP] Reward [SEP] Your score (min 0.0, max 1.0) "
        "[SEP] 0.6666666666666666 [SEP] Reward Details [SEP] None"
    )


def test_price_tag_is_the_float_as_python_prints_it():
    """engine.load_products: ``price_tag = f"${pricing[0]}"`` of a float."""
    assert (price_tag(35.99), price_tag(35.5), price_tag(100)) == ("$35.99", "$35.5", "$100.0")


def test_env_in_text_mode_prints_the_real_pages_and_next_always_works():
    """SimServer.receive: 'Next >' on a results page always turns the page, past the last one to an empty page."""
    env = WebShopRefEnv(split="test", observation_mode="text")
    obs, info = env.reset(seed=0)
    assert obs.startswith("WebShop [SEP] Instruction: [SEP] ") and obs.endswith(" [SEP] Search")
    obs, *_ = env.step("search[yoga mat]")
    total = int(obs.split("(Total results: ")[1].split(")")[0])
    for page in range(2, total // 10 + 3):
        obs, _, _, _, info = env.step("click[next >]")
        assert (
            info["action_valid"] and f"Page {page} (Total results: {total}) [SEP] < Prev [SEP] Next >" in obs
        )
    assert obs.endswith("[SEP] Next >")  # past the last page: no products
    assert env.restorable  # from the Markov text in info["state"], not from the real text
    env.restore(info["task"], info["state"])
    assert env.observation == obs
    with pytest.raises(ConfigurationError, match="continue from"):
        env.restore(info["task"], obs)
    with pytest.raises(ConfigurationError, match="observation_mode"):
        WebShopRefEnv(observation_mode="html")  # type: ignore[arg-type]


def test_env_in_text_mode_done_page_shows_the_score():
    """SimServer.done renders the reward get_reward computed into done_page.html."""
    env = WebShopRefEnv(split="test", observation_mode="text")
    obs, info = env.reset(seed=0)
    env.step("search[yoga mat]")
    item = env.admissible_actions()[2]
    env.step(item)
    obs, reward, terminated, _, info = env.step("click[Buy Now]")
    assert terminated and obs.startswith("Thank you for shopping with us! [SEP] ")
    assert obs.endswith(
        f"[SEP] Your score (min 0.0, max 1.0) [SEP] {info['score']} [SEP] Reward Details [SEP] None"
    )


def test_the_default_observation_is_the_real_text_and_info_state_the_markov_page():
    """web_agent_text_env.py WebAgentTextEnv.observation in 'text' mode is what both WebShop ids show the agent."""
    env = WebShopRefEnv(split="test")
    obs, info = env.reset(seed=0)
    assert obs == env.observation == real_text(info["abstract_state"])
    assert info["state"] == env.state == info["task"].initial_state


@pytest.mark.parametrize("policy", ["expert", "random"])
def test_render_observation_of_the_markov_page_is_the_real_text_on_every_step(policy):
    """WebAgentTextEnv.convert_html_to_text of each page: the synthetic env renders the model's
    Markov page through WebShopDomain.render_observation, without a catalog, into the same text."""
    domain = get_domain("webshop")
    env = WebShopRefEnv(split="test", max_steps=15)
    actor = make_policy(policy, domain, seed=1)
    kinds = set()
    for seed in range(40):
        reset = getattr(actor, "reset", None)
        if callable(reset):
            reset()
        obs, info = env.reset(seed=seed)
        assert domain.render_observation(info["state"]) == obs
        terminated = truncated = False
        while not (terminated or truncated):
            obs, _, terminated, truncated, info = env.step(actor(obs, info))
            assert domain.render_observation(info["state"], info["score"] if terminated else None) == obs
            kinds.add(info["abstract_state"].kind)
    assert {"results", "item", "done"} <= kinds


def test_render_observation_shows_a_text_that_is_no_page_as_written():
    """A synthetic env's model may write a text that is no page: the agent sees what it wrote."""
    domain = get_domain("webshop")
    for text in ("not a page", "WebShop | item X\nInstruction: a\nbroken", ""):
        assert domain.render_observation(text) == text


@pytest.mark.parametrize("state_mode", ["text", "structured"])
def test_the_synthetic_env_shows_the_agent_the_reference_env_text(state_mode):
    """Both WebShop ids print WebAgentTextEnv's text (web_agent_text_env.py, 'text' mode) while the
    experience model keeps reading and writing the Markov state: one protocol for SimToReal."""
    domain = get_domain("webshop")
    reference = WebShopRefEnv(split="test", max_steps=15)
    synthetic = DreamEnv(domain, OracleExperienceModel(domain), split="test", state_mode=state_mode)
    wins = 0
    for task in reference.tasks[:5]:
        expert = domain.expert_policy()
        real_obs, real_info = reference.reset(options={"task": task})
        obs, info = synthetic.reset(options={"task": task})
        terminated = False
        while not terminated:
            assert obs == real_obs and info["admissible_actions"] == real_info["admissible_actions"]
            assert info["state"] == real_info["state"]
            action = expert(obs, info)
            real_obs, reward, terminated, _, real_info = reference.step(action)
            obs, _, _, _, info = synthetic.step(action)
            if state_mode == "structured":
                assert synthetic.state == reference.abstract_state.model_dump_json()
        if reward == 1.0:  # the done page prints the reward: the synthetic env's is the outcome
            wins += 1
            assert obs == real_obs
    assert wins >= 3
