"""The one shape of an evaluation task (in the spirit of inspect_ai's `Task`).

A task is a folder, `kbench/tasks/<name>/`, whose `task.py` registers a `Task` subclass; the folder
gives the task its name (docs/adding-a-task.md walks through a minimal one):

    @TASKS.register()                          # in kbench/tasks/extraction/task.py: the task "extraction"
    class Extraction(Task):
        # its docstring: the help of `kbench evaluate extraction`
        Settings = ExtractionSettings          # pydantic, extra="forbid": every option, with its default

        def needs(self, settings) -> {who: capabilities}   # what the model must offer (checked first)
        def plan(self, ctx) -> Plan                    # load items; cut them into units; Plan.state
        def score(self, ctx, state, unit) -> rows      # run the model over one unit; one row per item
        def aggregate(self, ctx, state, rows) -> Summary   # rows (plan order) -> headline + metrics
        def finish(self, ctx, state, rows, results)    # optional: extra files (known facts, plots)
        def report_section(self, run) -> str           # optional: HTML of its own for `kbench report`
        (and report_files, report_charts, explorer_table, compare_runs: the rest of its report)

What the folder holds instead of declarations: `schema.json`, the metrics' JSON Schema (the
shipped tasks publish theirs as `kbench/schemas/results.<name>.v2.json`); `cli.py`, only when the
command needs options its Settings cannot give (else `kbench evaluate <name>` is generated from
Settings, with the class docstring as its help); `legacy.py`, whose `from_v1` reads the task's v1
`results.json` (`kbench.report.legacy`).

Contracts:
- `needs(settings)` names, per task or technique ("task truefalse", "technique caa"), the
  `Capability`s it needs from the model under those settings; the engine refuses a model that
  lacks one before it loads a single item (`kbench.models.interface.require`, exit code 2).
- `plan` is a pure function of the dataset, the settings and the model: the units it returns
  (and their order) never depend on what a previous, interrupted run already computed. This is
  what makes a resumed run bit-identical to an uninterrupted one. What later steps need from the
  plan (the sampled rows, fitted contexts, candidate ids) travels as `Plan.state`, a value the
  engine hands to every later call; a task keeps nothing on `self`.
- `score(ctx, state, unit)` returns one dict per unit item, each with a unique "id", and must depend
  only on the unit and the units before it (handed over by `restore`, which returns the state the
  next units see), never on time; the engine journals the unit as a whole. A unit carries what
  `score` needs to know about it in `meta` (KEE's stage), never encoded in its key.
- `aggregate` sees every row in plan order and returns `Summary(headline, metrics)`: headline is
  a few named Estimates (`kbench.metrics.uncertainty`) a table shows; metrics is task-specific
  and checked against the task's `metrics_schema()`.

The engine (`kbench.evaluate.engine`) owns the run directory, the journal, progress, timing,
data-parallel sharding and atomic writes; a task never touches them.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from kbench.io import SCHEMA_DIR
from kbench.models.cached import CachedModel
from kbench.models.interface import Capability, LanguageModel
from kbench.protocol import ProtocolRecord
from kbench.registry import Registry


class TaskRegistry(Registry["type[Task]"]):
    """The tasks, one folder each: `@TASKS.register()` in `kbench/tasks/<name>/task.py` names the task
    `<name>`, and the task class learns its name (`Task.name`) from here."""

    def __init__(self) -> None:
        super().__init__("evaluation task", package="kbench.tasks", home="{package}.{name}.task")

    def add(self, name: str, entry: type[Task]) -> None:
        super().add(name, entry)
        entry.name = name


TASKS = TaskRegistry()


class TaskSettings(BaseModel):
    """Options every task shares; a task's Settings subclass adds its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    split: str = "test"
    config: str | None = None
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0


@dataclass(frozen=True)
class Unit:
    """A fixed piece of work: `key` is unique within the plan and names the unit in the journal;
    `meta` is what the task needs to know about the unit (e.g. {"stage": "caa"})."""

    key: str
    items: list[Any]
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Plan:
    units: list[Unit]
    dataset: dict  # the envelope's `dataset` block (path, config, split, sha256)
    depends_on: dict = field(default_factory=dict)  # anything else the rows depend on (enters config.json)
    state: Any = None  # the task's own plan value (a frozen dataclass), handed to score/restore/aggregate/finish


@dataclass
class Summary:
    headline: dict[str, dict]
    metrics: dict
    #: The procedure that made these numbers and this run's departures from it (`kbench.protocol`);
    #: every task returns one, built from the settings, the model and the data the run found.
    protocol: ProtocolRecord | None = None


#: A task's own Settings class: `class Choice(Task[ChoiceSettings])` sees `ctx.settings` as one.
S = TypeVar("S", bound=TaskSettings)


@dataclass
class RunContext(Generic[S]):
    """What a task may use while it runs."""

    settings: S
    dataset: Path
    model: CachedModel  # a bare `LanguageModel` given here is wrapped, without a store
    run_dir: Path
    models: dict[str, CachedModel] = field(default_factory=dict)  # extra models (closed-book: "base")

    def __post_init__(self) -> None:
        # Tasks count cache hits and key by their code (`produced_by`) through the wrapper.
        def wrapped(model: CachedModel | LanguageModel) -> CachedModel:
            return model if isinstance(model, CachedModel) else CachedModel(model, None)

        self.model = wrapped(self.model)
        self.models = {role: wrapped(model) for role, model in self.models.items()}


