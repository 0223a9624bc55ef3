"""EM / F1 on hand-worked cases, for the official EvolvingQA scorer and the card's variant."""

from __future__ import annotations

import pytest

from kbench.errors import UserError
from kbench.tasks.qa.metrics import card_em, card_f1, get_scorer, normalize_answer, official_em, official_f1


def test_normalisation_order_and_articles():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("an apple, a pear and THE plum") == "apple pear and plum"
    # "a" inside a word is not an article; punctuation removed before the article rule
    assert normalize_answer("Anna's banana") == "annas banana"
    assert normalize_answer("the.") == ""


def test_official_em():
    assert official_em("The Beatles.", "beatles") == 1.0
    assert official_em("Beatles", "Rolling Stones") == 0.0
    assert official_em("", "") == 1.0  # equal normalised strings


def test_official_f1_hand_cases():
    # pred tokens: barack obama ; gold: obama -> overlap 1, P = 1/2, R = 1 -> F1 = 2/3
    assert official_f1("Barack Obama", "Obama") == pytest.approx(2 / 3)
    # multiset overlap: pred "new new york" vs gold "new york": overlap = min(2,1)+1 = 2, P=2/3, R=1 -> 0.8
    assert official_f1("new new york", "New York") == pytest.approx(0.8)
    assert official_f1("Paris", "London") == 0.0
    # both empty after normalisation: no overlap -> 0, even though EM is 1
    assert official_f1("the", "a") == 0.0
    assert official_f1("", "") == 0.0


def test_unicode_is_kept_and_only_ascii_punctuation_removed():
    assert normalize_answer("São Paulo") == "são paulo"
    assert official_em("São Paulo", "sao paulo") == 0.0  # no accent folding
    # the curly apostrophe is not ASCII punctuation, so it stays
    assert normalize_answer("Britain’s") == "britain’s"
    assert official_f1("Zürich city", "zürich") == pytest.approx(2 / 3)


def test_card_variant():
    assert card_em("  Paris ", "Paris") == 1.0
    assert card_em("paris", "Paris") == 0.0  # strip only, case-sensitive
    # set overlap: {"new","york"} & {"new","york"} = 2; 2*2/(3+2) = 0.8
    assert card_f1("new new york", "New York") == pytest.approx(0.8)
    assert card_f1("", "") == 0.0
    assert card_f1("The Beatles.", "beatles") == 0.0  # no punctuation stripping in the card's recipe


def test_scorers_by_name():
    assert get_scorer("official") == (official_em, official_f1) and get_scorer("card") == (card_em, card_f1)
    with pytest.raises(UserError, match="unknown QA metric 'nope'; known: card, official"):
        get_scorer("nope")
