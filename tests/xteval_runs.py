"""XTEVAL run folders for the report tests, from real LAMA T-REx facts (`tests.report_runs.lama_items`).

`xteval_run` writes the rows the task writes (extraction rows per fact and seed, one run row and
its query rows per downstream run, the test split drawn by the task's own `split_facts` from the
model's D^theta) and a results.json envelope. Which facts a "model" knows and answers is a rule
given by the test, so two models have different D^theta and hence different test splits.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kbench.tasks.xteval.criterion import d_theta_criterion
from kbench.tasks.xteval.documents import Triple
from kbench.tasks.xteval.pipeline import split_facts
from kbench.io import write_json, write_parquet
from kbench.metrics.uncertainty import proportion


def xteval_rows(facts: list[dict], knows: Callable[[int], bool], answers: Callable[[str, int], bool],
                settings=("iid",), split_seeds: int = 1) -> list[dict]:
    """Rows of one run with one extraction and one fine-tune seed; `answers(fact_id, split_seed)`."""
    rows = [{"id": f"extraction/e0/{f['id']}", "kind": "extraction", "extraction_seed": 0, "fact_id": f["id"],
             "relation": f["relation"], "subject": f["subject"], "object": f["object"],
             "status": "known" if knows(i) else "unknown", "correct": knows(i)} for i, f in enumerate(facts)]
    known = [f for i, f in enumerate(facts) if knows(i)]
    by_triple = {Triple(f["subject"], f["relation"], f["object"]): f["id"] for f in known}
    for setting in settings:
        for sp in range(split_seeds):
            _, test = split_facts(list(by_triple), setting, sp, 0.6)
            key = f"{setting}/e0-s{sp}-f0"
            base = {"setting": setting, "extraction_seed": 0, "split_seed": sp, "finetune_seed": 0}
            queries = [{"id": f"{key}/q{q}", "kind": "query", "fact_id": by_triple[t], "run": key, **base,
                        "relation": t.relation, "subject": t.head, "object": t.tail,
                        "correct": answers(by_triple[t], sp), "gold_rank": 1 if answers(by_triple[t], sp) else 3,
                        "n_candidates": 20} for q, t in enumerate(test)]
            accuracy = sum(q["correct"] for q in queries) / len(queries)
            rows += [{"id": key, "kind": "run", **base, "n_train": len(by_triple) - len(test), "n_test": len(test),
                      "downstream_accuracy": accuracy}, *queries]
    return rows


def xteval_run(root: Path, model: str, rows: list[dict], top1: str = "first-token", kind: str = "causal",
               headline: dict | None = None) -> Path:
    import polars as pl

    extraction = [r for r in rows if r["kind"] == "extraction"]
    write_parquet(root / "items.parquet", pl.DataFrame(rows, infer_schema_length=None))
    write_json(root / "results.json", {
        "schema": "kbench.results.v2", "task": "xteval", "kbench_version": "0.2.0",
        "model": {"name": model, "identity": "sha256:" + "0" * 64, "kind": kind, "dtype": "float32"},
        "dataset": {"path": str(root / "no-such-dataset"), "config": "default", "split": "test", "sha256": "1" * 64},
        "settings": {"split": "test", "limit": None, "seed": 0, "top1": top1},
        "timing": {"seconds": 1.0, "items_computed": len(rows), "items_per_second": float(len(rows))},
        "headline": {"acc_D": proportion(sum(r["correct"] for r in extraction), len(extraction)), **(headline or {})},
        "metrics": {"n_facts": len(extraction), "extraction": {"top1": d_theta_criterion(kind, top1)}},
        "items": {"file": "items.parquet", "count": len(rows)},
    })
    return root
