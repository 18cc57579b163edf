"""What an action names, per pack: the lines replay grounding keeps and the embedding's context."""

from __future__ import annotations

import pytest

from dreamgym_env.envs.registry import get_domain
from dreamgym_env.wrappers.embed_observation import context_of


@pytest.mark.parametrize(
    ("domain", "action", "arguments"),
    [
        ("webshop", "search[red shoes]", ("red shoes",)),
        ("webshop", "click[Buy Now]", ("Buy Now",)),
        ("alfworld", "go to countertop 1", ("countertop 1",)),
        ("alfworld", "put apple 1 in/on fridge 1", ("apple 1", "fridge 1")),
        ("alfworld", "look", ()),
        ("webarena", "type [12] [red shoes] [1]", ("12", "red shoes")),
        ("webarena", "click [12]", ("12",)),
        ("webarena", "goto [http://shop.example/cart]", ("http://shop.example/cart",)),
        ("webarena", "go_back", ()),
    ],
)
def test_each_pack_names_the_arguments_of_its_actions(domain, action, arguments):
    assert get_domain(domain).action_arguments(action) == arguments


@pytest.mark.parametrize("domain", ["webshop", "alfworld", "webarena"])
@pytest.mark.parametrize("action", ["", "nope [", 42, "x" * 5000])
def test_an_invalid_action_names_nothing_and_never_raises(domain, action):
    assert get_domain(domain).action_arguments(action) == ()


def test_a_typed_text_finds_the_line_of_its_element():
    page = "[1] RootWebArea 'Shop'\n[12] searchbox 'Search'\n[13] button 'Go'"
    arguments = get_domain("webarena").action_arguments("type [12] [red shoes] [1]")
    assert context_of("type [12] [red shoes] [1]", page, arguments) == "[12] searchbox 'Search'"
