"""claims.md's summary counts, the n to decide beside an inconclusive verdict, and a provenance
that names no path of the machine it ran on."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.claims.check import parse_claims, rerun
from kbench.claims.power import n_to_decide
from kbench.claims.render import markdown, summary
from kbench.claims.sets import Claim, ClaimSet
from kbench.claims.verdicts import CellTest, ClaimResult


def _claim(id: str, **extra) -> Claim:
    return Claim(id=id, statement=f"{id} holds.", quote="q", source="s", task="kee", statistic="technique_above", **extra)


def _cell(model: str, verdict: str, value: float = 0.1, low: float = -0.1, high: float = 0.3, n: int = 100) -> CellTest:
    estimate = {"value": value, "ci_low": low, "ci_high": high, "n": n, "interval": "newcombe"}
    return CellTest(model, "kee / data", {"estimate": estimate, "p_value": 0.2, "test": "a test"}, 0.4, verdict)


def _tested() -> list[tuple[ClaimSet, list[ClaimResult]]]:
    decided = ClaimResult(_claim("P-1"), cells=[_cell(f"m{i}", "supported") for i in range(3)])  # one claim, 3 entries
    no_data = ClaimResult(_claim("P-2"))
    unmeasurable = ClaimResult(Claim(id="P-3", statement="s", quote="q", source="s", unmeasurable="not measurable: x"))
    open_ = ClaimResult(_claim("P-4"), cells=[_cell("m0", "inconclusive")])
    results = [decided, no_data, unmeasurable, open_]
    return [(ClaimSet("p", "Paper", tuple(r.claim for r in results)), results)]


def test_the_summary_counts_data_and_decided_claims_apart():
    [line] = summary(_tested())
    assert line == (
        "- `p`: 4 claims, 3 encoded for kbench to test, 2 tested with data; 4 verdicts per model and dataset: "
        "3 supported, 0 contradicted, 1 inconclusive; decided: 3 of 4 verdicts, 1 distinct claim"
    )


def test_n_to_decide_scales_the_observed_interval():
    # directional: SE = 0.2 / 1.96 at n 100; (1.96 + 0.8416)² · SE² / 0.1² · 100 = 817.3
    assert n_to_decide({"value": 0.1, "ci_low": -0.1, "ci_high": 0.3, "n": 100}, "greater", None) == 818
    # a stricter alpha (Holm) needs more; no interval or no difference: no n
    assert n_to_decide({"value": 0.1, "ci_low": -0.1, "ci_high": 0.3, "n": 100}, "less", None, alpha=0.005) > 818
    assert n_to_decide({"value": 0.0, "ci_low": -0.1, "ci_high": 0.1, "n": 100}, "greater", None) is None
    assert n_to_decide({"value": 0.3, "ci_low": None, "ci_high": None, "n": 4}, "greater", None) is None
    # equivalence: the half-width 0.1 must shrink to the 0.03 between the estimate and the margin
    assert n_to_decide({"value": 0.02, "ci_low": -0.08, "ci_high": 0.12, "n": 100}, "equivalent", 0.05) == 1112
    assert n_to_decide({"value": 0.07, "ci_low": -0.03, "ci_high": 0.17, "n": 100}, "equivalent", 0.05) is None
    # non-superiority: only the upper bound must fall below +margin
    assert n_to_decide({"value": -0.02, "ci_low": -0.12, "ci_high": 0.08, "n": 100}, "not_greater", 0.05) == 205


def test_claims_md_shows_the_n_to_decide_and_reads_back():
    text = markdown("s", _tested())
    numbers = parse_claims(text)
    # P-4 is inconclusive; Holm over the set's 4 directional tests: alpha 0.0125 sizes its n
    assert (
        numbers["P-4 | m0 | kee / data"].split(" | ")[5]
        == f"≈ {n_to_decide(_cell('m0', '').result['estimate'], 'greater', None, 0.0125)}"
    )
    assert numbers["P-1 | m0 | kee / data"].split(" | ")[4:6] == ["supported", "—"]


def test_provenance_names_a_command_anyone_can_run(tmp_path, monkeypatch):
    from kbench.suite.spec import load_suite

    document = {"suite": load_suite("claims-cpu").document(), "cells": {}}
    monkeypatch.chdir(tmp_path)
    found = rerun(document, Path("runs/claims-cpu"), Path("docs/claims.md"), [])
    assert (
        found == "`kbench suite run claims-cpu --out runs/claims-cpu`, then `kbench claims runs/claims-cpu --out docs/claims.md`"
    )
    # a suite folder outside the working folder (a private notes folder): no path of this machine
    elsewhere = tmp_path.parent / "notes" / "claims-cpu-run"
    found = rerun(document, elsewhere, tmp_path / "claims.md", ["maple"])
    assert (
        found
        == "`kbench suite run claims-cpu --out runs/claims-cpu`, then `kbench claims runs/claims-cpu --set maple --out claims.md`"
    )
    assert str(tmp_path.parent) not in found
    # a suite that is not the packaged one, unchanged: its suite file, which suite.json records in full
    document["suite"]["suite"]["retries"] = 0
    assert rerun(document, Path("out"), Path("out/claims.md"), []).startswith("`kbench suite run claims-cpu.toml --out out`")


@pytest.mark.parametrize("columns", [8, 9])
def test_check_reads_both_table_formats(columns):
    row = "| " + " | ".join(["x"] * columns) + " |"
    assert parse_claims(f"# Claims tested on suite s\n\n### C-1: c\n\n{row}\n") == {
        "C-1 | x | x": " | ".join(["x"] * (columns - 2))
    }
