"""The one shape of an evaluation task (in the spirit of inspect_ai's `Task`).

A task is a class registered in `TASKS`, with four parts:

    @TASKS.register("extraction")
    class Extraction(Task):
        Settings = ExtractionSettings          # pydantic, extra="forbid": every option, with its default
        metrics_schema = "results.extraction.v2.json"

        def plan(self, ctx) -> Plan            # load items from the dataset split; cut them into units
        def score(self, ctx, unit) -> rows     # run the model over one unit; one row per item
        def aggregate(self, ctx, rows) -> Summary   # rows (plan order) -> headline + metrics
        def finish(self, ctx, rows, results)   # optional: extra files (known facts, plots)

Contracts:
- `plan` is a pure function of the dataset, the settings and the model: the units it returns
  (and their order) never depend on what a previous, interrupted run already computed. This is
  what makes a resumed run bit-identical to an uninterrupted one.
- `score(ctx, unit)` returns one dict per unit item, each with a unique "id", and must depend only
  on the unit and the units before it (handed over by `restore`), never on time; the engine
  journals the unit as a whole.
- `aggregate` sees every row in plan order and returns `Summary(headline, metrics)`: headline is
  a few named Estimates (`kbench.metrics.uncertainty`) a table shows; metrics is task-specific
  and checked against `schemas/<metrics_schema>`.

The engine (`kbench.evaluate.engine`) owns the run directory, the journal, progress, timing,
data-parallel sharding and atomic writes; a task never touches them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from kbench.registry import Registry

TASKS: Registry[type[Task]] = Registry("evaluation task", package="kbench.evaluate")


class TaskSettings(BaseModel):
    """Options every task shares; a task's Settings subclass adds its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    split: str = "test"
    config: str | None = None
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0


@dataclass(frozen=True)
class Unit:
    """A fixed piece of work: `key` is unique within the plan and names the unit in the journal."""

    key: str
    items: list[Any]


@dataclass
class Plan:
    units: list[Unit]
    dataset: dict  # the envelope's `dataset` block (path, config, split, sha256)
    depends_on: dict = field(default_factory=dict)  # anything else the rows depend on (enters config.json)


@dataclass
class Summary:
    headline: dict[str, dict]
    metrics: dict


@dataclass
class RunContext:
    """What a task may use while it runs."""

    settings: TaskSettings
    dataset: Path
    model: Any  # a `kbench.models.cached.CachedModel` (a bare `LanguageModel` is wrapped, without a store)
    run_dir: Path
    models: dict[str, Any] = field(default_factory=dict)  # extra models (closed-book: "base")

    def __post_init__(self) -> None:
        # Tasks count cache hits and key by their code (`produced_by`) through the wrapper.
        from kbench.models.cached import CachedModel

        def wrapped(model):
            return model if isinstance(model, CachedModel) else CachedModel(model, None)

        self.model = wrapped(self.model)
        self.models = {role: wrapped(model) for role, model in self.models.items()}


def chunks(items: list, size: int, prefix: str = "") -> list[Unit]:
    """Fixed units of `size` items in plan order: the first unit holds items 0..size-1."""
    return [Unit(key=f"{prefix}{start // size:05d}", items=items[start : start + size]) for start in range(0, len(items), size)]


class Task:
    name: ClassVar[str]
    Settings: ClassVar[type[TaskSettings]] = TaskSettings
    metrics_schema: ClassVar[str]
    #: The headline metric that stands for a run in reports (charts, KoLA standardisation): the
    #: first of these the headline has (a task may prefix it, as XTEVAL's `iid_usable_knowledge`).
    primary_metric: ClassVar[tuple[str, ...]] = ()
    #: The per-item columns that hold the 0/1 outcome paired comparisons use: the first non-null one.
    outcome_columns: ClassVar[tuple[str, ...]] = ("correct",)
    #: False: under `accelerate launch` each unit goes to one process. True: every process takes
    #: part in every unit (the task trains with DDP inside `score`), the main process journals it.
    collective: ClassVar[bool] = False

    def plan(self, ctx: RunContext) -> Plan:
        raise NotImplementedError

    def score(self, ctx: RunContext, unit: Unit) -> list[dict]:
        raise NotImplementedError

    def aggregate(self, ctx: RunContext, rows: list[dict]) -> Summary:
        raise NotImplementedError

    def restore(self, ctx: RunContext, unit: Unit, rows: list[dict]) -> None:
        """Called with each finished unit's rows (journalled before, or just computed), in plan
        order, for tasks whose later units read earlier ones (XTEVAL's D^theta); nothing by default."""

    def finish(self, ctx: RunContext, rows: list[dict], results: dict) -> None:
        """Extra files beside results.json (written atomically); nothing by default."""
