"""XTEVAL's claims on constructed suites whose cells hold query rows as the task writes them
(tests/xteval_cells.py): XTEVAL-11 from the packaged paper suite's entries and with its cluster
bootstrap over relations, XTEVAL-3 decided from one run, XTEVAL-7 across numbers of negatives,
and the OPT scaling claims (XTEVAL-12, 13, 14) on the OPT models only, at 5 sizes or more."""

from __future__ import annotations

from kbench.tasks.xteval.claims import xteval_iid_minus_ood
from kbench.claims.verdicts import test_suite as claims_of_suite
from kbench.report.runs import load_run
from kbench.suite.spec import load_suite, resolve_suite
from kbench.tasks.xteval.pipeline import XtevalSettings
from tests.xteval_cells import numbered, query, write_cell, write_suite


def claim(results, label: str):
    [outcome] = [r for chosen, found in results for r in found if r.claim.label == label]
    return outcome


def test_the_paper_suite_computes_xteval_11_and_xteval_7(tmp_path):
    """One cell per model and task entry of the packaged xteval-paper suite, with the query rows of
    the settings that entry runs: XTEVAL-11 needs IID and OOD in one run."""
    suite = load_suite(resolve_suite("xteval-paper"))
    cells = {}
    for entry in suite.spec.tasks:
        settings = XtevalSettings(**entry.settings)
        for model in ("opt-125m", "opt-350m"):
            rows = [
                query(s, f"P{r}", f"P{r}-{j}", j < (16 if s == "iid" else 4))
                for s in settings.settings
                for r in range(10)
                for j in range(20)
            ]
            cells |= write_cell(tmp_path, model, entry.label, numbered(rows), settings.model_dump(mode="json"))
    write_suite(tmp_path, cells, [e.label for e in suite.spec.tasks])
    results = claims_of_suite(tmp_path, ["xteval"])
    ood = claim(results, "XTEVAL-11")
    assert {t.model for t in ood.cells} == {"opt-125m", "opt-350m"}
    assert all(t.verdict == "supported" and abs(t.result["estimate"]["value"] - 0.6) < 1e-9 for t in ood.cells)
    assert "cluster bootstrap over 10 relations" in ood.cells[0].result["test"]
    negatives = claim(results, "XTEVAL-7")
    assert {t.model: t.verdict for t in negatives.cells} == {"opt-125m": "supported", "opt-350m": "supported"}
    assert (
        "downstream accuracy (iid): negatives_per_type 4 − negatives_per_type 2, the farthest of 3 pairs"
        in (negatives.cells[0].result["test"])
    )  # every pair alike (the IID queries of one D^theta): the first decides


def test_iid_minus_ood_resamples_relations_not_facts(tmp_path):
    """OOD accuracy is all or nothing by relation: 10% lower on average, significant when the facts
    are counted as independent (McNemar on 400 shared facts), not when the relations are resampled."""
    rows = []
    for r in range(10):
        for j in range(40):
            rows.append(query("iid", f"P{r}", f"P{r}-{j}", j % 20 < 13))
            rows.append(query("ood", f"P{r}", f"P{r}-{j}", r < 5 or j % 10 == 0))
    cells = write_cell(tmp_path, "m", "xteval", numbered(rows))
    write_suite(tmp_path, cells, ["xteval"])
    [test] = claim(claims_of_suite(tmp_path, ["xteval"]), "XTEVAL-11").cells
    assert abs(test.result["estimate"]["value"] - 0.1) < 1e-9
    assert test.result["estimate"]["clusters"] == 10 and test.result["p_value"] > 0.05
    assert test.verdict == "inconclusive"
    run = load_run(tmp_path / "cells" / "m__xteval__lama")
    assert xteval_iid_minus_ood(run) == xteval_iid_minus_ood(run)  # seeded: the same replicates on a rerun


