"""`kbench check`'s comparison verdicts on constructed passes: flips name their items, a near-tie flip warns,
many flips or a log-prob beyond the tolerance fail; thresholds parse from KEY=VALUE."""

from __future__ import annotations

import pytest

from kbench.check.checks import Thresholds, comparison_check, logprobs_check
from kbench.check.measure import Pass, compare
from kbench.errors import UserError

IDS = [f"q{i}" for i in range(40)]


def a_pass(answers=None, ranks=None, logprobs=None) -> Pass:
    n = len(IDS)
    lps = logprobs or [-1.0] * n
    return Pass(IDS, answers or ["Paris"] * n, ranks or [1] * n, lps, list(lps), [2 * x for x in lps])


def test_a_near_tie_flip_warns_and_names_its_item():
    other = a_pass(answers=["Paris"] * 39 + ["Lyon"], logprobs=[-1.0] * 39 + [-1.00001])
    check = comparison_check("repeat", "determinism", "twice", compare(a_pass(), other), 1e-3, Thresholds())
    assert check["verdict"] == "warn" and check["measured"]["answer_flips"] == ["q39"]
    assert "identical answers 39/40" in check["evidence"] and "flips: q39" in check["evidence"]


def test_many_flips_or_a_far_log_prob_fail():
    flipped = a_pass(answers=["Paris"] * 37 + ["Lyon"] * 3)  # 7.5% > flip_fail 5%
    assert comparison_check("r", "determinism", "x", compare(a_pass(), flipped), 1e-3, Thresholds())["verdict"] == "fail"
    far = a_pass(logprobs=[-1.0] * 39 + [-1.1])
    assert comparison_check("r", "determinism", "x", compare(a_pass(), far), 1e-3, Thresholds())["verdict"] == "fail"
    assert comparison_check("r", "determinism", "x", compare(a_pass(), far), 1.0, Thresholds())["verdict"] == "pass"


def test_positive_log_probs_and_ranking_against_scoring_fail():
    positive = a_pass(logprobs=[-1.0] * 39 + [0.5])
    assert logprobs_check(positive, Thresholds())["verdict"] == "fail"
    apart = a_pass()
    apart.first_logprobs = [-1.0] * 39 + [-2.0]
    check = logprobs_check(apart, Thresholds())
    assert check["verdict"] == "fail" and check["measured"]["ranking_vs_scoring_apart"] == ["q39"]
    assert logprobs_check(a_pass(), Thresholds())["verdict"] == "pass"


def test_thresholds_parse_and_refuse_unknown_keys():
    assert Thresholds.parse(["flip_fail=0.2"]).flip_fail == 0.2
    assert Thresholds.parse([]) == Thresholds()
    for bad in ("flips=1", "flip_fail", "flip_fail=x", "flip_fail=-1"):
        with pytest.raises(UserError, match="--threshold"):
            Thresholds.parse([bad])
