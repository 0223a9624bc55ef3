"""`kbench evaluate extraction`: which facts of a dataset does a model know?"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import evaluate_app


@evaluate_app.command()
def extraction(
    dataset: Path = typer.Option(..., "--dataset", help="A dataset folder built by `kbench build`."),
    model: str = typer.Option(..., "--model", help="smollm2-135m, gemma3-270m, a .gguf file, a model folder or a hub id."),
    split: str = typer.Option("test", "--split"),
    config: Optional[str] = typer.Option(None, "--config", help="Dataset config (default: 'default' or the only one)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Evaluate a seeded sample of N items."),
    prompt: str = typer.Option("cloze", "--prompt", help="cloze | question | chat"),
    fewshot: int = typer.Option(0, "--fewshot", help="Solved examples from the train split before each item."),
    seed: int = typer.Option(0, "--seed", help="Seeds the --limit sample and the few-shot examples."),
    protocol: str = typer.Option("maple", "--protocol", help="maple (generate + match) | lama (single-token P@1)."),
    common_vocab: Optional[Path] = typer.Option(None, "--common-vocab", help="lama protocol: restrict objects and ranks to this word list."),
    case_sensitive: bool = typer.Option(False, "--case-sensitive", help="MAPLE matching keeps case."),
    max_new_tokens: int = typer.Option(16, "--max-new-tokens"),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default: runs/extraction-<settings hash>)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Rows per forward pass (default: automatic)."),
    dtype: str = typer.Option("float32", "--dtype"),
    device: str = typer.Option("cpu", "--device"),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Run code shipped with the model (off by default)."),
) -> None:
    """Probe a model on a dataset split; rerunning the same command resumes where it stopped."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from kbench.build.context import default_cache_dir
    from kbench.errors import UserError
    from kbench.evaluate.extraction import ExtractionSettings, run_extraction
    from kbench.io import stable_hash
    from kbench.models.loading import load_model
    from kbench.models.result_cache import ResultCache
    from kbench.models.runner import ModelRunner

    if batch_size is not None and batch_size < 1:
        raise UserError(f"--batch-size must be >= 1, got {batch_size}")
    if max_new_tokens < 1:
        raise UserError(f"--max-new-tokens must be >= 1, got {max_new_tokens}")
    settings = ExtractionSettings(split=split, config=config, limit=limit, prompt=prompt, fewshot=fewshot, seed=seed,
                                  protocol=protocol, common_vocab=str(common_vocab) if common_vocab else None,
                                  case_sensitive=case_sensitive, max_new_tokens=max_new_tokens)
    run_dir = out or Path("runs") / f"extraction-{stable_hash([str(dataset.resolve()), model, dtype, repr(settings)])[:10]}"
    console = Console(stderr=True)
    loaded = load_model(model, dtype=dtype, device=device, trust_remote_code=trust_remote_code)
    runner = ModelRunner(loaded, batch_size=batch_size, cache=ResultCache(default_cache_dir() / "results.sqlite"))

    columns = [TextColumn("extraction"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("items", total=None)

        def advance(n: int, total: int) -> None:
            bar.update(task, advance=n, total=total)

        results = run_extraction(loaded, runner, dataset, run_dir, settings, progress=advance)

    table = Table(title=f"{loaded.name} on {dataset.name}/{split} ({settings.protocol}, {settings.prompt} prompt)")
    for column in ("slice", "n", "MAPLE acc", "exact acc", "rank-1 acc", "LAMA P@1"):
        table.add_column(column, justify="left" if column == "slice" else "right")

    def add(name: str, s: dict) -> None:
        p_at_1 = f"{s['lama_p_at_1']:.3f}" if "lama_p_at_1" in s else ""
        table.add_row(name, str(s["n"]), f"{s['maple_accuracy']:.3f}", f"{s['exact_accuracy']:.3f}", f"{s['rank1_accuracy']:.3f}", p_at_1)

    add("overall", results["overall"])
    for name, summary in results["per_frequency_bin"].items():
        add(f"bin: {name}", summary)
    Console().print(table)
    console.print(f"known facts: {results['known_facts']['count']} → {run_dir / 'known_facts.parquet'}; "
                  f"results: {run_dir / 'results.json'}")
