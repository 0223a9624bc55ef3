"""Two-level bootstrap of XTEVAL's run figures, paired shares and Newcombe's unpaired difference."""

import pytest

from kbench.metrics.clustered import RunCounts, bootstrap_estimate, gap_replicates, paired_shares
from kbench.metrics.uncertainty import mcnemar


def _estimate(runs, known, figure="downstream_accuracy"):
    replicates = gap_replicates({"iid": runs}, known, seed=0, resamples=400)["iid"][figure]
    value = sum(r.correct / r.queries for r in runs) / len(runs)
    return bootstrap_estimate(value, replicates, n=sum(r.queries for r in runs), seed=0)


def test_one_run_has_the_spread_of_its_queries():
    estimate = _estimate([RunCounts((0, 0, 0), 10, 15)], {0: (46, 280)})
    assert estimate["ci_low"] < 10 / 15 < estimate["ci_high"]
    assert 0.35 < estimate["ci_low"] < 0.5 and 0.8 < estimate["ci_high"] < 0.95   # close to Wilson's [0.417, 0.848]


def test_all_correct_is_not_zero_width_and_holds_the_value():
    estimate = _estimate([RunCounts((0, 0, 0), 12, 12)], {0: (12, 40)})
    assert estimate["ci_high"] == 1.0 and estimate["ci_low"] < 0.9


def test_spread_over_runs_widens_the_interval():
    same = [RunCounts((0, 0, f), 30, 60) for f in range(3)]
    spread = [RunCounts((0, 0, 0), 10, 60), RunCounts((0, 0, 1), 30, 60), RunCounts((0, 0, 2), 50, 60)]
    width = [(e["ci_high"] - e["ci_low"]) for e in (_estimate(same, {0: (60, 100)}), _estimate(spread, {0: (60, 100)}))]
    assert width[1] > 2 * width[0]


def test_replicates_are_reproducible_and_paired_across_settings():
    runs = {"iid": [RunCounts((0, 0, 0), 8, 12)], "ood": [RunCounts((0, 0, 0), 3, 12)]}
    first, second = gap_replicates(runs, {0: (20, 60)}, seed=3), gap_replicates(runs, {0: (20, 60)}, seed=3)
    assert first == second
    usable = first["iid"]["usable_knowledge"][0] / first["iid"]["downstream_accuracy"][0]
    assert usable == pytest.approx(first["ood"]["usable_knowledge"][0] / first["ood"]["downstream_accuracy"][0])  # one acc_D draw
    with pytest.raises(ValueError, match="run keys"):
        gap_replicates({"iid": runs["iid"], "ood": [RunCounts((0, 1, 0), 3, 12)]}, {0: (20, 60)})


def test_paired_shares_is_mcnemar_on_binary_outcomes():
    first = {f"f{i}": float(i % 2) for i in range(20)}
    second = {f"f{i}": float(i % 3 == 0) for i in range(25)}
    result = paired_shares(first, second)
    expected = mcnemar({k: bool(v) for k, v in first.items()}, {k: bool(v) for k, v in second.items()})
    assert (result["b"], result["c"], result["p_value"], result["n_shared"]) == (
        expected["b"], expected["c"], expected["p_value"], expected["n_shared"])
    assert result["only_second"] == 5 and result["difference"]["value"] == pytest.approx((10 - 7) / 20)



def test_paired_shares_of_agreeing_0_1_outcomes_is_not_zero_width():
    # two systems right and wrong on the same 20 facts: the difference is 0, but 20 facts do not fix it
    outcomes = {f"f{i}": float(i % 3 == 0) for i in range(20)}
    difference = paired_shares(outcomes, dict(outcomes))["difference"]
    assert difference["value"] == 0.0 and difference["interval"] == "newcombe-paired"
    assert difference["ci_low"] < 0.0 < difference["ci_high"]
    # shares over several outcomes per fact: the bootstrap over facts
    shares = {f"f{i}": (i % 4) / 3 for i in range(20)}
    assert paired_shares(shares, {f: 1 - v for f, v in shares.items()})["difference"]["interval"] == "bootstrap"
