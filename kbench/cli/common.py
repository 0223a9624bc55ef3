"""What every `kbench evaluate TASK` shares: the options (each defined once, meaning the same
everywhere), the model set-up, the run itself and its headline table.

A task's command file declares only the task's own options and calls `run_task`:

    @evaluate_app.command()
    def extraction(dataset=DATASET, model=MODEL, split=SPLIT, ..., prompt: str = typer.Option(...)):
        run_task("extraction", {"split": split, "prompt": prompt, ...}, model_options(...), dataset, out)

Typer reads an option's declaration from the parameter default, so one `typer.Option` object
serves every command.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import typer

DATASET = typer.Option(..., "--dataset", help="A dataset folder built by `kbench build`.")
MODEL = typer.Option(..., "--model", help="smollm2-135m, gemma3-270m, a .gguf file, a model folder or a hub id.")
SPLIT = typer.Option(None, "--split", help="Dataset split to evaluate (default: the task's, e.g. test).")
CONFIG = typer.Option(None, "--config", help="Dataset config (default: 'default' or the only one).")
LIMIT = typer.Option(None, "--limit", help="Evaluate a seeded sample of N items.")
SEED = typer.Option(0, "--seed", help="Seeds the --limit sample and anything else the task draws.")
OUT = typer.Option(None, "--out", help="Run directory (default: runs/<task>-<settings hash>).")
BATCH_SIZE = typer.Option(None, "--batch-size", help="Prompts per forward pass (default: automatic).")
DTYPE = typer.Option("float32", "--dtype", help="float32 | bfloat16 | float16")
DEVICE = typer.Option("cpu", "--device", help="cpu | cuda | cuda:N (under accelerate launch: each process's GPU)")
TRUST_REMOTE_CODE = typer.Option(False, "--trust-remote-code", help="Run code shipped with the model (off by default).")
NO_CACHE = typer.Option(False, "--no-cache", help="Neither read nor write the shared result cache.")


@dataclass(frozen=True)
class ModelOptions:
    model: str
    batch_size: Optional[int]
    dtype: str
    device: str
    trust_remote_code: bool
    no_cache: bool

    def spec(self, name: str | None = None):
        from kbench.models.interface import ModelSpec

        return ModelSpec(
            name=name or self.model,
            dtype=self.dtype,
            device=_process_device(self.device),
            trust_remote_code=self.trust_remote_code,
            batch_size=self.batch_size,
            use_cache=not self.no_cache,
        )


def _process_device(device: str) -> str:
    """Under `accelerate launch`, "cuda" means this process's own GPU (LOCAL_RANK)."""
    import os

    if device == "cuda" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    return device


def settings_for(task_name: str, values: dict[str, Any]):
    """The task's validated settings; None values mean "the task's default"."""
    from pydantic import ValidationError

    from kbench.errors import UserError
    from kbench.evaluate.task import TASKS

    task_cls = TASKS.get(task_name)
    given = {k: v for k, v in values.items() if v is not None}
    try:
        return task_cls.Settings(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        if not first["loc"]:  # a check across options names them itself
            raise UserError(message) from None
        key = ".".join(str(p) for p in first["loc"])
        raise UserError(f"--{key.replace('_', '-')}: {message}") from None


def default_run_dir(task: str, *parts) -> Path:
    """runs/<task>-<hash of everything that names the run>, when --out is not given."""
    from kbench.io import stable_hash

    return Path("runs") / f"{task}-{stable_hash([str(p) for p in parts])[:10]}"


def run_task(
    task_name: str,
    values: dict[str, Any],
    options: ModelOptions,
    dataset: Path,
    out: Optional[Path],
    extra_models: dict[str, str] | None = None,
) -> tuple[dict | None, Path]:
    """Validate settings, open the model(s), run the engine with a progress bar, print the headline.
    Returns (results, the run directory); results are None on the non-main processes of
    `accelerate launch`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from kbench.evaluate.engine import evaluate
    from kbench.evaluate.task import TASKS, RunContext
    from kbench.models.interface import open_model

    settings = settings_for(task_name, values)
    task = TASKS.get(task_name)()
    run_dir = out or default_run_dir(
        task_name,
        dataset.resolve(),
        options.model,
        options.dtype,
        sorted((extra_models or {}).items()),
        settings.model_dump_json(),
    )
    model = open_model(options.spec())
    models = {role: open_model(options.spec(name)) for role, name in (extra_models or {}).items()}
    ctx = RunContext(settings=settings, dataset=dataset, model=model, run_dir=Path(run_dir), models=models)
    console = Console(stderr=True)
    columns = [TextColumn(task_name), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console) as bar:
        handle = bar.add_task("items", total=None)
        results = evaluate(task, ctx, progress=lambda n, total: bar.update(handle, advance=n, total=total))
    if results is not None:
        print_headline(results, Path(run_dir))
    return results, Path(run_dir)


def print_headline(results: dict, run_dir: Path) -> None:
    """The finished run's headline numbers, the same table for every task."""
    from rich.console import Console
    from rich.table import Table

    from kbench.metrics.uncertainty import SMALL_N, format_estimate

    dataset = results["dataset"]
    table = Table(
        title=f"{results['task']}: {results['model']['name']} on {Path(dataset['path']).name}"
        f"{'/' + dataset['split'] if dataset.get('split') else ''}"
    )
    for column in ("metric", "value [95% CI]", "n"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for name, estimate in results["headline"].items():
        table.add_row(name, format_estimate(estimate), str(estimate["n"]))
    Console().print(table)
    console = Console(stderr=True)
    console.print(
        f"* marks n < {SMALL_N}; intervals: Wilson for proportions, seeded bootstrap for means. "
        f"results: {run_dir / 'results.json'}"
    )
