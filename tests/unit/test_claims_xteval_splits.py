"""XTEVAL-8 (variation across train/test splits is negligible) on a constructed suite, 3 split seeds x
3 fine-tune seeds: one model's split seeds agree on 1,000 queries per run (supported within the
declared margin), another's differ by 0.3 (contradicted), and a third's agree run for run on 10
queries per run: the runs' spread is 0, but the queries leave the spread wide open (inconclusive;
a normal interval over the runs alone was zero-width and supported it)."""

from __future__ import annotations

from kbench.claims.verdicts import test_suite as claims_of_suite
from tests.xteval_cells import numbered, query, write_cell, write_suite


def rows(right_by_split: dict[int, int], queries: int) -> list[dict]:
    found = [
        query("iid", f"P{j % 5}", f"f{j}", j < right, split=split, finetune=f)
        for split, right in right_by_split.items()
        for f in range(3)
        for j in range(queries)
    ]
    return numbered(found)


def test_split_spread_verdicts(tmp_path):
    models = {
        "steady": rows({0: 600, 1: 600, 2: 600}, 1000),
        "shaky": rows({0: 300, 1: 600, 2: 450}, 1000),
        "small": rows({0: 6, 1: 6, 2: 6}, 10),
    }
    cells = {}
    for model, found in models.items():
        cells |= write_cell(tmp_path, model, "xteval", found)
    write_suite(tmp_path, cells, ["xteval"])
    [(_, results)] = claims_of_suite(tmp_path, ["xteval"])
    [claim8] = [r for r in results if r.claim.id == "XTEVAL-8"]
    tests = {t.model: t for t in claim8.cells}
    assert {m: t.verdict for m, t in tests.items()} == {"steady": "supported", "shaky": "contradicted", "small": "inconclusive"}
    shaky = tests["shaky"].result
    assert abs(shaky["estimate"]["value"] - 0.30) < 1e-9 and shaky["estimate"]["interval"] == "bootstrap"
    assert "split seed 1 − split seed 0, of 3 split seeds" in shaky["test"]
    small = tests["small"].result["estimate"]
    assert small["value"] == 0.0 and small["ci_high"] > 0.05
