"""LEFT's pair choice: the highest margin is called true; a tie calls none true."""

from kbench.metrics.pairs import pair_choice


def test_highest_margin_is_called_true_and_a_tie_calls_none():
    assert pair_choice([-1.0, -2.0]) == [True, False]
    assert pair_choice([0.3, 1.5]) == [False, True]
    assert pair_choice([0.5, 0.5]) == [False, False]
