"""`kbench evaluate xteval`: the acquisition-utilization gap (extraction -> retrieval -> gaps)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import evaluate_app


@evaluate_app.command("xteval")
def xteval(
    dataset: Path = typer.Option(..., "--dataset", help="A built dataset folder (kbench build ... --out DIR)."),
    model: str = typer.Option(..., "--model", help="A packaged model name (smollm2-135m), a GGUF file or a model folder."),
    out: Path = typer.Option(Path("runs/xteval"), "--out", help="Run directory; rerun the same command to resume."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Use at most N facts of D (round-robin over relations)."),
    epochs: int = typer.Option(20, "--epochs", help="Fine-tuning epochs (paper: 20); also soft-prompt epochs unless --prompt-epochs."),
    prompt_epochs: Optional[int] = typer.Option(None, "--prompt-epochs", help="Soft-prompt training epochs (paper: 20)."),
    seeds: int = typer.Option(3, "--seeds", help="Seeds per level: extraction x split x fine-tune (paper: 3 -> 27 runs)."),
    extraction_seeds: Optional[int] = typer.Option(None, "--extraction-seeds", help="Override the extraction seed count."),
    split_seeds: Optional[int] = typer.Option(None, "--split-seeds", help="Override the split seed count."),
    finetune_seeds: Optional[int] = typer.Option(None, "--finetune-seeds", help="Override the fine-tune seed count."),
    split: str = typer.Option("iid", "--split", help="iid (random 60/40), ood (relation-disjoint 60/40) or both."),
    extraction: str = typer.Option("soft", "--extraction",
                                   help="soft (OptiPrompt vectors, the paper's) or discrete (the dataset's cloze prompts)."),
    top1: str = typer.Option("first-token", "--top1",
                             help="Known = top-1: first-token (the first gold token is the argmax) or full-answer "
                                  "(every gold token); masked LMs read the one mask."),
    known_facts: Optional[Path] = typer.Option(None, "--known-facts", help="D^theta from an extraction run (parquet/jsonl: id[, correct]) instead of step 1."),
    prompt_train_dir: Optional[Path] = typer.Option(None, "--prompt-train-dir", help="Soft-prompt data: <relation>/train.jsonl and dev.jsonl (AutoPrompt splits); default: the dataset's train/dev splits."),
    templates_dir: Optional[Path] = typer.Option(None, "--templates-dir", help="A LAMA folder (relations.jsonl, prompt_variants/) adding document templates."),
    template_variants: str = typer.Option("LPAQA", "--template-variants", help="With --templates-dir: paraphrase files prompt_variants/<NAME>_relations.jsonl to add (comma list), or 'all'."),
    dataset_split: str = typer.Option("test", "--dataset-split", help="Which split of the dataset is D."),
    distractors: int = typer.Option(50, "--distractors-per-type", help="Test distractors per document type (paper: 50)."),
    negatives: int = typer.Option(4, "--negatives-per-type", help="Training negatives per hard type (paper: 4, 12 in all)."),
    lr: float = typer.Option(1e-5, "--lr", help="Fine-tuning learning rate (paper: 1e-5)."),
    prompt_lr: float = typer.Option(1e-4, "--prompt-lr", help="Soft-prompt learning rate (paper Table 2: 1e-4)."),
    batch_size: int = typer.Option(32, "--batch-size", help="Queries per fine-tuning step (paper: 32)."),
    micro_batch_size: int = typer.Option(8, "--micro-batch-size", help="Queries per forward pass (memory bound only)."),
    prompt_init: str = typer.Option("random", "--prompt-init", help="Soft-prompt start: random (OptiPrompt default) or template (the relation's template words)."),
    prompt_train_limit: Optional[int] = typer.Option(None, "--prompt-train-limit", help="Cap soft-prompt train and dev facts per relation (CPU runs)."),
    device: str = typer.Option("auto", "--device", help="auto (accelerate's choice), cpu, cuda, cuda:1 ..."),
    dtype: str = typer.Option("float32", "--dtype", help="float32, bfloat16 or float16."),
) -> None:
    """Measure the acquisition-utilization gap (XTEVAL): acc(D), downstream retrieval, Gap 1 and Gap 2.

    Multi-GPU: `accelerate launch -m kbench evaluate xteval ...` (or `torchrun --nproc_per_node N -m kbench ...`)
    fine-tunes with DDP and splits the retrieval test between processes; on CPUs, set ACCELERATE_USE_CPU=1."""
    from rich.console import Console

    from kbench.errors import UserError
    from kbench.evaluate.xteval.crossencoder import FinetuneConfig
    from kbench.evaluate.xteval.pipeline import Run, XtevalConfig
    from kbench.evaluate.xteval.softprompt import SoftPromptConfig
    from pydantic import ValidationError

    settings = {"iid": ["iid"], "ood": ["ood"], "both": ["iid", "ood"]}.get(split)
    if settings is None:
        raise UserError(f"--split must be iid, ood or both, not {split!r}")
    try:
        cfg = XtevalConfig(
            extraction=extraction, top1=top1, settings=settings, extraction_seeds=extraction_seeds or seeds,
            split_seeds=split_seeds or seeds, finetune_seeds=finetune_seeds or seeds, dataset_split=dataset_split,
            limit=limit, distractors_per_type=distractors,
            finetune=FinetuneConfig(lr=lr, epochs=epochs, negatives_per_type=negatives, batch_size=batch_size,
                                    micro_batch_size=micro_batch_size),
            softprompt=SoftPromptConfig(lr=prompt_lr, epochs=prompt_epochs or epochs, max_train_facts=prompt_train_limit,
                                        init=prompt_init),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise UserError(f"invalid option {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from exc
    console = Console(stderr=True)
    variants = None if template_variants == "all" else tuple(v.strip() for v in template_variants.split(",") if v.strip())
    run = Run(dataset, model, out, cfg, device=device, dtype=dtype, known_facts=known_facts,
              templates_dir=templates_dir, template_variants=variants, prompt_train_dir=prompt_train_dir)
    results = run.execute(console)
    from accelerate import PartialState

    if not PartialState().is_main_process:  # under `accelerate launch`, one process reports
        return
    for setting, agg in results["settings"].items():
        console.print(f"{setting}: acc_D {agg['acc_D']['mean']:.3f}  downstream {agg['downstream_accuracy']['mean']:.3f} "
                      f"(chance {agg['chance_accuracy']['mean']:.3f})  "
                      f"usable {agg['usable_knowledge']['mean']:.3f}  gap1 {agg['gap1']['mean']:.3f}  "
                      f"gap2 {agg['gap2']['mean']:.3f}  ({len(agg['runs'])} runs)")
    console.print(f"results: {out / 'results.json'}, {out / 'report.md'}, {out / 'gaps.png'}")
