from __future__ import annotations

import pytest

from dreamgym_env.envs.webshop.matching import phrase_in_text, phrases_match, tokens


def test_tokens():
    assert tokens("Men's X-Large, 1.7 fl oz") == ("mens", "x", "large", "1.7", "fl", "oz")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("machine washable", "Machine-Washable"),
        ("light grey", "light gray"),
        ("with pockets", "with pocket"),
        ("lightweight", "light weight"),
        ("noise cancelling", "noise canceling"),
        ("x-large", "X Large"),
    ],
)
def test_tolerant_wording_matches(a, b):
    assert phrases_match(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("pack of 2", "pack of 12"),
        ("x-large", "xx-large"),
        ("large", "x-large"),
        ("navy blue", "sky blue"),
        ("blue", "navy blue"),
        ("single origin", "original"),
        ("usb c to usb c", "usb a to usb c"),
        ("", "anything"),
    ],
)
def test_different_meanings_do_not_match(a, b):
    assert not phrases_match(a, b)


def test_phrase_in_text():
    title = "Northfield Classic Men's Shirt - Long Sleeve, Machine Washable"
    assert phrase_in_text("men's shirt", title)
    assert phrase_in_text("machine-washable", title)
    assert not phrase_in_text("women's shirt", title)
    assert not phrase_in_text("short sleeve", title)
    assert not phrase_in_text("", title)
