"""Synthetic XTEVAL suite cells for the claim tests: query rows as the task writes them (run seeds,
setting, fact and relation), and results.json metrics computed from them by the task's own code
(`aggregate_setting`, `gap_figures`, `downstream_headline`), so a claim statistic reads what a run
of `kbench evaluate xteval` would hold."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from kbench.tasks.xteval.aggregate import aggregate_setting
from kbench.tasks.xteval.gaps import gap_figures
from kbench.tasks.xteval.headline import downstream_headline


def query(setting: str, relation: str, fact: str, correct: bool, split: int = 0, finetune: int = 0, n: int = 0) -> dict:
    key = f"{setting}/e0-s{split}-f{finetune}"
    return {"id": f"{key}/q{n}", "kind": "query", "run": key, "setting": setting, "extraction_seed": 0, "split_seed": split,
            "finetune_seed": finetune, "fact_id": fact, "relation": relation, "correct": correct}  # fmt: skip


def numbered(rows: list[dict]) -> list[dict]:
    """Each run's queries numbered q0, q1, ... as the task numbers its test split."""
    seen: dict[str, int] = {}
    for row in rows:
        seen[row["run"]] = seen.get(row["run"], -1) + 1
        row["id"] = f"{row['run']}/q{seen[row['run']]}"
    return rows


def summary(rows: list[dict], known: int = 30, probed: int = 100) -> tuple[dict, dict]:
    """The task's (headline, metrics) of one extraction seed with `known` of `probed` facts and these
    query rows."""
    settings = sorted({r["setting"] for r in rows})
    per_setting = {}
    for setting in settings:
        runs: dict[tuple, list[bool]] = {}
        for r in rows:
            if r["setting"] == setting:
                runs.setdefault((r["split_seed"], r["finetune_seed"]), []).append(r["correct"])
        figures = [
            {"extraction_seed": 0, "split_seed": s, "finetune_seed": f, "chance_accuracy": 0.02,
             **gap_figures(known / probed, sum(v) / len(v))}
            for (s, f), v in sorted(runs.items())
        ]  # fmt: skip
        per_setting[setting] = {**aggregate_setting(figures), "runs": figures}
    headline, differences = downstream_headline(rows, {0: (known, probed)}, settings, 0)
    seeds = [{"seed": 0, "acc_D": known / probed, "n_known": known, "n_probed": probed, "n_unreadable": 0, "n_untrained": 0}]
    return headline, {"extraction": {"seeds": seeds}, "settings": per_setting, **differences}


def write_cell(root: Path, model: str, entry: str, rows: list[dict], settings: dict | None = None, **known) -> dict:
    """A done cell of `model` for the suite's task entry `entry` (dataset "lama"); its suite.json row."""
    key = f"{model}__{entry}__lama"
    folder = root / "cells" / key
    folder.mkdir(parents=True)
    headline, metrics = summary(rows, **known)
    items = {"file": "items.parquet", "count": len(rows)}
    results = {"schema": "kbench.results.v2", "task": "xteval", "model": {"name": model}, "headline": headline,
               "settings": settings or {}, "metrics": metrics, "items": items}  # fmt: skip
    (folder / "results.json").write_text(json.dumps(results))
    pl.DataFrame(rows).write_parquet(folder / "items.parquet")
    return {key: {"model": model, "task": entry, "dataset": "lama", "status": "done", "run_dir": f"cells/{key}"}}


def write_suite(root: Path, cells: dict, entries: list[str], models: dict[str, int] | None = None) -> Path:
    """suite.json over the cells: the xteval task entries, and the model table with parameter counts."""
    table = {m: {"model": f"org/{m}", "parameters": p} for m, p in (models or {}).items()}
    suite = {"suite": {"name": "constructed"}, "tasks": [{"task": "xteval", "name": e} for e in entries]}
    (root / "suite.json").write_text(json.dumps({"schema": "kbench.suite.v1", "suite": suite, "cells": cells, "models": table}))
    return root
