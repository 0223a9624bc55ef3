"""`kbench evaluate extraction`: which facts of a dataset split does a model know?

Input: a dataset folder written by `write_dataset` (`data/<config>/<split>.parquet`, Question
columns of `schemas/question.v1.json`). Per item, through the batched `ModelRunner`:

* protocol `maple` (default, causal LMs): a greedy answer (`prompts.STOPS`, at most
  `max_new_tokens`), judged by MAPLE matching (`correct`) and strict exact match (`exact`)
  against the gold + aliases; plus the gold's first-token rank and log-probability.
* protocol `lama` (Petroni et al.): only items whose object is one token of the model's
  vocabulary (and, with `common_vocab`, listed in that file; ranks are then taken over those
  words only); `correct` = `exact` = the gold token ranked first. Masked LMs read the mask.

Outputs in the run directory (`rundir.RunDir`): `items.parquet` / `items.jsonl` (one row per
item), `results.json` (schema `results.extraction.v1.json`: overall, per relation, per
frequency bin; MAPLE and exact side by side; LAMA P@1 as the macro mean over relations of
distinct facts) and `known_facts.parquet`, the known-fact set D^theta: the dataset rows the
model answered correctly, with its prediction and rank (the input of XTEVAL and KEE).
Finished items are journalled per chunk, so a rerun of the same command skips them.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kbench.errors import InputError, UserError
from kbench.evaluate.prompts import Prompt, build_prompts
from kbench.evaluate.rundir import RunDir
from kbench.io import sha256_file, write_parquet
from kbench.metrics.matching import exact_match, maple_correct, precision_at_1

RESULTS_SCHEMA = "results.extraction.v1.json"
CHUNK_ITEMS = 256   # items journalled together; the runner batches inside a chunk


@dataclass(frozen=True)
class ExtractionSettings:
    split: str = "test"
    config: str | None = None
    limit: int | None = None
    prompt: str = "cloze"
    fewshot: int = 0
    seed: int = 0
    protocol: str = "maple"
    common_vocab: str | None = None
    case_sensitive: bool = False
    max_new_tokens: int = 16


def split_path(dataset: Path, split: str, config: str | None) -> Path:
    data = dataset / "data"
    configs = sorted(p.name for p in data.glob("*") if p.is_dir()) if data.is_dir() else []
    if not configs:
        raise UserError(f"{dataset} is not a dataset folder (no data/<config>/<split>.parquet); build one with `kbench build`")
    if config is None:
        config = "default" if "default" in configs else configs[0]
    if config not in configs:
        raise UserError(f"{dataset}: no config {config!r}; configs: {', '.join(configs)}")
    path = data / config / f"{split}.parquet"
    if not path.is_file():
        splits = sorted(p.stem for p in (data / config).glob("*.parquet"))
        raise UserError(f"{dataset}: config {config!r} has no split {split!r}; splits: {', '.join(splits)}")
    return path


def read_rows(path: Path) -> list[dict]:
    import polars as pl

    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # polars raises several error types for a damaged file
        raise InputError(path, f"cannot read parquet: {exc}") from exc
    needed = ["id", "relation", "subject", "object", "answers", "prompt_cloze", "prompt_masked", "question"]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise InputError(path, f"missing column(s) {', '.join(missing)} (see schemas/question.v1.json)")
    return frame.to_dicts()


def seeded_sample(rows: list[dict], limit: int | None, seed: int) -> list[dict]:
    """`limit` rows chosen by `seed` from the rows sorted by id, returned in dataset order."""
    if limit is None or limit >= len(rows):
        return rows
    if limit < 1:
        raise UserError(f"--limit must be >= 1, got {limit}")
    order = sorted(range(len(rows)), key=lambda i: rows[i]["id"])
    chosen = sorted(random.Random(seed).sample(order, limit))
    return [rows[i] for i in chosen]


def _single_token(tokenizer, text: str) -> int | None:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids[0] if len(ids) == 1 else None


def lama_filter(rows: list[dict], prompts: list[Prompt], tokenizer, common_vocab: str | None):
    """Keep items whose gold is a single token (and in the common vocabulary); return the kept
    (rows, prompts), the drop counts and the candidate token ids (None = full vocabulary)."""
    vocab = None
    if common_vocab:
        path = Path(common_vocab)
        if not path.is_file():
            raise UserError(f"--common-vocab: file not found: {path}")
        vocab = {w.strip() for w in path.read_text(encoding="utf-8").splitlines() if w.strip()}
    kept_rows, kept_prompts = [], []
    drops = {"multi_token_object": 0, "not_in_common_vocab": 0}
    for row, prompt in zip(rows, prompts):
        if vocab is not None and row["object"] not in vocab:
            drops["not_in_common_vocab"] += 1
        elif _single_token(tokenizer, prompt.gold) is None:
            drops["multi_token_object"] += 1
        else:
            kept_rows.append(row)
            kept_prompts.append(prompt)
    candidates = None
    if vocab is not None:
        prefix = prompts[0].gold[:len(prompts[0].gold) - len(rows[0]["object"])] if prompts else ""
        candidates = sorted({t for w in vocab if (t := _single_token(tokenizer, prefix + w)) is not None})
    return kept_rows, kept_prompts, drops, candidates


def _item_rows(runner, rows: Sequence[dict], prompts: Sequence[Prompt], settings: ExtractionSettings,
               candidates: list[int] | None) -> list[dict]:
    texts, golds = [p.text for p in prompts], [p.gold for p in prompts]
    if settings.protocol == "maple":
        # One call per stop list (a prompt form has one), so batches stay full; the ranking
        # reuses the generation's prefill.
        both = runner.generate_and_rank(texts, golds, settings.max_new_tokens, stop=list(prompts[0].stop),
                                        candidate_ids=candidates)
        predictions, ranks = [t for t, _, _ in both], [(r, lp) for _, r, lp in both]
    else:
        predictions, ranks = [None] * len(rows), runner.rank_first_token(texts, golds, candidate_ids=candidates)
    out = []
    for row, prompt, (rank, logprob), prediction in zip(rows, prompts, ranks, predictions):
        if prediction is None:
            correct = exact = rank == 1
        else:
            prediction = prediction.strip()
            correct = maple_correct(prediction, row["answers"], case_sensitive=settings.case_sensitive)
            exact = exact_match(prediction, row["answers"], case_sensitive=settings.case_sensitive)
        out.append({"id": row["id"], "relation": row["relation"], "relation_label": row.get("relation_label", ""),
                    "subject": row["subject"], "object": row["object"], "answers": list(row["answers"]),
                    "frequency_bin": row.get("frequency_bin"), "prompt": prompt.text, "prediction": prediction,
                    "correct": bool(correct), "exact": bool(exact), "gold_rank": int(rank), "gold_logprob": float(logprob)})
    return out


def summarize(rows: Sequence[dict]) -> dict:
    n = len(rows)
    mean = (lambda values: sum(values) / n) if n else (lambda values: 0.0)
    return {"n": n, "maple_accuracy": mean([r["correct"] for r in rows]), "exact_accuracy": mean([r["exact"] for r in rows]),
            "rank1_accuracy": mean([r["gold_rank"] == 1 for r in rows]),
            "mean_gold_logprob": mean([r["gold_logprob"] for r in rows])}


def aggregate(rows: Sequence[dict]) -> dict:
    p_at_1 = precision_at_1((r["relation"], r["subject"], r["object"], r["gold_rank"] == 1) for r in rows)
    by_relation: dict[str, list[dict]] = defaultdict(list)
    by_bin: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_relation[r["relation"]].append(r)
        by_bin[r["frequency_bin"] or "unbinned"].append(r)
    return {
        "overall": {**summarize(rows), "lama_p_at_1": p_at_1["macro"]},
        "per_relation": {rel: {**summarize(rs), "lama_p_at_1": p_at_1["per_relation"][rel]} for rel, rs in sorted(by_relation.items())},
        "per_frequency_bin": {b: summarize(rs) for b, rs in sorted(by_bin.items())},
    }


def run_extraction(loaded, runner, dataset: Path, out: Path, settings: ExtractionSettings, progress=None) -> dict:
    """Evaluate, journal, finalise; return the results dict (also in out/results.json).
    `progress(advance, total)` is called after each chunk with the number of items finished."""
    import polars as pl

    if settings.protocol not in ("maple", "lama"):
        raise UserError(f"unknown protocol {settings.protocol!r}; choose maple or lama")
    if settings.protocol == "maple" and loaded.kind != "causal":
        raise UserError("the maple protocol generates answers and needs a causal LM; use --protocol lama for masked LMs")
    path = split_path(dataset, settings.split, settings.config)
    rows = seeded_sample(read_rows(path), settings.limit, settings.seed)
    train_rows = []
    if settings.fewshot:
        train_rows = read_rows(split_path(dataset, "train", settings.config))
    prompts = build_prompts(rows, settings.prompt, loaded.tokenizer, loaded.kind, settings.fewshot, train_rows, settings.seed)
    drops, candidates = {}, None
    if settings.protocol == "lama":
        rows, prompts, drops, candidates = lama_filter(rows, prompts, loaded.tokenizer, settings.common_vocab)
    config = {"model": loaded.identity, "model_name": loaded.name, "dataset_file": sha256_file(path), **asdict(settings)}
    started, computed = time.perf_counter(), 0
    with RunDir(out, "extraction", config) as run:
        done = run.done_ids()
        todo = [i for i, row in enumerate(rows) if row["id"] not in done]
        if progress is not None and len(done):
            progress(len(rows) - len(todo), len(rows))
        for start in range(0, len(todo), CHUNK_ITEMS):
            chunk = todo[start:start + CHUNK_ITEMS]
            run.append(_item_rows(runner, [rows[i] for i in chunk], [prompts[i] for i in chunk], settings, candidates))
            computed += len(chunk)
            if progress is not None:
                progress(len(chunk), len(rows))
        by_id = {r["id"]: r for r in run.rows()}
        items = [by_id[row["id"]] for row in rows]
        seconds = time.perf_counter() - started
        results = {
            "schema": "results.extraction.v1", "task": "extraction",
            "model": {"name": loaded.name, "identity": loaded.identity, "kind": loaded.kind, "dtype": loaded.dtype},
            "dataset": {"path": str(dataset), "file": str(path), "sha256": config["dataset_file"], "split": settings.split},
            "settings": asdict(settings),
            "protocol_drops": drops,
            **aggregate(items),
            "known_facts": {"file": "known_facts.parquet", "count": sum(r["correct"] for r in items),
                            "criterion": "maple_correct" if settings.protocol == "maple" else "gold_rank == 1"},
            "timing": {"seconds": round(seconds, 3), "items_computed": computed,
                       "items_per_second": round(computed / seconds, 3) if computed and seconds > 0 else None},
        }
        known_ids = {r["id"] for r in items if r["correct"]}
        known = [{**row, "prediction": by_id[row["id"]]["prediction"], "gold_rank": by_id[row["id"]]["gold_rank"],
                  "correct": True} for row in rows if row["id"] in known_ids]
        frame = pl.DataFrame(known, infer_schema_length=None) if known else pl.DataFrame(
            schema={"id": pl.Utf8, "relation": pl.Utf8, "subject": pl.Utf8, "object": pl.Utf8, "correct": pl.Boolean})
        write_parquet(out / "known_facts.parquet", frame)
        run.finalize(items, results, RESULTS_SCHEMA)
    return results
