"""The suite report's popularity-decile chart on constructed items: PopQA-style deciles of the raw
popularity, shared by every model, with Wilson intervals."""

from kbench.metrics.uncertainty import wilson
from kbench.suite.charts import popularity_decile_chart, popularity_deciles


def _items(correct_from: int) -> dict[str, tuple[float, bool]]:
    # 40 items, popularity 0..39 (item "i07" has popularity 7); correct at popularity >= correct_from
    return {f"i{p:02d}": (float(p), p >= correct_from) for p in range(40)}


def test_deciles_are_cut_once_and_carry_wilson_intervals():
    lines = popularity_deciles({"big": _items(0), "small": _items(20)})
    assert set(lines) == {"big", "small"}
    small = lines["small"]
    assert [e["decile"] for e in small] == list(range(1, 11))
    assert all(e["n"] == 4 for e in small)
    assert [(e["low"], e["high"]) for e in small[:2]] == [(0.0, 3.0), (4.0, 7.0)]
    assert [e["value"] for e in small] == [0.0] * 5 + [1.0] * 5
    low, high = wilson(0, 4)
    assert (small[0]["ci_low"], small[0]["ci_high"]) == (low, high)
    assert all(e["value"] == 1.0 for e in lines["big"])


def test_a_model_missing_a_decile_gets_no_point_there():
    partial = {item: v for item, v in _items(0).items() if v[0] >= 8}
    lines = popularity_deciles({"full": _items(0), "partial": partial})
    assert [e["n"] for e in lines["partial"][:3]] == [0, 0, 4]
    assert lines["partial"][0]["value"] is None
    assert lines["full"][0]["n"] == 4


def test_ties_split_deterministically_by_id():
    tied = {f"i{k}": (1.0, k % 2 == 0) for k in range(20)}
    first = popularity_deciles({"m": tied})
    assert first == popularity_deciles({"m": dict(reversed(list(tied.items())))})
    assert sum(e["n"] for e in first["m"]) == 20


def test_chart_is_written_and_skipped_without_popularity(tmp_path):
    assert popularity_decile_chart({"kee / d": {"a": {}, "b": {}}}, tmp_path) is None
    name = popularity_decile_chart({"kee / d": {"a": _items(0), "b": _items(20)}}, tmp_path)
    assert name == "popularity_deciles.png"
    assert (tmp_path / name).stat().st_size > 0