def chunks(items: list, size: int, prefix: str = "", meta: Mapping[str, Any] | None = None) -> list[Unit]:
    """Fixed units of `size` items in plan order: the first unit holds items 0..size-1."""
    return [
        Unit(key=f"{prefix}{start // size:05d}", items=items[start : start + size], meta=dict(meta or {}))
        for start in range(0, len(items), size)
    ]


class Task(Generic[S]):
    name: ClassVar[str]  # set by `TASKS` from the task's folder
    Settings: ClassVar[type[TaskSettings]] = TaskSettings
    #: The headline metric that stands for a run in reports (charts, KoLA standardisation): the
    #: first of these the headline has (a task may prefix it, as XTEVAL's `iid_usable_knowledge`).
    primary_metric: ClassVar[tuple[str, ...]] = ()
    #: The per-item columns that hold the 0/1 outcome paired comparisons use: the first non-null one.
    outcome_columns: ClassVar[tuple[str, ...]] = ("correct",)
    #: False: under `accelerate launch` each unit goes to one process. True: every process takes
    #: part in every unit (the task trains with DDP inside `score`), the main process journals it.
    collective: ClassVar[bool] = False

    @classmethod
    def metrics_schema(cls) -> Path:
        """The JSON Schema `Summary.metrics` must match: `schema.json` in the task's folder, else the
        shipped task's published one, `kbench/schemas/results.<name>.v2.json`."""
        own = folder_of(cls) / "schema.json"
        return own if own.is_file() else SCHEMA_DIR / f"results.{cls.name}.v2.json"

    def needs(self, settings: S) -> dict[str, frozenset[Capability]]:
        """{who: the capabilities it needs}; by default the task generates."""
        return {f"task {self.name}": frozenset({Capability.GENERATE})}

    def roles(self, settings: S, model: Any, models: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """(the judged model, the other models by role) from the caller's `model` and `models`, so the
        API and the CLI (which calls it) agree on them; by default as given."""
        return model, models

    def plan(self, ctx: RunContext[S]) -> Plan:
        raise NotImplementedError

    def score(self, ctx: RunContext[S], state: Any, unit: Unit) -> Sequence[Mapping[str, Any]]:
        """One row per item of the unit (a task's own item-row TypedDict; the journal keeps them as JSON)."""
        raise NotImplementedError

    def aggregate(self, ctx: RunContext[S], state: Any, rows: list[dict]) -> Summary:
        raise NotImplementedError

    def restore(self, ctx: RunContext[S], state: Any, unit: Unit, rows: Sequence[Mapping[str, Any]]) -> Any:
        """Called with each finished unit's rows (journalled before, or just computed), in plan
        order; returns the state later units see, for tasks whose later units read earlier ones
        (XTEVAL's D^theta). By default the state is unchanged."""
        return state

    def finish(self, ctx: RunContext[S], state: Any, rows: list[dict], results: dict) -> None:
        """Extra files beside results.json (written atomically); nothing by default."""

    # --- what the report frame (`kbench.report`) asks each task; a default serves most tasks ---

    def report_section(self, run: Any) -> str:
        """HTML the report shows under a run of this task (`kbench.report.runs.Run`), after its
        metric tables: what the tables cannot show; nothing by default."""
        return ""

    def compare_runs(self, runs: list, items: list[list[dict]]) -> tuple[Any, list[str]] | None:
        """(`kbench.report.compare.Comparison`, notes) of two or more runs of this task with their
        item rows, for a task whose runs are not paired item by item (XTEVAL pairs facts, part by
        part); None: the report pairs the runs' items on `outcome_columns`."""
        return None

    def report_files(self, runs: list, items: list[list[dict]], out_dir: Path) -> None:
        """Files the report writes beside index.html about this task's runs taken together (LEFT's
        open book - closed book comparison); nothing by default."""

    def report_charts(self, runs: list, out_dir: Path) -> list[tuple[str, str]]:
        """Charts the report draws about this task's runs taken together, written into `out_dir`:
        (file name, caption) each (XTEVAL's gaps across runs); none by default."""
        return []

    def explorer_table(self, rows: list[dict], dataset: dict[str, dict]) -> dict | None:
        """The item explorer's table ({columns, rows, techniques}) for a run of this task whose item
        rows are not one per item (KEE: one per technique and item); None: one row per item row."""
        return None

    def standard_name(self, run: Any) -> str:
        """The task a run's KoLA-standardised score is filed under (`kbench report standardize`); a
        task whose settings make different tasks (LEFT's setting and split) names them apart."""
        return self.name


def folder_of(task_cls: type[Task]) -> Path:
    """The task's folder (`kbench/tasks/<name>/`)."""
    return Path(inspect.getfile(task_cls)).parent


def folder_module(task_cls: type[Task], module: str) -> ModuleType | None:
    """The task folder's module `module` ("cli", "legacy"), imported; None when the folder has none."""
    name = f"{task_cls.__module__.rsplit('.', 1)[0]}.{module}"
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None
