"""The packaged claim sets on a constructed suite whose numbers are chosen: per model, MAPLE-1
(RECITE and GenRead gain most) holds and MAPLE-2 (GenRead loses most) is contradicted; XTEVAL-1
and XTEVAL-3 (the two gaps) hold and XTEVAL-11 (OOD below IID) is contradicted (OOD above IID
in every relation); LEFT-2 (open book
above closed book) reads two settings of one model. `--check` tells a reproduced claims.md from
one whose numbers differ, and docs/claims.md parses as the command writes it."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from kbench.claims.sets import claim_set
from kbench.metrics.uncertainty import proportion
from tests.conftest import REPO_ROOT, run_kbench
from tests.xteval_cells import numbered, query, summary

GAIN = {"recite": (30, 50), "genread": (28, 50), "temp0.7": (5, 50), "temp1.2": (4, 50)}
LOSS = {"recite": (20, 50), "genread": (2, 50), "temp0.7": (10, 50), "temp1.2": (11, 50)}


def write_run(folder: Path, task: str, model: str, metrics: dict, rows: list | None = None, headline: dict | None = None) -> None:
    folder.mkdir(parents=True)
    rows = rows or [{"id": "q0", "correct": True}]
    results = {"schema": "kbench.results.v2", "task": task, "model": {"name": model}, "headline": headline or {},
               "metrics": metrics, "items": {"file": "items.parquet", "count": len(rows)}}
    (folder / "results.json").write_text(json.dumps(results))
    pl.DataFrame(rows).write_parquet(folder / "items.parquet")


def kee_metrics() -> dict:
    table = {"baseline": {"accuracy": proportion(50, 100)}}
    for name in GAIN:
        table[name] = {"gain": proportion(*GAIN[name]), "loss": proportion(*LOSS[name])}
    return {"per_technique": table}


def xteval_rows() -> list[dict]:
    """One run with --setting both, 10 relations of 8 test facts: IID 3 of 8 right, OOD 6 of 8."""
    right = {"iid": 3, "ood": 6}
    return numbered([query(s, f"P{r}", f"P{r}-{j}", j < right[s]) for s in right for r in range(10) for j in range(8)])


def truefalse_metrics(setting: str, k: int) -> dict:
    return {"setting": setting, "overall": {"accuracy": proportion(k, 100)}}


def constructed_suite(root: Path, models: tuple[str, ...] = ("m0", "m1")) -> Path:
    runs = {"kee": ("kee", kee_metrics()), "xteval": ("xteval", summary(xteval_rows())),
            "open": ("truefalse", truefalse_metrics("open-book-gold", 80)),
            "closed": ("truefalse", truefalse_metrics("closed-book", 50))}
    cells = {}
    for model in models:
        for label, (task, metrics) in runs.items():
            key = f"{model}__{label}__data"
            if task == "xteval":  # (headline, metrics) as the task writes them, over its query rows
                write_run(root / "cells" / key, task, model, metrics[1], xteval_rows(), metrics[0])
            else:
                write_run(root / "cells" / key, task, model, metrics)
            cells[key] = {"model": model, "task": label, "dataset": "data", "status": "done", "run_dir": f"cells/{key}"}
    suite = {"suite": {"name": "constructed"}, "tasks": [{"task": t, "name": label} for label, (t, _) in runs.items()]}
    table = {m: {"model": f"org/{m}", "parameters": 1000 * (i + 1), "sha256": f"{i}" * 64} for i, m in enumerate(models)}
    (root / "suite.json").write_text(json.dumps({"schema": "kbench.suite.v1", "suite": suite, "cells": cells, "models": table}))
    return root


def section(text: str, heading: str) -> str:
    return text.split(f"### {heading}: ")[1].split("\n### ")[0]


def test_the_papers_claims_get_their_verdicts(tmp_path):
    folder = constructed_suite(tmp_path / "suite")
    done = run_kbench("claims", str(folder), "--set", "maple", "--set", "xteval", "--set", "left")
    assert done.returncode == 0, done.stderr
    text = (folder / "claims.md").read_text()
    maple1, maple2 = section(text, "MAPLE-1"), section(text, "MAPLE-2")
    assert "RECITE and GenRead achieve the highest Gain across all models" in maple1  # the verbatim quote
    assert maple1.count("| supported |") == 2 and "holds for 2 of 2 models; inconclusive across models (2 models)" in maple1
    assert "| gain: genread − temp0.7 (the deciding pair of 4), two-sided Fisher exact |" in maple1  # the closest pair
    assert maple2.count("| contradicted |") == 2 and "| -0.360 [" in maple2  # Loss 2/50 − RECITE's 20/50
    assert "Verdict: not measurable by kbench: " in section(text, "MAPLE-8")
    assert section(text, "XTEVAL-1").count("| supported |") == 2 and "| 0.700 [" in section(text, "XTEVAL-1")
    assert section(text, "XTEVAL-3").count("| supported |") == 2  # Gap 2's interval lies above 0
    assert section(text, "XTEVAL-11").count("| contradicted |") == 2
    assert section(text, "LEFT-2").count("| supported |") == 2 and "| 0.300 [" in section(text, "LEFT-2")
    assert "Equivalence margin (declared by kbench; the paper states none): ±0.05" in section(text, "LEFT-3")
    assert "## Provenance" in text and f"- model m1: org/m1, sha256 {'1' * 64}" in text
    # a suite folder outside the working folder: no path of this machine, a command anyone can run
    assert "- command: `kbench suite run constructed.toml --out runs/constructed`, then `kbench claims runs/constructed " in text
    assert str(tmp_path) not in text
    encoded = len({c.id for c in claim_set("maple").tested})
    assert f"- `maple`: 29 claims, {encoded} encoded for kbench to test, " in text


def test_check_tells_a_reproduced_file_from_one_that_differs(tmp_path):
    folder = constructed_suite(tmp_path / "suite")
    assert run_kbench("claims", str(folder), "--set", "maple").returncode == 0
    same = run_kbench("claims", str(folder), "--set", "maple", "--check", str(folder / "claims.md"))
    assert same.returncode == 0 and "reproduced exactly" in same.stderr, same.stderr
    altered = tmp_path / "altered.md"
    altered.write_text((folder / "claims.md").read_text().replace("| -0.360 [", "| -0.350 [", 1))
    differs = run_kbench("claims", str(folder), "--set", "maple", "--check", str(altered))
    assert differs.returncode == 1 and "1 numbers differ" in differs.stderr
    assert "MAPLE-2 | m0 | kee / data: file -0.350" in differs.stdout
    foreign = tmp_path / "foreign.md"
    foreign.write_text("# Something else\n")
    refused = run_kbench("claims", str(folder), "--check", str(foreign))
    assert refused.returncode == 2 and "not a claims.md written by `kbench claims`" in refused.stderr


def test_docs_claims_md_has_the_format_the_command_writes():
    from kbench.claims.check import parse_claims

    path = REPO_ROOT / "docs" / "claims.md"
    if not path.is_file():
        pytest.skip("docs/claims.md is generated by the packaged CPU suites (docs/claims.md not written yet)")
    numbers = parse_claims(path.read_text(encoding="utf-8"), str(path))
    assert numbers and "## Provenance" in path.read_text(encoding="utf-8")


def test_a_trend_in_size_is_one_test_over_the_models(tmp_path):
    from kbench.claims.verdicts import test_suite

    folder = constructed_suite(tmp_path / "suite", models=tuple(f"opt-{i}" for i in range(5)))  # XTEVAL-12/13/14: OPT
    for i in range(5):  # acc_D grows with size, Gap 1 shrinks
        path = folder / "cells" / f"opt-{i}__xteval__data" / "results.json"
        results = json.loads(path.read_text())
        results["metrics"]["settings"]["iid"] |= {"acc_D": {"mean": 0.2 + 0.1 * i, "std": None, "n": 1, "std_over": "seeds"},
                                                   "gap1": {"mean": 0.8 - 0.1 * i, "std": None, "n": 1, "std_over": "seeds"}}
        path.write_text(json.dumps(results))
    [(_, results)] = test_suite(folder, ["xteval"])
    by_label = {r.claim.label: r for r in results}
    [trend] = by_label["XTEVAL-12"].cells
    assert trend.model == "trend over 5 models" and trend.result["estimate"]["value"] == 1.0
    assert trend.result["p_value"] == 2 / 120 and trend.verdict == "supported"  # 2 of 5! orders are as extreme
    [shrinks] = by_label["XTEVAL-14 (Gap 1 decreases)"].cells
    assert shrinks.result["estimate"]["value"] == -1.0 and shrinks.verdict == "supported"  # claimed < 0
    assert not by_label["XTEVAL-12"].across  # one test over the models: no sign test on top
    [flat] = by_label["XTEVAL-14 (Gap 2 about the same)"].cells  # the same Gap 2 everywhere, but on few items
    assert flat.result["estimate"]["value"] == 0.0 and flat.verdict == "inconclusive"  # 80 queries: wider than ±0.05
