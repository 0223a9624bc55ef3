"""`kbench evaluate xteval`: the acquisition-utilization gap (extraction -> retrieval -> gaps)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.common import evaluate_command


@evaluate_command("xteval")
def xteval(
    setting: str = typer.Option("iid", "--setting", help="iid (random 60/40 of D), ood (relation-disjoint 60/40) or both."),
    extraction: str = typer.Option(
        "soft", "--extraction", help="soft (OptiPrompt vectors, the paper's) or discrete (the dataset's cloze prompts)."
    ),
    top1: str = typer.Option(
        "first-token",
        "--top1",
        help="Known = top-1: first-token (the first gold token is the argmax) or full-answer "
        "(every gold token); masked LMs read the one mask.",
    ),
    epochs: int = typer.Option(
        20, "--epochs", help="Fine-tuning epochs (paper: 20); also soft-prompt epochs unless --prompt-epochs."
    ),
    prompt_epochs: Optional[int] = typer.Option(None, "--prompt-epochs", help="Soft-prompt training epochs (paper: 20)."),
    seeds: int = typer.Option(3, "--seeds", help="Seeds per level: extraction x split x fine-tune (paper: 3 -> 27 runs)."),
    extraction_seeds: Optional[int] = typer.Option(None, "--extraction-seeds", help="Override the extraction seed count."),
    split_seeds: Optional[int] = typer.Option(None, "--split-seeds", help="Override the split seed count."),
    finetune_seeds: Optional[int] = typer.Option(None, "--finetune-seeds", help="Override the fine-tune seed count."),
    known_facts: Optional[Path] = typer.Option(
        None, "--known-facts", help="D^theta from an extraction run (parquet/jsonl: id[, correct]) instead of step 1."
    ),
    prompt_train_dir: Optional[Path] = typer.Option(
        None,
        "--prompt-train-dir",
        help="Soft-prompt data: <relation>/train.jsonl and dev.jsonl (AutoPrompt splits); "
        "default: the dataset's train/dev splits.",
    ),
    templates_dir: Optional[Path] = typer.Option(
        None, "--templates-dir", help="A LAMA folder (relations.jsonl, prompt_variants/) adding document templates."
    ),
    template_variants: str = typer.Option(
        "LPAQA",
        "--template-variants",
        help="With --templates-dir: paraphrase files prompt_variants/<NAME>_relations.jsonl to add (comma list), or 'all'.",
    ),
    distractors: int = typer.Option(50, "--distractors-per-type", help="Test distractors per document type (paper: 50)."),
    negatives: int = typer.Option(4, "--negatives-per-type", help="Training negatives per hard type (paper: 4, 12 in all)."),
    lr: float = typer.Option(1e-5, "--lr", help="Fine-tuning learning rate (paper: 1e-5)."),
    prompt_lr: float = typer.Option(1e-4, "--prompt-lr", help="Soft-prompt learning rate (paper Table 2: 1e-4)."),
    train_batch_size: int = typer.Option(32, "--train-batch-size", help="Queries per fine-tuning step (paper: 32)."),
    micro_batch_size: int = typer.Option(8, "--micro-batch-size", help="Queries per training forward pass (memory bound only)."),
    prompt_init: str = typer.Option(
        "random",
        "--prompt-init",
        help="Soft-prompt start: random (OptiPrompt default) or template (the relation's template words).",
    ),
    prompt_train_limit: Optional[int] = typer.Option(
        None, "--prompt-train-limit", help="Cap soft-prompt train and dev facts per relation (CPU runs)."
    ),
) -> dict:
    """Measure the acquisition-utilization gap (XTEVAL): acc(D), downstream retrieval, Gap 1 and Gap 2.
    Rerunning the same command resumes; a rerun with more --seeds or --setting both in a new --out starts over.

    Multi-GPU: `accelerate launch -m kbench evaluate xteval ... --device cuda` fine-tunes with DDP and splits the
    retrieval test between processes; on CPUs, ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu ..."""
    values = {
        "setting": setting,
        "extraction": extraction,
        "top1": top1,
        "extraction_seeds": extraction_seeds or seeds,
        "split_seeds": split_seeds or seeds,
        "finetune_seeds": finetune_seeds or seeds,
        "distractors_per_type": distractors,
        "finetune": {
            "lr": lr,
            "epochs": epochs,
            "negatives_per_type": negatives,
            "batch_size": train_batch_size,
            "micro_batch_size": micro_batch_size,
        },
        "softprompt": {
            "lr": prompt_lr,
            "epochs": prompt_epochs or epochs,
            "max_train_facts": prompt_train_limit,
            "init": prompt_init,
        },
        "known_facts": str(known_facts) if known_facts else None,
        "prompt_train_dir": str(prompt_train_dir) if prompt_train_dir else None,
        "templates_dir": str(templates_dir) if templates_dir else None,
        "template_variants": tuple(v.strip() for v in template_variants.split(",") if v.strip()),
    }
    return values
