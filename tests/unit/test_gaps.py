"""Gap metrics against hand-computed numbers."""


import pytest

from kbench.tasks.xteval.gaps import gap_figures, mean_std


def test_gap_figures_hand_computed():
    # acc(D) = 0.4, downstream = 0.75: usable = 0.3, gap2 = 0.4 * 0.25 = 0.1, gap1 = 0.6
    g = gap_figures(0.4, 0.75)
    assert g["usable_knowledge"] == pytest.approx(0.3)
    assert g["gap2"] == pytest.approx(0.1)
    assert g["gap1"] == pytest.approx(0.6)
    assert g["gap1"] + g["usable_knowledge"] + g["gap2"] == pytest.approx(1.0)


def test_gap_figures_edges_and_bad_input():
    assert gap_figures(0.0, 1.0)["gap2"] == 0.0
    assert gap_figures(1.0, 0.0)["gap2"] == 1.0
    with pytest.raises(ValueError):
        gap_figures(1.2, 0.5)
    with pytest.raises(ValueError):
        gap_figures(0.5, float("nan"))


def test_mean_std_sample_std():
    # values 0.2, 0.4, 0.6: mean 0.4, squared deviations 0.04 + 0 + 0.04 = 0.08, / (3-1) -> 0.04, std 0.2
    out = mean_std([0.2, 0.4, 0.6])
    assert out["mean"] == pytest.approx(0.4)
    assert out["std"] == pytest.approx(0.2)
    assert mean_std([0.5]) == {"mean": 0.5, "std": 0.0}
