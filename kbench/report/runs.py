"""Read evaluation run directories for the report: the results envelope, nothing else.

A run directory holds `results.json` and the per-item table (`items.parquet` / `items.jsonl`).
`load_run` reads `results.json`:
  * `kbench.results.v2` (docs/results-envelope.md) is read as is: `task`, `model.name`,
    `headline` ({metric: Estimate}) and `metrics` (task-specific);
  * a v1 file (`results.<task>.v1`) is first converted by its task's adapter (`legacy.py`).

The report never guesses key names inside `metrics`; it reads them by shape (`metric_tables`):
a mapping {row: {metric: Estimate | nested metrics}} is a table, a mapping of such tables (KEE's
per-bin technique tables) is a list of tables. Two names carry meaning: `per_relation` (rows are
relation ids, shown with their labels) and `per_frequency_bin` (rows are bins, shown head, torso,
tail). A run's primary metric (its task's `primary_metric`) is what the charts draw.

A run's `protocol` block (docs/protocol.md) is read and checked here: a malformed block is a
`UserError` naming the file and the key, raised before the report writes anything; a file without
one (older, or converted from v1) has `protocol` None, shown as "protocol not recorded".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import InputError, UserError
from kbench.io import read_json
from kbench.protocol import ProtocolRecord, read_protocol
from kbench.report.legacy import to_v2

V2 = "kbench.results.v2"
BIN_ORDER = ("head", "torso", "tail", "unbinned")


def task_class(task: str):
    """The evaluation task a run names (None for a task this kbench does not know)."""
    from kbench.errors import UserError
    from kbench.evaluate.task import TASKS

    try:
        return TASKS.get(task)
    except UserError:
        return None


def primary_metrics() -> dict[str, tuple[str, ...]]:
    """task -> the headline metrics that stand for its runs, as each task declares
    (results.json is written with sorted keys, so the headline's order cannot say it)."""
    from kbench.evaluate.task import TASKS

    return {name: cls.primary_metric for name, cls in TASKS.items().items()}


def is_estimate(value: Any) -> bool:
    return isinstance(value, dict) and "value" in value and "n" in value


def leaves(metrics: dict, prefix: str = "") -> dict[str, Any]:
    """Nested metrics as flat columns: {"prs": {"improved": E}} -> {"prs improved": E}; Estimates
    and plain numbers are leaves, strings and lists are not shown."""
    flat: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if is_estimate(value) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            flat[name] = value
        elif isinstance(value, dict) and "p_value" in value and "b" in value:  # a paired test (uncertainty.mcnemar)
            flat.update({f"{name} b": value["b"], f"{name} c": value["c"], f"{name} p": value["p_value"]})
        elif isinstance(value, dict):
            flat.update(leaves(value, name + " "))
    return flat


def _is_table(value: Any) -> bool:
    """{row: {metric: ...}} with at least one Estimate, rows themselves not tables."""
    if not isinstance(value, dict) or not value:
        return False
    rows = list(value.values())
    if not all(isinstance(r, dict) and not is_estimate(r) for r in rows):
        return False
    if any(_is_table(r) for r in rows):
        return False
    return any(is_estimate(v) for r in rows for v in leaves(r).values())


# results.json is written with sorted keys: the tables a reader looks at first come first
_FIRST_TABLES = ("per_technique", "per_relation", "per_frequency_bin")


def _table_rank(key: str) -> tuple[int, str]:
    return (_FIRST_TABLES.index(key) if key in _FIRST_TABLES else len(_FIRST_TABLES), key)


def metric_tables(metrics: dict) -> list[tuple[str, str, dict[str, dict[str, Any]]]]:
    """(title, kind, {row: {column: leaf}}) for every table in `metrics` (technique, relation and
    bin tables first, then by name); `kind` is
    the top-level key (per_relation, per_frequency_bin, ...), "" for the inner tables of a mapping
    of tables. A mapping of metrics that is not a
    table (KEE's edited preference, truefalse's before/after) becomes a one-row table."""
    out = []
    for key, value in sorted(metrics.items(), key=lambda kv: _table_rank(kv[0])):
        if _is_table(value):
            out.append((key, key, {str(r): leaves(m) for r, m in value.items()}))
        elif isinstance(value, dict) and value and all(_is_table(v) for v in value.values()):
            # rows of the inner tables are not the outer key's kind (KEE: techniques within a bin)
            out += [(f"{key}: {sub}", "", {str(r): leaves(m) for r, m in table.items()}) for sub, table in value.items()]
        elif isinstance(value, dict) and any(is_estimate(v) for v in leaves(value).values()):
            out.append((key, key, {key: leaves(value)}))
    return out


@dataclass
class Run:
    path: Path
    results: dict  # the v2 envelope (converted when the file was v1)
    label: str = ""  # set by `load_runs`: tells runs apart
    protocol: ProtocolRecord | None = None  # None: not recorded (never read as faithful)
    relation_labels: dict[str, str] = field(default_factory=dict)
    labels_source: str = "none"

    @property
    def task(self) -> str:
        return str(self.results["task"])

    @property
    def model_name(self) -> str:
        name = str(self.results["model"].get("name") or self.path.name)
        return Path(name).name if "/" in name else name  # a local folder: its name, not the whole path

    @property
    def headline(self) -> dict[str, dict]:
        return {k: v for k, v in self.results["headline"].items() if is_estimate(v)}

    @property
    def metrics(self) -> dict:
        return self.results.get("metrics") or {}

    @property
    def primary(self) -> str | None:
        """The task's `primary_metric` when the headline has it (XTEVAL prefixes it with its setting:
        `iid_usable_knowledge` before `ood_...`), else the first headline metric."""
        cls = task_class(self.task)
        preferred = cls.primary_metric if cls else ()
        prefixed = sorted(k for k in self.headline for p in preferred if k.endswith(f"_{p}") and "_minus_" not in k)
        candidates = [*preferred, *prefixed]  # a difference (iid_minus_ood_...) never stands for a run
        return next((k for k in candidates if k in self.headline), next(iter(self.headline), None))

    @property
    def outcome_columns(self) -> tuple[str, ...]:
        """The per-item columns holding the 0/1 outcome, as the run's task declares."""
        cls = task_class(self.task)
        return cls.outcome_columns if cls else ("correct",)

    def table(self, name: str) -> dict[str, dict[str, Any]]:
        """A flat table of `metrics[name]` ({} when absent or not flat, as KEE's per-bin tables)."""
        value = self.metrics.get(name)
        return {str(r): leaves(m) for r, m in value.items()} if _is_table(value) else {}

    def relation_name(self, relation: str) -> str:
        label = self.relation_labels.get(relation)
        return f"{relation} · {label}" if label else relation


def load_run(run_dir: str | Path) -> Run:
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a run directory")
    results = read_json(path)
    if not isinstance(results, dict):
        raise InputError(path, "expected a JSON object")
    if results.get("schema") != V2:
        results = to_v2(results, path)
    for key, kind in (("task", str), ("model", dict), ("headline", dict)):
        if not isinstance(results.get(key), kind):
            raise InputError(path, f"expected {kind.__name__} (see docs/results-envelope.md)", key=key)
    if not isinstance(results.get("metrics", {}), dict):
        raise InputError(path, "expected an object (see docs/results-envelope.md)", key="metrics")
    run = Run(run_dir, results, protocol=read_protocol(results, str(path)))
    if not run.headline and not metric_tables(run.metrics):
        raise InputError(path, "no metrics the report can show: `headline` and `metrics` hold no Estimates")
    return run


def load_runs(run_dirs: list[Path]) -> list[Run]:
    """Read the runs and give each a label: the model name, plus the folder name when two share it."""
    runs = [load_run(d) for d in run_dirs]
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.model_name] = counts.get(r.model_name, 0) + 1
    for r in runs:
        r.label = f"{r.model_name} ({r.path.name})" if counts[r.model_name] > 1 else r.model_name
    return runs


def order_bins(bins) -> list[str]:
    return sorted(bins, key=lambda b: (BIN_ORDER.index(b) if b in BIN_ORDER else len(BIN_ORDER), b))
