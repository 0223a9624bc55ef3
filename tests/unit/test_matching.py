"""MAPLE matching, strict exact match and LAMA P@1 on hand-computed cases."""

from __future__ import annotations

import pytest

from kbench.metrics.matching import distinct_fact_hits, exact_match, maple_correct, normalize_for_matching
from kbench.metrics.uncertainty import macro_mean


def test_normalisation_drops_special_characters_and_whitespace():
    assert normalize_for_matching("  São   Paulo-SP! ") == "sãopaulosp"
    assert normalize_for_matching("New York City", case_sensitive=True) == "NewYorkCity"
    assert normalize_for_matching("?! .") == ""


@pytest.mark.parametrize("prediction, answers, maple, exact", [
    ("Paris", ["Paris"], True, True),
    (" paris.", ["Paris"], True, True),                     # case and punctuation ignored
    ("It is Paris, France", ["Paris"], True, False),         # gold is a substring of the prediction
    ("not Paris", ["Paris"], True, False),                   # the known trap: substring counts it
    ("Par", ["Paris"], False, False),                        # prediction inside gold does not count
    ("NYC", ["New York City", "NYC"], True, True),           # an alias matches
    ("New-York  City", ["New York City"], True, True),       # whitespace and hyphen removed
    ("London", ["Paris", "City of Light"], False, False),
    ("anything", ["..."], False, False),                     # an answer normalising to "" never matches
    ("", ["Paris"], False, False),
])
def test_maple_and_exact(prediction, answers, maple, exact):
    assert maple_correct(prediction, answers) is maple
    assert exact_match(prediction, answers) is exact


def test_case_sensitive_option():
    assert maple_correct("paris", ["Paris"]) is True
    assert maple_correct("paris", ["Paris"], case_sensitive=True) is False
    assert exact_match("PARIS", ["Paris"], case_sensitive=True) is False


def test_lama_p_at_1_per_relation_then_macro():
    rows = [
        ("P19", "A", "Ulm", True), ("P19", "B", "Rome", False), ("P19", "C", "Oslo", True),
        ("P19", "A", "Ulm", False),   # duplicate fact: its first row (True) counts
        ("P36", "X", "Paris", False),
    ]
    hits = distinct_fact_hits(rows)
    assert hits == {"P19": [1.0, 0.0, 1.0], "P36": [0.0]}
    estimate = macro_mean(hits)   # what `evaluate extraction --protocol lama` reports as lama_p_at_1
    assert estimate["value"] == pytest.approx((2 / 3 + 0.0) / 2)   # not the micro mean 2/4
    assert estimate["n"] == 4
    assert macro_mean({})["value"] is None
