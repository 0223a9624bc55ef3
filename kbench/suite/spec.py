"""A suite file: models x tasks x datasets, validated before anything runs.

    [suite]
    name = "smollm2-vs-gemma"
    claims = ["maple"]     # claim sets (`kbench claims list`) tested after the run: their tasks must be here
    retries = 2            # a failing cell is retried this many times, waiting retry_wait, 2x, 4x... seconds
    retry_wait = 5.0

    [[models]]
    model = "smollm2-135m"   # any `--model` spelling: a packaged name, a folder, a .gguf, a hub id, openai:URL
    name = "smollm2"         # the label in the grid (default: from the model)
    dtype = "float32"        # device, batch_size, trust_remote_code: as `kbench evaluate` takes them
    [models.meta]            # optional facts the weights cannot tell
    training_tokens = 2e12
    release_date = 2024-11-01

    [[datasets]]
    name = "lama"
    recipe = "lama"          # a packaged recipe (or a recipe file, relative to this file) built first into OUT/datasets/lama
    overrides = ["load.max_per_relation=20"]
    [[datasets]]
    name = "mine"
    path = "runs/my-dataset" # a built folder (relative to this file) or a Hub id ORG/NAME[@REVISION]

    [[tasks]]
    task = "extraction"      # a `kbench evaluate` task
    name = "extraction-cloze"
    datasets = ["lama"]      # default: every dataset
    [tasks.settings]         # the task's settings, exactly as `kbench evaluate TASK` takes them
    limit = 200

Every error names the file, the line and the key, and exits with code 2 before anything runs.
"""

from __future__ import annotations

import datetime
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kbench.errors import InputError, UserError
from kbench.suite.locate import key_line

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
_DEVICE = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SuiteHeader(_Strict):
    name: str = Field(pattern=_LABEL.pattern)
    claims: tuple[str, ...] = ()
    retries: int = Field(2, ge=0, le=20)
    retry_wait: float = Field(5.0, ge=0)


class ModelMeta(_Strict):
    """Facts about a model its weights do not hold (or a served model hides)."""

    training_tokens: float | None = Field(default=None, ge=0)
    release_date: datetime.date | None = None
    family: str | None = None
    parameters: int | None = Field(default=None, ge=1, description="For served models, whose weights cannot be counted.")
    instruction_tuned: bool | None = None


class ModelEntry(_Strict):
    model: str = Field(min_length=1)
    name: str | None = Field(None, pattern=_LABEL.pattern)
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    device: str = Field("cpu", pattern=_DEVICE.pattern)
    batch_size: int | None = Field(None, ge=1)
    trust_remote_code: bool = False
    meta: ModelMeta = ModelMeta()

    @property
    def label(self) -> str:
        return self.name or default_label(self.model)


class DatasetEntry(_Strict):
    name: str = Field(pattern=_LABEL.pattern)
    path: str | None = None
    recipe: str | None = None
    overrides: tuple[str, ...] = ()


class TaskEntry(_Strict):
    task: str
    name: str | None = Field(None, pattern=_LABEL.pattern)
    datasets: tuple[str, ...] | None = None
    settings: dict[str, Any] = {}

    @property
    def label(self) -> str:
        return self.name or self.task


class SuiteFile(_Strict):
    suite: SuiteHeader
    models: tuple[ModelEntry, ...] = Field(min_length=1)
    datasets: tuple[DatasetEntry, ...] = Field(min_length=1)
    tasks: tuple[TaskEntry, ...] = Field(min_length=1)


@dataclass(frozen=True)
class Cell:
    model: str  # labels
    task: str
    dataset: str

    @property
    def key(self) -> str:
        return f"{self.model}__{self.task}__{self.dataset}"


