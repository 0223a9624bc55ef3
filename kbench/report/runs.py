"""Read evaluation run directories into the few shapes the report draws.

A run directory holds `results.json` (aggregates, written by `kbench evaluate <task>`) and per-item
tables. The report needs, per run:

  * a label: `model` (a string, or a dict with `name`/`id`/`path`) and `task`;
  * `headline`: the scalar metrics at the top level or under `overall` / `headline` / `metrics`
    (numbers only: maple_accuracy, exact_accuracy, lama_p_at_1, accuracy, em, f1 ...);
  * `per_relation` and `per_bin`: metric tables keyed by relation id / frequency bin, found under
    `per_relation` / `by_relation` and `per_bin` / `per_frequency_bin` / `by_bin`; a value is a
    number or a summary dict, read through its first of `maple_accuracy`, `accuracy`, `acc`,
    `p_at_1`, `em`, ... (the extraction summaries of results.extraction.v1);
  * `techniques` (KEE): results.kee.v1 lists technique names in `techniques` and keeps each one's
    metrics under `overall.<name>` and `per_frequency_bin.<bin>.<name>`; a dict name -> metrics or
    a list of dicts with `name`/`technique` is read too. Nested metrics become flat columns
    ("prs improved", "SGR τ=0.7");
  * `gaps` (XTEVAL): acc_D, downstream_accuracy, usable_knowledge, gap1, gap2 per setting: under
    `settings.<iid|ood>` (results.xteval.v1), or at the top level / under `gaps` / `overall` (one
    unnamed setting); a {"mean", "std", ...} value is read as its mean and std.

When results.json has no per-relation or per-bin table but a per-item table has `correct` plus
`relation` / `frequency_bin` columns, the tables are computed from the items (mean of `correct`).
Unknown keys are ignored; a run with nothing to draw is an error naming its results.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import InputError, UserError
from kbench.io import read_json

GAP_KEYS = ("acc_D", "downstream_accuracy", "usable_knowledge", "gap1", "gap2")
VALUE_KEYS = ("maple_accuracy", "accuracy", "acc", "p_at_1", "p@1", "em", "exact_match", "score", "mean")
_RELATION_KEYS = ("per_relation", "by_relation", "relations")
_BIN_KEYS = ("per_bin", "per_frequency_bin", "by_bin", "by_frequency_bin", "frequency_bins")
_TECHNIQUE_KEYS = ("techniques", "per_technique", "by_technique")
BIN_ORDER = ("head", "torso", "tail")


@dataclass
class RunSummary:
    path: Path
    label: str
    task: str
    headline: dict[str, float] = field(default_factory=dict)
    per_relation: dict[str, float] = field(default_factory=dict)
    per_bin: dict[str, float] = field(default_factory=dict)
    techniques: list[dict[str, Any]] = field(default_factory=list)        # {"technique": name, column: value}
    technique_bins: dict[str, dict[str, float]] = field(default_factory=dict)  # technique -> bin -> accuracy
    gaps: dict[str, dict[str, float]] = field(default_factory=dict)     # setting ("" if unnamed) -> figures
    gap_std: dict[str, dict[str, float]] = field(default_factory=dict)  # the same, std over seeds

    def is_empty(self) -> bool:
        return not (self.headline or self.per_relation or self.per_bin or self.techniques or self.gaps)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        for key in VALUE_KEYS:
            if key in value and (n := _number(value[key])) is not None:
                return n
    return None


def _table(results: dict[str, Any], keys: tuple[str, ...]) -> dict[str, float]:
    for key in keys:
        raw = results.get(key)
        if isinstance(raw, dict):
            return {str(k): n for k, v in raw.items() if (n := _number(v)) is not None}
        if isinstance(raw, list):  # [{"relation": "P19", "accuracy": 0.3}, ...]
            out = {}
            for row in raw:
                if isinstance(row, dict):
                    name = next((row[k] for k in ("relation", "bin", "frequency_bin", "name") if k in row), None)
                    if name is not None and (n := _number(row)) is not None:
                        out[str(name)] = n
            return out
    return {}


def _label(results: dict[str, Any], path: Path) -> str:
    model = results.get("model")
    if isinstance(model, dict):
        model = model.get("name") or model.get("id") or model.get("path")
    return str(model) if model else path.name


def flatten_metrics(metrics: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested metric dicts as flat columns; `beyond_sampling.<τ>.<rate>` reads as "SGR τ=0.7"."""
    flat: dict[str, Any] = {}
    for key, value in metrics.items():
        if key in ("technique", "name"):
            continue
        if key == "beyond_sampling" and isinstance(value, dict):
            for temp, rates in value.items():
                for rate, v in (rates or {}).items():
                    flat[f"{rate.upper() if rate in ('sgr', 'dgr') else rate} τ={temp}"] = v
        elif isinstance(value, dict) and "mean" not in value:
            flat.update(flatten_metrics(value, f"{prefix}{key} "))
        elif value is None or isinstance(value, (int, float, dict)) and not isinstance(value, bool):
            flat[f"{prefix}{key}"] = value
    return flat