def test_gap2_is_decided_from_one_run(tmp_path):
    """As with Gap 1: one missed test query of one run proves Gap 2 > 0; none leaves it undecided."""
    cells = {}
    for model, right in (("misses", 4), ("perfect", 5)):
        cells |= write_cell(tmp_path, model, "xteval", numbered([query("iid", "P1", f"f{j}", j < right) for j in range(5)]))
    write_suite(tmp_path, cells, ["xteval"])
    gap2 = {t.model: t for t in claim(claims_of_suite(tmp_path, ["xteval"]), "XTEVAL-3").cells}
    assert gap2["misses"].verdict == "supported" and gap2["perfect"].verdict == "inconclusive"
    estimate = gap2["misses"].result["estimate"]
    assert estimate["interval"] == "bootstrap" and estimate["ci_low"] < estimate["value"] < estimate["ci_high"]
    assert abs(estimate["value"] - 0.3 * 0.2) < 1e-12  # acc_D x (1 - downstream)
    assert "1 of 5 test queries missed over 1 run(s)" in gap2["misses"].result["test"]


def test_xteval_7_compares_runs_that_differ_only_in_negatives(tmp_path):
    """A suite with learning-rate entries too has three runs at 4 negatives: the one at the other
    runs' learning rate is compared, not the first one listed."""
    defaults = XtevalSettings().model_dump(mode="json")
    entries = {"lr5e-5": ({"lr": 5e-5}, 40), "default": ({}, 120), "neg2": ({"negatives_per_type": 2}, 120),
               "neg10": ({"negatives_per_type": 10}, 118)}  # fmt: skip
    cells = {}
    for label, (change, right) in entries.items():
        settings = {**defaults, "finetune": {**defaults["finetune"], **change}}
        rows = numbered([query("iid", "P1", f"f{j}", j < right) for j in range(200)])
        cells |= write_cell(tmp_path, "m", label, rows, settings)
    write_suite(tmp_path, cells, list(entries))
    [test] = claim(claims_of_suite(tmp_path, ["xteval"]), "XTEVAL-7").cells
    assert test.verdict == "supported" and abs(abs(test.result["estimate"]["value"]) - 0.01) < 1e-9


OPT = {"opt-125m": 125_239_296, "opt-350m": 331_196_416, "opt-1.3b": 1_315_758_080, "opt-2.7b": 2_651_596_800,
       "opt-6.7b": 6_658_473_984, "opt-13b": 12_853_473_280}  # fmt: skip
NEO = {"gpt-neo-125m": 125_198_592}  # fewer parameters than OPT-125M


def scaling_suite(root, models: dict[str, int]):
    """acc_D rises with OPT size, downstream accuracy falls from 0.6 to 0.35; GPT-Neo knows more
    than any OPT model and uses it better."""
    cells = {}
    for i, model in enumerate(models):
        known, right = (90, 360) if model in NEO else (20 + 10 * i, 240 - 20 * i)
        rows = numbered([query("iid", f"P{j % 10}", f"f{j}", j < right) for j in range(400)])
        cells |= write_cell(root, model, "xteval", rows, known=known)
    return write_suite(root, cells, ["xteval"], models)


def test_the_opt_scaling_claims_read_the_opt_models_only(tmp_path):
    results = claims_of_suite(scaling_suite(tmp_path, OPT | NEO), ["xteval"])
    trend = claim(results, "XTEVAL-12")
    [test] = trend.cells
    assert test.result["estimate"]["value"] == 1.0 and test.result["estimate"]["n"] == 6
    assert "over 6 models, opt-125m (125.2M) to opt-13b (12.9B)" in test.result["test"]
    assert [model for model, _ in trend.outside] == ["gpt-neo-125m"]
    [flat] = claim(results, "XTEVAL-13").cells  # the largest does worse: "does not improve" holds
    assert abs(flat.result["estimate"]["value"] + 0.25) < 1e-9 and flat.verdict == "supported"
    assert "opt-13b (12.9B parameters) − opt-125m (125.2M), of 6 sizes" in flat.result["test"]
    [gap1] = claim(results, "XTEVAL-14 (Gap 1 decreases)").cells
    assert gap1.result["estimate"]["value"] == -1.0


def test_a_scaling_claim_needs_five_sizes(tmp_path):
    four = dict(list(OPT.items())[:4])
    results = claims_of_suite(scaling_suite(tmp_path, four), ["xteval"])
    for label in ("XTEVAL-12", "XTEVAL-13", "XTEVAL-14 (Gap 1 decreases)", "XTEVAL-14 (Gap 2 about the same)"):
        outcome = claim(results, label)
        assert not outcome.cells and outcome.skipped == ["trend over 4 models on xteval / lama"], label