@dataclass(frozen=True)
class Suite:
    """A validated suite: the parsed file, where it lives, and its cells in run order."""

    spec: SuiteFile
    path: Path
    cells: tuple[Cell, ...]

    def model(self, label: str) -> ModelEntry:
        return next(m for m in self.spec.models if m.label == label)

    def task(self, label: str) -> TaskEntry:
        return next(t for t in self.spec.tasks if t.label == label)

    def dataset(self, name: str) -> DatasetEntry:
        return next(d for d in self.spec.datasets if d.name == name)

    def dataset_path(self, name: str) -> str:
        """A `path` dataset: relative to the suite file when it is a folder there, else as written (a Hub id)."""
        path = self.dataset(name).path
        if path is None:
            raise ValueError(f"dataset {name}: a recipe dataset has no path")
        beside = self.path.parent / path
        return str(beside) if not Path(path).is_absolute() and beside.exists() else path

    def recipe(self, name: str) -> str:
        """A `recipe` dataset: a recipe file relative to the suite file when it is there, else as
        written (a packaged recipe's name or a path from the working folder)."""
        recipe = self.dataset(name).recipe
        if recipe is None:
            raise ValueError(f"dataset {name}: a built dataset has no recipe")
        beside = self.path.parent / recipe
        return str(beside) if not Path(recipe).is_absolute() and beside.is_file() else recipe

    def document(self) -> dict:
        """The suite as suite.json records it (JSON types: dates as ISO strings)."""
        return self.spec.model_dump(mode="json")


def default_label(model: str) -> str:
    """A folder-safe label for a model argument: the last path part, or the served model's id."""
    from kbench.models.served.spec import is_served

    if is_served(model):
        named = re.search(r";\s*model=([^;]+)", model)
        text = named.group(1) if named else model.split("//", 1)[-1].split("/", 1)[0]
    else:
        text = Path(model.rstrip("/")).name.removesuffix(".gguf")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:80] or "model"


def packaged_suites() -> dict[str, Path]:
    """The suites shipped in kbench/suites/, by name (the file's stem)."""
    from importlib import resources

    folder = resources.files("kbench.suites")
    return {Path(f.name).stem: Path(str(f)) for f in folder.iterdir() if f.name.endswith(".toml")}


def resolve_suite(argument: str | Path) -> Path:
    """A suite file: the path when it is a file, else the packaged suite of that name."""
    path = Path(argument)
    if path.is_file():
        return path
    packaged = packaged_suites()
    if str(argument) in packaged:
        return packaged[str(argument)]
    if path.suffix == ".toml" or len(path.parts) > 1:
        raise UserError(f"{path}: suite file not found")
    raise UserError(f"{str(argument)!r} is neither a suite file nor a packaged suite; packaged: {', '.join(sorted(packaged))}")


def load_suite(path: Path) -> Suite:
    """Parse and validate a suite file (or a packaged suite's name); every error is an `InputError`
    naming file, line and key."""
    path = resolve_suite(path)
    text = path.read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, f"not valid TOML: {exc}") from None

    def fail(where: tuple, message: str):
        return InputError(path, message, line=key_line(text, where), key=_dotted(where))

    try:
        spec = SuiteFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise fail(tuple(first["loc"]), first["msg"].removeprefix("Value error, ")) from None
    _check_models(spec, fail)
    _check_datasets(spec, path, fail)
    _check_tasks(spec, fail)
    _check_claims(spec, fail)
    cells = tuple(
        Cell(m.label, t.label, d)
        for m in spec.models
        for t in spec.tasks
        for d in (t.datasets or tuple(x.name for x in spec.datasets))
    )
    return Suite(spec, path, cells)


def _dotted(where: tuple) -> str:
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _duplicates(labels: list[str]) -> int | None:
    """The index of the first label seen before."""
    seen = set()
    for i, label in enumerate(labels):
        if label in seen:
            return i
        seen.add(label)
    return None


