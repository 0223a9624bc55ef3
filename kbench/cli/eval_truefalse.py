"""`kbench evaluate truefalse`: LEFT true/false statements, before reading, after reading, open book."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import evaluate_app


@evaluate_app.command()
def truefalse(
    dataset: Path = typer.Option(..., "--dataset", help="A LEFT dataset folder (pipelines/left-textbook.toml)."),
    model: str = typer.Option(..., "--model", help="smollm2-135m, a .gguf file, a model folder or a hub id."),
    setting: str = typer.Option("prior", "--setting", help="prior | closed-book | open-book"),
    retriever: Optional[str] = typer.Option(None, "--retriever", help="open-book: gold (section paragraph) | sbert (MiniLM top-1)."),
    checkpoint: Optional[Path] = typer.Option(None, "--checkpoint", help="closed-book: the folder written by `kbench read`."),
    split: str = typer.Option("dev", "--split", help="dev (chapters 1-8) | test"),
    config: Optional[str] = typer.Option(None, "--config", help="Dataset config (default: 'default' or the only one)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="The first N statements in dataset order (whole pairs)."),
    max_passage_words: int = typer.Option(150, "--max-passage-words", help="open-book: cut the paragraph to this many words."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: runs/truefalse-<settings hash>)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Rows per forward pass (default: automatic)."),
    dtype: str = typer.Option("float32", "--dtype"),
    device: str = typer.Option("cpu", "--device"),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Run code shipped with the model (off by default)."),
) -> None:
    """Judge statements true or false; rerunning the same command resumes where it stopped."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from kbench.build.context import default_cache_dir
    from kbench.errors import UserError
    from kbench.evaluate.truefalse import TrueFalseSettings, check_settings, run_truefalse
    from kbench.io import stable_hash
    from kbench.models.loading import load_model
    from kbench.models.result_cache import ResultCache
    from kbench.models.runner import ModelRunner

    if batch_size is not None and batch_size < 1:
        raise UserError(f"--batch-size must be >= 1, got {batch_size}")
    if max_passage_words < 1:
        raise UserError(f"--max-passage-words must be >= 1, got {max_passage_words}")
    settings = TrueFalseSettings(setting=setting, retriever=retriever, split=split, config=config, limit=limit,
                                 max_passage_words=max_passage_words)
    check_settings(settings, checkpoint is not None)
    if checkpoint is not None and not checkpoint.is_dir():
        raise UserError(f"--checkpoint {checkpoint}: not a folder (write one with `kbench read`)")
    run_dir = out or Path("runs") / f"truefalse-{stable_hash([str(dataset.resolve()), model, str(checkpoint), dtype, repr(settings)])[:10]}"
    console = Console(stderr=True)
    cache = ResultCache(default_cache_dir() / "results.sqlite")
    base = load_model(model, dtype=dtype, device=device, trust_remote_code=trust_remote_code)
    base_runner = ModelRunner(base, batch_size=batch_size, cache=cache)
    runner, before = base_runner, None
    if checkpoint is not None:
        judged = load_model(str(checkpoint), dtype=dtype, device=device, trust_remote_code=trust_remote_code)
        runner, before = ModelRunner(judged, batch_size=batch_size, cache=cache), base_runner

    columns = [TextColumn(f"truefalse {setting}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("statements", total=None)
        results = run_truefalse(runner, dataset, run_dir, settings, cache_dir=default_cache_dir(), base_runner=before,
                                progress=lambda n, total: bar.update(task, advance=n, total=total))

    overall = results["overall"]
    line = (f"{results['model']['name']} {setting}{' / ' + retriever if retriever else ''} on {split}: "
            f"accuracy {overall['accuracy']:.3f} (uncalibrated {overall['uncalibrated_accuracy']:.3f}, n={overall['n']})")
    if "before_after" in results:
        ba = results["before_after"]
        line += f"; before reading {ba['before_accuracy']:.3f} -> after {ba['after_accuracy']:.3f} (delta {ba['delta']:+.3f})"
    Console().print(line)
    console.print(f"results: {run_dir / 'results.json'}")
