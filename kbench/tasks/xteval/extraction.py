"""Step 1 of XTEVAL: D^theta, the facts of D the model predicts at top-1, zero-shot.

Three sources, one output (`Extraction`: the ids of the known facts, and the facts that cannot
be probed at all); "predicts at top-1" is defined in `kbench.models.training.probes` for both
kinds of prompt; the probes run through the model's `kbench.models.training.Trainer`:
- "soft" (the paper's default): per-relation OptiPrompt vectors around the head
  (`kbench.tasks.xteval.training.softprompt`), trained on train/dev facts of the relation that are not in D (AutoPrompt
  splits, or the dataset's train/dev splits);
- "discrete": the dataset's own cloze prompts (`prompt_cloze` for causal LMs, `prompt_masked`
  for masked LMs), the prompts `kbench evaluate extraction` reads;
- a known-facts file written by an extraction run: parquet or jsonl with an `id` column and,
  optionally, a boolean `correct` column (rows with correct = false are not known).
Facts that cannot be probed leave D (the denominator of acc_D and Gap 1) and are counted:
`Extraction.unreadable` (a masked LM reads the tail at one mask, so multi-token tails) and
`Extraction.untrained` (soft prompts: the relation has no train/dev facts, e.g. Google-RE's).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kbench.errors import InputError
from kbench.models.training import Trainer
from kbench.tasks.xteval.training.softprompt import SoftPromptConfig, load_or_train


@dataclass
class Extraction:
    known: list[str]  # ids of the facts predicted at top-1 (D^theta)
    unreadable: list[str]  # ids left out of D: a masked LM cannot read the tail at one mask
    untrained: list[str] = field(default_factory=list)  # ids left out of D: no soft prompt for the relation


def readable_rows(trainer: Trainer, rows: Sequence[dict], criterion: str) -> tuple[list[tuple[dict, list[int]]], list[str]]:
    """(row, gold ids) of the facts the top-1 criterion can read, and the ids of the others."""
    readable, unreadable = [], []
    for r in rows:
        targets = trainer.answer_targets(str(r["object"]), criterion)
        if targets is None:
            unreadable.append(str(r["id"]))
        else:
            readable.append((r, targets))
    return readable, unreadable


def discrete_known(trainer: Trainer, rows: Sequence[dict], criterion: str, batch_size: int = 32) -> Extraction:
    """D^theta with the dataset's cloze prompts (one template per fact, as `evaluate extraction`)."""
    readable, unreadable = readable_rows(trainer, rows, criterion)
    column = "prompt_masked" if trainer.kind == "masked" else "prompt_cloze"
    probes = trainer.prompt_probes([str(r[column]) for r, _ in readable], [targets for _, targets in readable])
    hits = trainer.probe_hits(probes, batch_size)
    return Extraction([str(r["id"]) for (r, _), hit in zip(readable, hits) if hit], unreadable)


def soft_known(
    trainer: Trainer,
    rows: Sequence[dict],
    pairs: Callable[[str], tuple[list, list]],
    save_dir: Path,
    cfg: SoftPromptConfig,
    seed: int,
    criterion: str,
    batch_size: int = 32,
    write: bool = True,
) -> Extraction:
    """D^theta with the relation's soft prompt (trained, or reused from `save_dir`). A relation's
    vectors never see its own facts of D: their subjects are excluded from the training pairs."""
    readable, unreadable = readable_rows(trainer, rows, criterion)
    by_relation: dict[str, list[tuple[dict, list[int]]]] = defaultdict(list)
    for row, targets in readable:
        by_relation[row["relation"]].append((row, targets))
    heads = defaultdict(set)
    for r in rows:
        heads[r["relation"]].add(str(r["subject"]))
    known: list[str] = []
    untrained: list[str] = []
    for relation in sorted(by_relation):
        group = by_relation[relation]
        template = next((r["template"] for r, _ in group if r.get("template")), None)
        vectors = trainer.run(
            load_or_train,
            relation,
            pairs,
            save_dir,
            cfg,
            seed,
            write=write,
            template=template,
            criterion=criterion,
            exclude_heads=frozenset(heads[relation]),
        )
        if vectors is None:
            untrained += [str(r["id"]) for r, _ in group]
            continue
        probes = [trainer.soft_probe(str(r["subject"]), targets, cfg.n_before, cfg.n_after) for r, targets in group]
        hits = trainer.probe_hits(probes, batch_size, vectors)
        known += [str(r["id"]) for (r, _), hit in zip(group, hits) if hit]
    return Extraction(known, unreadable, untrained)


def read_known_facts(path: Path, ids: set[str]) -> list[str]:
    """Known ids from an extraction run's file, restricted to the facts of D (`ids`)."""
    import polars as pl

    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found")
    try:
        frame = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_ndjson(path)
    except Exception as exc:  # polars raises several types for unreadable files
        raise InputError(path, f"cannot read known facts: {exc}") from exc
    if "id" not in frame.columns:
        raise InputError(path, "needs an `id` column (and optionally a boolean `correct` column)", key="id")
    if "correct" in frame.columns:
        frame = frame.filter(pl.col("correct"))
    return [i for i in frame["id"].cast(pl.Utf8).to_list() if i in ids]