def _check_models(spec: SuiteFile, fail) -> None:
    from kbench.models.served.spec import ServedSpec, is_served

    for i, entry in enumerate(spec.models):
        if entry.model != entry.model.strip() or not entry.model.strip():
            raise fail(("models", i, "model"), f"malformed model spec {entry.model!r}")
        if is_served(entry.model):
            try:
                ServedSpec.from_arg(entry.model)
            except UserError as exc:
                raise fail(("models", i, "model"), f"malformed model spec: {str(exc).removeprefix('--model: ')}") from None
    twice = _duplicates([m.label for m in spec.models])
    if twice is not None:
        raise fail(("models", twice, "name"), f"duplicate cell: a second model labelled {spec.models[twice].label!r}")
    twice = _duplicates([repr((m.model, m.dtype, m.device)) for m in spec.models])
    if twice is not None:
        raise fail(("models", twice, "model"), f"duplicate cell: model {spec.models[twice].model!r} is listed twice")


def _check_datasets(spec: SuiteFile, path: Path, fail) -> None:
    from kbench.construct.recipe_names import resolve_recipe
    from kbench.dataset import _HUB_ID

    for i, entry in enumerate(spec.datasets):
        if (entry.path is None) == (entry.recipe is None):
            raise fail(("datasets", i, "name"), "give exactly one of path (a built folder or Hub id) and recipe")
        if entry.path is not None:
            folder = Path(entry.path) if Path(entry.path).is_absolute() else path.parent / entry.path
            if not folder.is_dir() and not _HUB_ID.match(entry.path):
                raise fail(("datasets", i, "path"), f"{entry.path}: no such folder, and not a Hub dataset id")
            if entry.overrides:
                raise fail(("datasets", i, "overrides"), "overrides apply to a recipe, not to a built folder")
        elif entry.recipe is not None:  # exactly one of the two (checked above)
            beside = path.parent / entry.recipe
            try:
                resolve_recipe(beside if not Path(entry.recipe).is_absolute() and beside.is_file() else entry.recipe)
            except UserError as exc:
                raise fail(("datasets", i, "recipe"), str(exc)) from None
    twice = _duplicates([d.name for d in spec.datasets])
    if twice is not None:
        raise fail(("datasets", twice, "name"), f"duplicate cell: a second dataset named {spec.datasets[twice].name!r}")


def _check_tasks(spec: SuiteFile, fail) -> None:
    from kbench.evaluate.task import TASKS

    names = {d.name for d in spec.datasets}
    for i, entry in enumerate(spec.tasks):
        if entry.task not in TASKS:
            raise fail(("tasks", i, "task"), f"unknown task {entry.task!r}; known: {', '.join(TASKS.names())}")
        try:
            TASKS.get(entry.task).Settings(**entry.settings)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ("tasks", i, "settings", *(p for p in first["loc"] if not isinstance(p, int)))
            raise fail(where, first["msg"].removeprefix("Value error, ")) from None
        for name in entry.datasets or ():
            if name not in names:
                raise fail(("tasks", i, "datasets"), f"no dataset named {name!r}; the suite has {', '.join(sorted(names))}")
        if entry.datasets is not None and _duplicates(list(entry.datasets)) is not None:
            raise fail(("tasks", i, "datasets"), "duplicate cell: a dataset is listed twice")
    twice = _duplicates([t.label for t in spec.tasks])
    if twice is not None:
        raise fail(("tasks", twice, "name"), f"duplicate cell: a second task labelled {spec.tasks[twice].label!r}")


def _check_claims(spec: SuiteFile, fail) -> None:
    """Each claim set exists and finds the tasks it reads among the suite's tasks."""
    from kbench.claims.sets import check_tasks, claim_sets

    present = {t.task for t in spec.tasks}
    for name in spec.suite.claims:
        if name not in claim_sets():
            raise fail(("suite", "claims"), f"no claim set {name!r}; packaged: {', '.join(sorted(claim_sets()))}")
        try:
            check_tasks(claim_sets()[name], present, "claims")
        except UserError as exc:
            raise fail(("suite", "claims"), str(exc).removeprefix("claims: ")) from None
