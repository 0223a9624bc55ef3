"""`kbench export lm-eval|inspect DATASET --out ...`: a built dataset as another harness's task."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.common import CONFIG
from kbench.cli.main import app

export_app = typer.Typer(help="Export a built dataset as an lm-eval or Inspect task.", no_args_is_help=True)
app.add_typer(export_app, name="export")

DATASET_ARG = typer.Argument(..., help="A dataset folder built by `kbench build` (questions or LEFT statements).")
SPLIT = typer.Option(None, "--split", help="Default: test (questions), dev (LEFT statements), as `kbench evaluate`.")
LIMIT = typer.Option(
    None,
    "--limit",
    help="Questions: the seeded sample `kbench evaluate --limit` takes; statements: the first whole pairs.",
)
SEED = typer.Option(0, "--seed", help="Seeds the --limit sample and the few-shot examples, as in `kbench evaluate`.")
FEWSHOT = typer.Option(0, "--fewshot", help="Solved examples from the train split, written into each prompt.")
CASE_SENSITIVE = typer.Option(False, "--case-sensitive", help="MAPLE matching keeps case.")


def _docs(dataset: Path, split, config, prompt, fewshot, limit, seed):
    from kbench.export.items import ExportSpec, export_docs

    spec = ExportSpec(split=split, config=config, prompt=prompt, fewshot=fewshot, limit=limit, seed=seed)
    return export_docs(dataset, spec), {"prompt": prompt, "fewshot": fewshot, "limit": limit, "seed": seed, "config": config}


@export_app.command("lm-eval")
def lm_eval(
    dataset: Path = DATASET_ARG,
    out: Path = typer.Option(..., "--out", help="Task folder to write (<task>.yaml, utils.py, data.jsonl)."),
    split: Optional[str] = SPLIT,
    config: Optional[str] = CONFIG,
    prompt: str = typer.Option("cloze", "--prompt", help="cloze | question (questions only)."),
    fewshot: int = FEWSHOT,
    limit: Optional[int] = LIMIT,
    seed: int = SEED,
    case_sensitive: bool = CASE_SENSITIVE,
    name: Optional[str] = typer.Option(None, "--name", help="Task name (default: kbench_<dataset>_<split>[_<prompt>])."),
) -> None:
    """Write an lm-evaluation-harness task: same prompts, stop strings and matching as `kbench evaluate`."""
    from kbench.export.lmeval import write_lmeval_task

    docs, settings = _docs(dataset, split, config, prompt, fewshot, limit, seed)
    yaml_path = write_lmeval_task(
        dataset,
        docs,
        out,
        prompt=prompt,
        name=name,
        case_sensitive=case_sensitive,
        settings={**settings, "case_sensitive": case_sensitive},
    )
    task = yaml_path.stem
    typer.echo(
        f"{docs.task} task {task} ({len(docs.docs)} items of {docs.split}) written to {out}\n"
        f"run: lm_eval --model hf --model_args pretrained=MODEL --tasks {task} --include_path {out}"
    )


@export_app.command("inspect")
def inspect(
    dataset: Path = DATASET_ARG,
    out: Path = typer.Option(..., "--out", help="Task file to write (FILE.py; its data goes to FILE.jsonl beside it)."),
    split: Optional[str] = SPLIT,
    config: Optional[str] = CONFIG,
    fewshot: int = FEWSHOT,
    limit: Optional[int] = LIMIT,
    seed: int = SEED,
    case_sensitive: bool = CASE_SENSITIVE,
) -> None:
    """Write an Inspect task: the question as a chat turn, a generate solver and a MAPLE-match scorer."""
    from kbench.export.inspect import check_exportable, write_inspect_task

    check_exportable(dataset, config)
    docs, _ = _docs(dataset, split, config, "chat", fewshot, limit, seed)
    path = write_inspect_task(docs, out, case_sensitive=case_sensitive)
    typer.echo(
        f"{docs.task} task ({len(docs.docs)} items of {docs.split}) written to {path}\n"
        f"run: inspect eval {path} --model hf/local -M model_path=MODEL -M do_sample=false"
    )
