"""`kbench report standardize RUN_DIR... --out DIR`: KoLA standardised scores across models and tasks.

Each run directory holds one model's `results.json` for one evaluation. Its tasks are its
accuracy-like headline numbers:
  * the `headline` mapping when results.json has one (task-qualified names such as
    `truefalse:prior:dev:accuracy`, `qa:updated:em`);
  * otherwise the accuracy-like numbers among the report's headline metrics
    (`kbench.report.runs.headline_metrics`: names with "accuracy", "p_at_1", "em" or "f1"),
    prefixed with the run's task (`extraction:maple_accuracy`).
The model is the run's label (`kbench.report.runs`). Runs of several models and tasks form a
model x task matrix; `kbench.metrics.standardize` turns it into scores in [0, 100] (population
std per task, min-max over all z; see there for the zero-std rule). Two runs giving the same
model the same task is an error: the matrix would be ambiguous.

Writes `standardized.csv` (one row per model and task: raw, z, standardised), `standardized.md`
(a model x task table of standardised scores with the mean per model) and `standardized.json`.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from kbench.errors import InputError, UserError
from kbench.io import read_json, write_json, write_text
from kbench.metrics.standardize import standardized_scores, z_scores

_ACCURACY_LIKE = re.compile(r"accuracy|p_at_1|p@1|(^|_)(em|f1)$")


def run_tasks(run_dir: Path) -> tuple[str, dict[str, float]]:
    """(model label, task -> raw score) of one run directory."""
    from kbench.report.runs import headline_metrics, load_run

    run = load_run(run_dir)
    results = read_json(Path(run_dir) / "results.json")
    headline = results.get("headline")
    if isinstance(headline, dict) and headline:
        tasks = {str(k): float(v) for k, v in headline.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    else:
        tasks = {f"{run.task}:{k}": v for k, v in headline_metrics(results).items() if _ACCURACY_LIKE.search(k)}
    if not tasks:
        raise InputError(Path(run_dir) / "results.json", "no accuracy-like headline number to standardise")
    return run.label, tasks


def standardize_runs(run_dirs: list[Path], out_dir: Path) -> dict:
    """Read the runs, standardise, write CSV / markdown / JSON into `out_dir`; return the JSON content."""
    if not run_dirs:
        raise UserError("give at least one run directory")
    raw: dict[str, dict[str, float]] = {}
    source: dict[tuple[str, str], Path] = {}
    for run_dir in run_dirs:
        model, tasks = run_tasks(Path(run_dir))
        for task, value in tasks.items():
            if (model, task) in source:
                raise UserError(f"{source[(model, task)]} and {run_dir} both give {model!r} a score for {task!r}")
            source[(model, task)] = Path(run_dir)
            raw.setdefault(model, {})[task] = value
    tasks = sorted({t for per_task in raw.values() for t in per_task})
    for per_task in raw.values():
        for task in tasks:
            per_task.setdefault(task, None)
    z = z_scores(raw)
    std = standardized_scores(raw)
    models = sorted(raw)
    result = {
        "method": "KoLA: z per task with population std (0 when the std is 0), then min-max over all z into [0, 100] (50 when all z are equal)",
        "models": models, "tasks": tasks,
        "raw": raw, "z": z, "standardized": std,
        "mean_standardized": {m: _mean([std[m][t] for t in tasks]) for m in models},
        "runs": {f"{m}|{t}": str(p) for (m, t), p in sorted(source.items())},
    }
    write_text(out_dir / "standardized.csv", _csv(models, tasks, raw, z, std))
    write_text(out_dir / "standardized.md", _markdown(models, tasks, std, result["mean_standardized"]))
    write_json(out_dir / "standardized.json", result)
    return result


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _csv(models, tasks, raw, z, std) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["model", "task", "raw", "z", "standardized"])
    for m in models:
        for t in tasks:
            if raw[m][t] is not None:
                writer.writerow([m, t, repr(raw[m][t]), repr(z[m][t]), repr(std[m][t])])
    return buffer.getvalue()


def _markdown(models, tasks, std, means) -> str:
    lines = ["# Standardised scores (KoLA)", "",
             "z per task over models (population std), then min-max over all z into [0, 100].", "",
             "| model | " + " | ".join(tasks) + " | mean |", "|---|" + "---:|" * (len(tasks) + 1)]
    for m in models:
        lines.append(f"| {m} | " + " | ".join(_fmt(std[m][t]) for t in tasks) + f" | {_fmt(means[m])} |")
    return "\n".join(lines) + "\n"
