"""Pages as WebShop's text env prints them: ``WebAgentTextEnv.convert_html_to_text(html, simple=True)``
(web_agent_site/envs/web_agent_text_env.py, princeton-nlp/WebShop 64fa2a5) over web_agent_site/templates/."""

from __future__ import annotations

import pytest

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
    assert not env.restorable
    with pytest.raises(ConfigurationError, match="pages"):
        env.restore(env.tasks[0], obs)
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
