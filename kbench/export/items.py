"""A dataset split as the documents of an exported task, prompted exactly as `kbench evaluate` does.

A task that can be exported says how in its own `kbench/tasks/<name>/export.py`: a `TaskExport`
registered in `EXPORTS` under the task's name. It names the parquet columns that mark its datasets,
turns a split into documents, and gives the harness-specific pieces (lm-eval's output type and
scoring, Inspect's task file). This frame finds the task a dataset belongs to by its columns and
leaves everything task-specific to it.

The documents carry everything a harness needs (prompt, stop strings, answers, label, pair) and
what a reader wants to see beside a score (relation, subject, book). The dataset's construction
protocol (`manifest.json` `protocol`, docs/protocol.md) travels with them: None when the manifest
records none ("not recorded"), a `UserError` naming the manifest and key when it is malformed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kbench.dataset import split_path
from kbench.errors import InputError, UserError
from kbench.io import read_json
from kbench.protocol import ProtocolRecord, read_protocol
from kbench.registry import Registry


@dataclass(frozen=True)
class ExportSpec:
    split: str | None = None  # None: the split `kbench evaluate` reads by default
    config: str | None = None
    prompt: str = "cloze"
    fewshot: int = 0
    limit: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class ExportDocs:
    task: str  # the task that judges the documents (its name in EXPORTS)
    split: str
    source: Path  # the parquet file the documents come from
    docs: list[dict]
    protocol: ProtocolRecord | None = None  # how the dataset was built (None: not recorded)


class TaskExport(Protocol):
    """What a task offers `kbench export`."""

    columns: frozenset[str]  # parquet columns that mark the task's datasets
    rows: str  # those rows as a reader knows them, for the error that lists what exports
    default_split: str  # the split `kbench evaluate <task>` reads by default
    lmeval_imports: tuple[str, ...]  # import lines the lm-eval scoring code needs (stdlib only)
    inspect_refusal: str | None  # why Inspect cannot judge these rows as kbench does (None: it can)

    def docs(self, path: Path, dataset: Path, spec: ExportSpec) -> list[dict]:
        """The documents of the split file `path` of `dataset`."""

    def lmeval_name_parts(self, prompt: str) -> list[str]:
        """What the default lm-eval task name adds after kbench_<dataset>_<split>."""

    def check_lmeval(self, prompt: str) -> None:
        """Refuse (UserError) a prompt form lm-eval cannot run as kbench does."""

    def lmeval_scoring(self, case_sensitive: bool) -> str:
        """utils.py's scoring code: `process_results` and any aggregation, after the document loader."""

    def lmeval_yaml(self, docs: ExportDocs) -> str:
        """The task YAML's output type, requests and metric list."""

    def inspect_source(self, docs: ExportDocs, name: str, data_file: str, case_sensitive: bool) -> str:
        """The Inspect task file (only when `inspect_refusal` is None)."""


EXPORTS: Registry[type[TaskExport]] = Registry("exportable task", package="kbench.tasks", home="{package}.{name}.export")


def dataset_protocol(dataset: Path) -> ProtocolRecord | None:
    """The construction protocol a built dataset's manifest records (None: no manifest or no block)."""
    manifest = dataset / "manifest.json"
    if not manifest.is_file():
        return None
    document = read_json(manifest)
    if not isinstance(document, dict):
        raise InputError(manifest, "expected a JSON object")
    return read_protocol(document, str(manifest))


def dataset_task(dataset: Path, config: str | None) -> str:
    """The task whose rows the dataset holds (its name in EXPORTS)."""
    import polars as pl

    data = dataset / "data"
    files = sorted(data.glob(f"{config or '*'}/*.parquet")) if data.is_dir() else []
    if not files:
        split_path(dataset, "test", config)  # raises the precise error (not a dataset, unknown config)
    try:
        columns = set(pl.read_parquet_schema(files[0]).keys())
    except Exception as exc:  # polars raises several error types for a damaged file
        raise InputError(files[0], f"cannot read parquet: {exc}") from exc
    exports = _exports()
    for name, export in exports.items():
        if export.columns <= columns:
            return name
    known = " nor ".join(export.rows for export in exports.values())
    raise InputError(files[0], f"neither {known}; only these datasets export")


def _exports() -> dict[str, type[TaskExport]]:
    """Every task's export, importing only the tasks that have an `export.py` (listing the whole registry
    would import every task's modules, torch with them: seconds for a command that needs none of it)."""
    import kbench.tasks

    folder = Path(kbench.tasks.__file__).parent
    names = sorted(p.parent.name for p in folder.glob("*/export.py"))
    return {name: EXPORTS.get(name) for name in names}


def exporter(task: str) -> TaskExport:
    return EXPORTS.get(task)()


def export_docs(dataset: Path, spec: ExportSpec) -> ExportDocs:
    """The documents of `spec.split` (default: the split `kbench evaluate` reads) of `dataset`."""
    if not dataset.is_dir():
        raise UserError(f"{dataset} is not a folder; give a dataset folder built by `kbench build`")
    name = dataset_task(dataset, spec.config)
    task = exporter(name)
    split = spec.split or task.default_split
    path = split_path(dataset, split, spec.config)
    docs = task.docs(path, dataset, spec)
    if not docs:
        raise UserError(f"{path}: the split is empty; nothing to export")
    return ExportDocs(name, split, path, docs, dataset_protocol(dataset))
