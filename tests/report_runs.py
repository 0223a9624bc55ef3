"""Run folders for the report tests, built from the real LAMA T-REx facts in ../shared/data.

`lama_items` takes facts round-robin over the first relations (sorted by id), with their labels
from LAMA's relations.jsonl; `extraction_run` writes them as a v2 run folder (items.parquet plus
a results.json shaped as docs/results-envelope.md, its Estimates computed from the items with
kbench.metrics.uncertainty). A model's predictions are decided by a deterministic rule on the
item's position, so two "models" disagree on known items.
"""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import zip_longest
from pathlib import Path

from kbench.io import write_json, write_parquet
from kbench.metrics.uncertainty import macro_mean, mean, proportion_of

BINS = ("head", "torso", "tail")


def relation_labels(shared_data: Path) -> dict[str, str]:
    lines = (shared_data / "lama_trex/relations.jsonl").read_text().splitlines()
    return {r["relation"]: r["label"] for r in map(json.loads, lines)}


def lama_items(shared_data: Path, n: int = 300, relations: int = 6, with_labels: bool = True) -> list[dict]:
    labels = relation_labels(shared_data)
    chosen = sorted(p.stem for p in (shared_data / "lama_trex/TREx").glob("P*.jsonl"))[:relations]
    facts = {r: [json.loads(line) for line in (shared_data / f"lama_trex/TREx/{r}.jsonl").read_text().splitlines()]
             for r in chosen}
    # round-robin over the relations, skipping those that ran out of facts
    pool = [pair for group in zip_longest(*[[(r, f) for f in facts[r]] for r in chosen]) for pair in group if pair]
    if n > len(pool):
        raise ValueError(f"only {len(pool)} facts in the first {relations} relations")
    items = []
    for i, (relation, fact) in enumerate(pool[:n]):
        items.append({"id": f"test-{i}", "relation": relation, "relation_label": labels[relation] if with_labels else "",
                      "subject": fact["sub_label"], "object": fact["obj_label"],
                      "answers": [fact["obj_label"], fact["obj_label"].lower()],
                      "prompt": f"{fact['sub_label']} [{relation}]", "frequency_bin": BINS[i % 3]})
    return items


def predict(items: list[dict], every: int) -> list[dict]:
    """A model that knows every `every`-th fact (and answers 'unknown' otherwise)."""
    rows = []
    for i, item in enumerate(items):
        known = i % every == 0
        rows.append({**item, "prediction": item["object"] if known else "unknown", "correct": known, "exact": known,
                     "gold_rank": 1 if known else 2 + i % 50, "gold_logprob": -0.5 if known else -4.0 - i % 7})
    return rows


def _summary(rows: list[dict]) -> dict:
    return {"maple_accuracy": proportion_of([r["correct"] for r in rows]),
            "exact_accuracy": proportion_of([r["exact"] for r in rows]),
            "mean_gold_logprob": mean([r["gold_logprob"] for r in rows], resamples=200)}


def extraction_run(root: Path, model: str, rows: list[dict]) -> Path:
    import polars as pl

    by_relation, by_bin = defaultdict(list), defaultdict(list)
    for r in rows:
        by_relation[r["relation"]].append(r)
        by_bin[r["frequency_bin"]].append(r)
    headline = {**_summary(rows), "lama_p_at_1": macro_mean({k: [float(r["gold_rank"] == 1) for r in v]
                                                             for k, v in by_relation.items()}, resamples=200)}
    write_parquet(root / "items.parquet", pl.DataFrame(rows))
    write_json(root / "results.json", {
        "schema": "kbench.results.v2", "task": "extraction", "kbench_version": "0.2.0",
        "model": {"name": model, "identity": "sha256:" + "0" * 64, "kind": "causal", "dtype": "float32"},
        "dataset": {"path": str(root / "no-such-dataset"), "config": "default", "split": "test", "sha256": "1" * 64},
        "settings": {"split": "test", "limit": None, "prompt": "cloze", "seed": 0},
        "timing": {"seconds": 1.0, "items_computed": len(rows), "items_per_second": float(len(rows))},
        "headline": headline,
        "metrics": {"per_relation": {k: _summary(v) for k, v in sorted(by_relation.items())},
                    "per_frequency_bin": {k: _summary(v) for k, v in sorted(by_bin.items())}},
        "items": {"file": "items.parquet", "count": len(rows)},
    })
    return root
