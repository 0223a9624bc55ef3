"""`kbench report standardize RUN_DIR... --out DIR`: KoLA standardised scores across models and tasks.

Each run directory holds one model's results for one evaluation, and counts as ONE task with ONE
score: its task's primary headline metric (the task's `primary_metric`). Several
correlated numbers of one run (extraction's MAPLE, exact and rank-1 accuracies) would otherwise
weigh as several tasks.

  extraction  maple_accuracy   what the model knows: generated answer matches gold or an alias (lama_p_at_1
                               under --protocol lama)
  kee         accuracy         the greedy baseline's accuracy (techniques are compared in the KEE report)
  truefalse   accuracy         LEFT's per-statement accuracy; the task is named per setting and split
                               (truefalse:prior:dev), as the settings are different tasks
  qa          updated_em       EM against the new answer of edited facts: is the update known
  xteval      usable_knowledge share of facts both extracted and used downstream

A task not listed (or a run without that metric) counts with its first headline metric (a strict
LAMA extraction run counts with `lama_p_at_1`, an XTEVAL run with its first setting's usable
knowledge). The model is the run's model name (`kbench.report.runs`). Runs of several models and tasks form a model x
task matrix; `kbench.metrics.standardize` turns it into scores in [0, 100] (population std per
task, min-max over all z; see there for the zero-std rule). Two runs giving the same model the
same task is an error: the matrix would be ambiguous.

Writes `standardized.csv` (one row per model and task: raw, z, standardised), `standardized.md`
(a model x task table of standardised scores with the mean per model) and `standardized.json`.
Each score's protocol (docs/protocol.md) goes with it: the JSON and the markdown list every run's
("faithful to NAME", "N deviations from NAME", "protocol not recorded") and, per task, the protocol
differences that make its models' scores not like for like (a z over them mixes procedures).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from kbench.errors import InputError, UserError
from kbench.evaluate.departures import SAMPLE_LIMIT
from kbench.io import write_json, write_text
from kbench.metrics.standardize import standardized_scores, z_scores
from kbench.protocol import ProtocolRecord, comparison_differences, describe
from kbench.report.runs import Run, load_run, primary_metrics, task_class


def task_name(run) -> str:
    """The task a run's score is filed under, as its task names it (`Task.standard_name`: LEFT's
    settings and splits are different tasks)."""
    cls = task_class(run.task)
    return cls().standard_name(run) if cls is not None else run.task


def run_scores(run: Run) -> tuple[str, dict[str, float]]:
    """(model label, {task: raw score}) of one run: one task, one score."""
    metric = run.primary
    value = run.headline[metric]["value"] if metric else None
    if value is None:
        raise InputError(run.path / "results.json", "no headline number to standardise", key="headline")
    return run.model_name, {f"{task_name(run)}:{metric}": float(value)}


def standardize_runs(run_dirs: list[Path], out_dir: Path) -> dict:
    """Read the runs, standardise, write CSV / markdown / JSON into `out_dir`; return the JSON content."""
    if not run_dirs:
        raise UserError("give at least one run directory")
    raw: dict[str, dict[str, float]] = {}
    source: dict[tuple[str, str], Path] = {}
    protocols: dict[str, dict[str, ProtocolRecord | None]] = {}  # task -> model -> its run's protocol
    for run in [load_run(Path(d)) for d in run_dirs]:  # every file checked before anything is written
        model, tasks = run_scores(run)
        for task, value in tasks.items():
            if (model, task) in source:
                raise UserError(f"{source[(model, task)]} and {run.path} both give {model!r} a score for {task!r}")
            source[(model, task)] = run.path
            raw.setdefault(model, {})[task] = value
            protocols.setdefault(task, {})[model] = run.protocol
    tasks = sorted({t for per_task in raw.values() for t in per_task})
    for per_task in raw.values():
        for task in tasks:
            per_task.setdefault(task, None)
    z = z_scores(raw)
    std = standardized_scores(raw)
    models = sorted(raw)
    result = {
        "method": "KoLA: z per task with population std (0 when the std is 0), "
        "then min-max over all z into [0, 100] (50 when all z are equal)",
        "metric_per_task": {**primary_metrics(), "other tasks": "the first headline metric"},
        "models": models,
        "tasks": tasks,
        "raw": raw,
        "z": z,
        "standardized": std,
        "mean_standardized": {m: _mean([std[m][t] for t in tasks]) for m in models},
        "runs": {f"{m}|{t}": str(p) for (m, t), p in sorted(source.items())},
        "protocols": {f"{m}|{t}": describe(protocols[t][m]) for (m, t) in sorted(source)},
        # task -> why its models' scores are not like for like (tasks whose runs agree are absent)
        "not_like_for_like": {
            t: lines
            for t in tasks
            if len(protocols[t]) > 1 and (lines := comparison_differences(protocols[t], same_items=(SAMPLE_LIMIT,)))
        },
    }
    write_text(out_dir / "standardized.csv", _csv(models, tasks, raw, z, std))
    markdown = _markdown(models, tasks, std, result["mean_standardized"]) + _protocols_markdown(result)
    write_text(out_dir / "standardized.md", markdown)
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
    lines = [
        "# Standardised scores (KoLA)",
        "",
        "z per task over models (population std), then min-max over all z into [0, 100].",
        "",
        "| model | " + " | ".join(tasks) + " | mean |",
        "|---|" + "---:|" * (len(tasks) + 1),
    ]
    for m in models:
        lines.append(f"| {m} | " + " | ".join(_fmt(std[m][t]) for t in tasks) + f" | {_fmt(means[m])} |")
    return "\n".join(lines) + "\n"


def _protocols_markdown(result: dict) -> str:
    lines = ["", "## Protocols", ""]
    lines += [f"- {run.replace('|', ' on ')}: {text}" for run, text in result["protocols"].items()]
    for task, differences in result["not_like_for_like"].items():
        lines += ["", f"**{task}: not like for like**, the runs' protocols differ:", ""]
        lines += [f"- {line}" for line in differences]
    return "\n".join(lines) + "\n"
