"""Step 1 of XTEVAL: D^theta, the facts of D the model predicts at top-1, zero-shot.

Two sources here, one output (the ids of the known facts); discrete prompts are the extraction
task's (`kbench.evaluate.engine.evaluate_task("extraction", ...)`, called by the pipeline):
- "soft": per-relation OptiPrompt vectors around the head (`softprompt.py`), trained on
  train/dev facts of the relation that are not in D (AutoPrompt splits, or the dataset's
  train/dev splits);
- a known-facts file written by an extraction run: parquet or jsonl with an `id` column and,
  optionally, a boolean `correct` column (rows with correct = false are not known).
For soft prompts, "predicts at top-1" is defined in `probes.py` (every gold token is the argmax).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from kbench.errors import InputError
from kbench.evaluate.xteval.probes import run_probes, soft_probe
from kbench.evaluate.xteval.softprompt import SoftPromptConfig, load_or_train


def _batched_hits(loaded, probes, batch_size: int, vectors=None, progress: Callable[[int], None] | None = None) -> list[bool]:
    import torch

    hits: list[bool] = []
    with torch.no_grad():
        for start in range(0, len(probes), batch_size):
            chunk = probes[start:start + batch_size]
            hits += run_probes(loaded.model, chunk, loaded.tokenizer.pad_token_id, vectors)[1].tolist()
            if progress is not None:
                progress(len(chunk))
    return hits


def soft_known(loaded, rows: Sequence[dict], pairs: Callable[[str], tuple[list, list]], save_dir: Path,
               cfg: SoftPromptConfig, seed: int, batch_size: int = 32, progress: Callable[[int], None] | None = None,
               write: bool = True) -> list[str]:
    """Ids of the rows predicted at top-1 with the relation's soft prompt (trained or reused)."""
    by_relation: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_relation[r["relation"]].append(r)
    known: list[str] = []
    for relation in sorted(by_relation):
        template = next((r["template"] for r in by_relation[relation] if r.get("template")), None)
        vectors = load_or_train(loaded, relation, pairs, save_dir, cfg, seed, write=write, template=template)
        group = by_relation[relation]
        probes = [soft_probe(loaded.tokenizer, loaded.kind, r["subject"], r["object"], cfg.n_before, cfg.n_after)
                  for r in group]
        hits = _batched_hits(loaded, probes, batch_size, vectors, progress)
        known += [r["id"] for r, hit in zip(group, hits) if hit]
    return known


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
