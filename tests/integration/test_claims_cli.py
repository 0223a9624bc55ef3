"""`kbench claims` on a constructed suite folder whose numbers are chosen: KoLA-13 (head above
tail) holds in every model, EVQA-1 (outdated about as good as updated, after continual
pretraining) reports "setting not met" on static models and is contradicted on `kbench read`
checkpoints, and the verdict across models needs 5 models."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from kbench.metrics.uncertainty import proportion
from tests.conftest import run_kbench


def write_run(folder: Path, task: str, model: str, headline: dict, metrics: dict, items: list[dict]) -> None:
    folder.mkdir(parents=True)
    results = {"schema": "kbench.results.v2", "task": task, "model": {"name": model}, "headline": headline,
               "metrics": metrics, "items": {"file": "items.parquet", "count": len(items)}}
    (folder / "results.json").write_text(json.dumps(results))
    pl.DataFrame(items).write_parquet(folder / "items.parquet")


def constructed_suite(root: Path, models: int, tasks: tuple[str, ...] = ("extraction", "qa"), rows: dict | None = None) -> Path:
    """`models` models; extraction: head 80/100 (less 5 per model) vs tail 10/100; qa: 60 edited
    questions, none right against the outdated answer, 40 right against the updated one."""
    cells = {}
    for m in range(models):
        name = f"m{m}"
        if "extraction" in tasks:
            head, tail = proportion(80 - 5 * m, 100), proportion(10, 100)
            write_run(root / "cells" / f"{name}__facts__lama", "extraction", name, {"maple_accuracy": head},
                      {"per_frequency_bin": {"head": {"maple_accuracy": head}, "tail": {"maple_accuracy": tail}}},
                      [{"id": "q0", "correct": True}])
            cells[f"{name}__facts__lama"] = {"model": name, "task": "facts", "dataset": "lama", "status": "done",
                                             "run_dir": f"cells/{name}__facts__lama"}
        if "qa" in tasks:
            items = [{"id": f"e{i}", "category": "edited", "em_outdated": False, "em_updated": i < 40} for i in range(60)]
            write_run(root / "cells" / f"{name}__qa__evo", "qa", name, {"updated_em": proportion(40, 60)}, {}, items)
            cells[f"{name}__qa__evo"] = {"model": name, "task": "qa", "dataset": "evo", "status": "done",
                                         "run_dir": f"cells/{name}__qa__evo"}
    suite = {"suite": {"name": "constructed"}, "tasks": [{"task": "extraction", "name": "facts"}, {"task": "qa", "name": "qa"}]}
    suite["tasks"] = [t for t in suite["tasks"] if t["task"] in tasks]
    (root / "suite.json").write_text(json.dumps({"schema": "kbench.suite.v1", "suite": suite, "cells": cells, "models": rows or {}}))
    return root


def test_one_claim_holds_and_one_is_contradicted(tmp_path):
    folder = constructed_suite(tmp_path / "suite", models=2)
    done = run_kbench("claims", str(folder), env={"COLUMNS": "200"})  # the table unwrapped
    assert done.returncode == 0, done.stderr
    text = (folder / "claims.md").read_text()
    kola, evqa = text.split("### KoLA-13")[1].split("##")[0], text.split("### EVQA-1")[1]
    assert "此外我们想探索 LLM 的知识记忆是否与训练频率相关。" in kola and ": Design expectation, no result in the text" in kola
    assert kola.count("| supported |") == 2 and "inconclusive across models (2 models)" in kola
    assert "holds for 2 of 2 models" in kola
    assert "yielding similar EM/F1 scores for 'Outdated' and 'Updated' questions" in evqa
    assert 'Source: EvolvingQA evaluation card, "Common pitfalls", line 43' in evqa  # the card's words, not the paper's
    assert evqa.count("| setting not met |") == 2 and "Verdict: setting not met: no model of the suite is a model after" in evqa
    assert "KoLA-13" in done.stdout and "setting not met" in done.stdout


def test_evqa_1_is_tested_on_models_after_continual_pretraining(tmp_path):
    read = {"base_model": {"name": "org/base"}, "text_sha256": ["0" * 64], "steps": 10}
    folder = constructed_suite(tmp_path / "suite", models=2, tasks=("qa",), rows={"m0": {"model": "ckpt", "read": read}, "m1": {}})
    assert run_kbench("claims", str(folder)).returncode == 0
    evqa = (folder / "claims.md").read_text().split("### EVQA-1")[1].split("\n### ")[0]
    assert "| m0 | qa / evo | -0.667 [" in evqa and evqa.count("| contradicted |") == 1 and "±0.1" in evqa
    assert "| m1 | qa / evo | — | — | — | — | setting not met | — |" in evqa


def test_the_one_sided_sign_test():
    from kbench.claims.verdicts import one_sided_sign_p

    assert one_sided_sign_p(5, 5) == 1 / 32 and one_sided_sign_p(4, 5) == 6 / 32


def test_five_models_decide_across_models_on_a_suite(tmp_path):
    from kbench.claims.verdicts import test_suite

    [(kola, results)] = test_suite(constructed_suite(tmp_path / "suite", models=5, tasks=("extraction",)), ["kola"])
    [trend, result] = [r for r in results if r.claim.measurable]
    assert len(results) == 13 and result.claim.id == "KoLA-13"  # the 11 others are listed, with their reason
    assert trend.claim.id == "KoLA-1" and not trend.cells  # the model table gives no sizes here
    assert all(r.claim.unmeasurable.startswith("not measurable by kbench: ") for r in results if r not in (trend, result))
    assert kola.name == "kola" and [t.verdict for t in result.cells] == ["supported"] * 5
    # Holm over the 5 tests: every p is tiny, so each stays below 0.05
    assert all(t.p_holm < 0.05 for t in result.cells)
    assert result.across["facts / lama"] == (
        "holds for 5 of 5 models; sign test across models (5 for, 0 against) p = 0.0312: supported across models")


def test_a_claim_set_needing_a_task_the_suite_lacks_exits_2(tmp_path):
    folder = constructed_suite(tmp_path / "suite", models=1, tasks=("qa",))
    done = run_kbench("claims", str(folder), "--set", "kola")
    assert done.returncode == 2 and "--set kola: claim set kola needs task(s) extraction, which the suite lacks" in done.stderr
    assert "Traceback" not in done.stderr and not (folder / "claims.md").exists()
    listed = run_kbench("claims", "list")
    assert listed.returncode == 0 and "kola: 2 tested, 11 not measurable" in listed.stdout
    assert "  KoLA-13 (expectation): " in listed.stdout and "  EVQA-1: " in listed.stdout
    for name in ("maple", "xteval", "left", "kola", "evolvingqa"):
        assert f"\n{name}: " in f"\n{listed.stdout}"
    every = {line.split()[0].rstrip(":") for line in listed.stdout.splitlines() if line.startswith("  ")}
    assert len(every) == 67  # the five papers' claims, none dropped (parts share their claim's id)

    unknown = run_kbench("claims", str(folder), "--set", "nope")
    assert unknown.returncode == 2 and "no such claim set" in unknown.stderr


def test_a_suite_run_writes_claims_md_with_a_command_anyone_can_run(tmp_path):
    """`kbench suite run` writes claims.md itself when the suite names claim sets: its provenance
    gives the commands that rebuild it, with no path of this machine."""
    from kbench.cli.suite_cmd import write_claims

    folder = constructed_suite(tmp_path / "suite", models=1, tasks=("extraction",))
    write_claims(folder, ["kola"])
    text = (folder / "claims.md").read_text()
    command = "`kbench suite run constructed.toml --out runs/constructed`, then `kbench claims runs/constructed --set kola --out claims.md`"
    assert f"- command: {command}" in text and str(tmp_path) not in text
