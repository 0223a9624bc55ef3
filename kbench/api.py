"""The Python API: build a benchmark, evaluate a model on it, report runs, from a notebook or script.

    import kbench

    built = kbench.build("lama", out="runs/lama", data_dir="~/kbench-data")
    result = kbench.evaluate("extraction", dataset=built.path, model="smollm2-135m", limit=20)
    result.headline["maple_accuracy"]["value"], result.items.height
    kbench.report([result.run_dir], out="report")

The CLI calls these same functions (`kbench build` -> `build`, `kbench evaluate TASK` ->
`evaluate`), so the two cannot disagree: the same settings give the same run folder and numbers.

Why `kbench.evaluate` and `kbench.report` are modules you can call: both names were already the
subpackages `kbench/evaluate/` (the engine) and `kbench/report/`. Their `__init__` sets the
module's class to `kbench.CallableModule` (module `__class__` assignment is supported Python),
so `kbench.evaluate("extraction", ...)` calls `evaluate` below while `kbench.evaluate.engine`
stays importable, and `import kbench` stays light: nothing heavy is imported until a call.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from kbench.construct.runner import StageReport


LOG = logging.getLogger("kbench.api")


@dataclass(frozen=True)
class BuiltDataset:
    """A dataset folder written by `build`, with its stats (`stats.json`: rows and drops per stage)."""

    path: Path
    config_hash: str
    stats: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class EvalResult:
    """A finished evaluation run: `headline` maps each headline metric to its estimate
    (value, 95% interval, n), `metrics` holds the task's full metrics, `results` the whole
    results.json envelope, and `items` the per-item rows."""

    task: str
    run_dir: Path
    headline: dict[str, dict[str, Any]]
    metrics: dict[str, Any] = field(repr=False)
    results: dict[str, Any] = field(repr=False)

    @property
    def items(self) -> pl.DataFrame:
        """One row per evaluated item (`items.parquet` of the run folder)."""
        import polars as pl

        return pl.read_parquet(self.run_dir / self.results["items"]["file"])


def build(
    recipe: str | Path,
    *,
    out: str | Path | None = None,
    data_dir: str | Path | None = None,
    overrides: list[str] | tuple[str, ...] = (),
    sparql_endpoint: str | None = None,
    device: str | None = None,
    judge_model: str | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    workers: int | None = None,
    shard_rows: int | None = None,
    on_stage: Callable[[int, int, StageReport], None] | None = None,
) -> BuiltDataset:
    """Build a dataset from a recipe: a packaged recipe's name (`kbench recipes` lists them) or a
    TOML file. `out` defaults to runs/<dataset name>; `overrides` are `STAGE_ID.KEY=VALUE` strings
    (the CLI's `--set`); `judge_model` runs the recipe's LLM-judge stages with that model (off
    without). Rerunning resumes finished stages.

    Examples:
        >>> import kbench
        >>> built = kbench.build("lama", out=tmp / "lama", data_dir=data, overrides=["load.max_per_relation=5"])
        >>> built.path.name, built.stats["stages"][-1]["rows_out"] > 0
        ('lama', True)
    """
    from kbench.construct.executors import make_executor
    from kbench.construct.recipe import load_recipe
    from kbench.construct.recipe_names import resolve_recipe
    from kbench.construct.runner import run_recipe
    from kbench.io import read_json

    parsed = load_recipe(resolve_recipe(recipe), list(overrides))
    run_dir = Path(out) if out is not None else Path("runs") / parsed.header.name
    options: dict[str, Any] = {"sparql_endpoint": sparql_endpoint} if sparql_endpoint else {}
    if device:
        options["device"] = device
    if judge_model:
        options["judge_model"] = judge_model
    runner = make_executor(executor, ray_address=ray_address, workers=workers, shard_rows=shard_rows)
    try:
        done = run_recipe(
            parsed,
            run_dir,
            options=options,
            data_dir=Path(data_dir).expanduser() if data_dir is not None else None,
            on_stage=on_stage,
            executor=runner,
        )
    finally:
        runner.close()
    return BuiltDataset(done.run_dir, done.config_hash, read_json(done.run_dir / "stats.json"))


def evaluate(
    task: str,
    *,
    dataset: str | Path,
    model: Any,
    out: str | Path | None = None,
    models: dict[str, Any] | None = None,
    dtype: str = "float32",
    device: str = "cpu",
    batch_size: int | None = None,
    trust_remote_code: bool = False,
    use_cache: bool = True,
    **settings: Any,
) -> EvalResult | None:
    """Evaluate `model` on `dataset` with task `task` (extraction, kee, qa, truefalse, xteval).

    `dataset`: a folder built by `build`, or a Hub dataset id `ORG/NAME[@REVISION]`.
    `model`: a name (`smollm2-135m`, a .gguf file, a model folder, a hub id), a
    `kbench.models.interface.ModelSpec`, or an opened model. `models`: extra models by role, the
    same kinds (LEFT's closed book needs none: `checkpoint=` is judged, `model` is its base).
    `**settings`: the task's own settings (the CLI's options with `_` for `-`: `limit=20`,
    `prompt="question"`); None means the default.
    `out` defaults to runs/<task>-<hash of the settings>, the CLI's default. Returns None on the
    non-main processes of `accelerate launch`.

    Examples:
        >>> import kbench
        >>> result = kbench.evaluate("extraction", dataset=built.path, model=tiny_model, limit=8, out=tmp / "run")
        >>> sorted(result.headline), result.items.height
        (['exact_accuracy', 'first_token_p1_macro', 'maple_accuracy'], 8)
    """
    from pydantic import ValidationError

    from kbench.dataset import resolve_dataset
    from kbench.errors import UserError
    from kbench.evaluate.engine import evaluate as run_engine
    from kbench.evaluate.task import TASKS, RunContext
    from kbench.logs import run_log

    task_cls = TASKS.get(task)
    try:
        parsed = task_cls.Settings(**{k: v for k, v in settings.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{task}: {where + ': ' if where else ''}{first['msg'].removeprefix('Value error, ')}") from None
    folder = resolve_dataset(dataset)
    options = {
        "dtype": dtype,
        "device": device,
        "batch_size": batch_size,
        "trust_remote_code": trust_remote_code,
        "use_cache": use_cache,
    }
    runner = task_cls()
    model, models = runner.roles(parsed, model, dict(models or {}))  # LEFT's closed book: the checkpoint and its base
    _require_backends(runner, parsed, [model, *models.values()])
    run_dir = Path(out) if out is not None else _default_run_dir(task, folder, model, options, models, parsed)
    main_process = os.environ.get("RANK", "0") == "0"  # under `accelerate launch`, one process writes the log
    with contextlib.ExitStack() as opened:  # what this call opens it closes (a vLLM engine), whatever happens
        main = _open(model, options, opened)
        extra = {role: _open(m, options, opened) for role, m in models.items()}
        ctx = RunContext(settings=parsed, dataset=folder, model=main, run_dir=run_dir, models=extra)
        with run_log(run_dir / "log.txt") if main_process else contextlib.nullcontext():
            LOG.info("evaluate %s: model %s, dataset %s, run folder %s", task, main.info.name, dataset, run_dir)
            results = run_engine(runner, ctx)  # the engine shows the progress
    if results is None:
        return None
    return EvalResult(task, run_dir, results["headline"], results["metrics"], results)


def report(
    runs: list[str | Path],
    *,
    out: str | Path = "report",
    relations: str | Path | None = None,
    echo: Callable[[str], None] | None = None,
) -> Path:
    """Write the static HTML report of evaluation runs (summary with 95% intervals, paired model
    comparisons, item explorers, charts) into `out`; returns its index.html.

    Examples:
        >>> import kbench
        >>> kbench.report([result.run_dir], out=tmp / "report").name
        'index.html'
    """
    from kbench.report.build import build_report

    return build_report([Path(r) for r in runs], Path(out), Path(relations) if relations is not None else None, echo=echo)


def _require_backends(task, settings, models: list) -> None:
    """Refuse a model named by a string whose backend can never do what the task needs (a white-box
    technique on vLLM or a server), before any weights load or engine starts; the engine checks the
    opened model again (a server's probe may prove less than its backend's most)."""
    from types import SimpleNamespace

    from kbench.models.interface import BACKENDS, require
    from kbench.models.served.spec import PREFIX, ServedSpec, backend_for

    for model in models:
        if isinstance(model, str | Path):
            backend = backend_for(str(model))
            name = PREFIX + ",".join(ServedSpec.from_arg(str(model)).describe()["urls"]) if backend == "openai" else str(model)
            most = SimpleNamespace(
                info=SimpleNamespace(name=name, backend=backend, capabilities=BACKENDS.get(backend).capabilities, missing=())
            )
            for who, needed in task.needs(settings).items():
                require(most, sorted(needed), who)


def _open(model: Any, options: dict[str, Any], opened: contextlib.ExitStack):
    """An opened model for a name, a path or a ModelSpec, closed with `opened`; an opened model is used
    as it is (its caller closes it)."""
    from kbench.models.cached import open_model
    from kbench.models.interface import ModelSpec
    from kbench.models.served.spec import backend_for

    if isinstance(model, ModelSpec):
        spec = model
    elif isinstance(model, str | Path):
        spec = ModelSpec(name=str(model), backend=backend_for(str(model)), **options)
    else:
        return model
    made = open_model(spec)
    opened.callback(made.close)
    return made


def _model_key(model: Any, options: dict[str, Any]) -> tuple[str, str]:
    """(name, dtype) of a model argument, as the default run folder is named by them."""
    from kbench.models.interface import ModelSpec

    if isinstance(model, ModelSpec):
        return model.name, model.dtype
    if isinstance(model, str | Path):
        return str(model), options["dtype"]
    described = model.describe()
    return str(described["name"]), str(described.get("dtype", options["dtype"]))


def _default_run_dir(task: str, dataset: Path, model: Any, options: dict, models: dict, settings) -> Path:
    """runs/<task>-<hash of everything that names the run>."""
    from kbench.io import stable_hash

    name, dtype = _model_key(model, options)
    extra = sorted((role, _model_key(m, options)[0]) for role, m in models.items())
    parts = [dataset.resolve(), name, dtype, extra, settings.model_dump_json()]
    return Path("runs") / f"{task}-{stable_hash([str(p) for p in parts])[:10]}"