def _techniques(results: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, dict[str, float]]]:
    names = results.get("techniques")
    overall = results.get("overall")
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names) and isinstance(overall, dict):
        rows = [{"technique": n, **flatten_metrics(overall.get(n) or {})} for n in names]
        bins = results.get("per_frequency_bin") or {}
        per_bin = {n: {str(b): acc for b, slice_ in bins.items() if isinstance(slice_, dict)
                       and (acc := _number(slice_.get(n))) is not None} for n in names}
        return rows, {n: v for n, v in per_bin.items() if v}
    for key in _TECHNIQUE_KEYS:
        raw = results.get(key)
        if isinstance(raw, dict):
            return [{"technique": n, **(flatten_metrics(v) if isinstance(v, dict) else {"value": v})}
                    for n, v in raw.items()], {}
        if isinstance(raw, list):
            return [{"technique": r.get("technique") or r.get("name") or f"#{i}", **flatten_metrics(r)}
                    for i, r in enumerate(raw) if isinstance(r, dict)], {}
    return [], {}


def _gap_figures(scope: Any) -> tuple[dict[str, float], dict[str, float]]:
    """(values, standard deviations) of the XTEVAL figures in one dict; {"mean", "std"} gives both."""
    if not isinstance(scope, dict):
        return {}, {}
    found = {k: n for k in GAP_KEYS if (n := _number(scope.get(k))) is not None}
    std = {k: float(scope[k]["std"]) for k in found
           if isinstance(scope[k], dict) and isinstance(scope[k].get("std"), (int, float))}
    return found, std


def _gaps(results: dict[str, Any]) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    settings = results.get("settings")
    if isinstance(settings, dict):
        per_setting = {name: _gap_figures(scope) for name, scope in settings.items()}
        per_setting = {name: figs for name, figs in per_setting.items() if figs[0]}
        if per_setting:
            return {n: f[0] for n, f in per_setting.items()}, {n: f[1] for n, f in per_setting.items()}
    for scope in (results.get("gaps"), results.get("overall"), results):
        found, std = _gap_figures(scope)
        if found:
            return {"": found}, {"": std}
    return {}, {}


def headline_metrics(results: dict[str, Any]) -> dict[str, float]:
    out = {}
    for scope in (results, results.get("overall"), results.get("headline"), results.get("metrics")):
        if isinstance(scope, dict):
            # counts (n, n_facts), seeds and versions are sizes and labels, not scores
            out.update({k: float(v) for k, v in scope.items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool)
                        and k not in ("seed", "n", "version") and not k.startswith("n_")})
    return out


def _from_items(run_dir: Path, column: str) -> dict[str, float]:
    """Mean of `correct` by `column` over the run's per-item parquet tables, when they have both."""
    import polars as pl

    for path in sorted(run_dir.glob("*.parquet")):
        schema = pl.read_parquet_schema(path)
        if "correct" in schema and column in schema:
            frame = pl.read_parquet(path, columns=[column, "correct"]).drop_nulls(column)
            grouped = frame.group_by(column).agg(pl.col("correct").cast(pl.Float64).mean()).sort(column)
            return {str(k): float(v) for k, v in grouped.iter_rows()}
    return {}


def load_run(run_dir: str | Path) -> RunSummary:
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a run directory")
    results = read_json(path)
    if not isinstance(results, dict):
        raise InputError(path, "expected a JSON object")
    run = RunSummary(
        path=run_dir, label=_label(results, run_dir), task=str(results.get("task", "evaluation")),
        headline=headline_metrics(results), per_relation=_table(results, _RELATION_KEYS) or _from_items(run_dir, "relation"),
        per_bin=_table(results, _BIN_KEYS) or _from_items(run_dir, "frequency_bin"),
    )
    run.techniques, run.technique_bins = _techniques(results)
    run.gaps, run.gap_std = _gaps(results)
    if run.is_empty():
        raise InputError(path, "no metrics the report can show (see kbench/report/runs.py for the keys it reads)")
    return run


def unique_labels(runs: list[RunSummary]) -> list[str]:
    """Labels that tell runs apart: the model name, plus the folder name when two runs share it."""
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.label] = counts.get(r.label, 0) + 1
    return [f"{r.label} ({r.path.name})" if counts[r.label] > 1 else r.label for r in runs]


def order_bins(bins: set[str]) -> list[str]:
    return sorted(bins, key=lambda b: (BIN_ORDER.index(b) if b in BIN_ORDER else len(BIN_ORDER), b))
