"""`kbench evaluate qa`: knowledge-update QA (EvolvingQA) on a dataset from `pipelines/evolving.toml`.

Per item, through the batched `ModelRunner`: a greedy answer (stop at a newline, at most
`max_new_tokens`), stripped, to the question in a prompt form of `kbench.evaluate.prompts`
(`question`: an instruction + "Question: <q>\nAnswer:"; `chat`: the tokenizer's chat template),
optionally after `fewshot` solved examples drawn from the Unchanged items (never the item's subject). Scores (`kbench.metrics.qa`, `--metric official|card`):
  * Unchanged and New items: EM / F1 against the item's answer;
  * Edited items, twice: Outdated against `answer1` (the old object; a model that learnt the
    update scores near 0 here) and Updated against `answer2` (the new object).
EM and F1 are averaged per slice and reported x100. For edited items the runner also scores both
answers as continuations of the prompt (" " + answer, summed log-probabilities):
`prefers_updated` is the share whose updated answer is more likely than the outdated one (a tie
counts for "outdated", as the official script does).

Outputs (`rundir.RunDir`): per-item rows and `results.json` (schema `results.qa.v1.json`);
finished items are journalled, so a rerun resumes. `--limit N` evaluates a seeded sample.

Continual-update loop (README): `kbench read --text DATASET/corpus/new_snapshot.jsonl
--only change=updated --out CKPT`, then `kbench evaluate qa --model CKPT` -- Outdated should fall
and Updated rise if reading taught the model the new facts.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kbench.errors import InputError, UserError
from kbench.evaluate.extraction import seeded_sample, split_path
from kbench.evaluate.prompts import Prompt, build_prompts
from kbench.evaluate.rundir import RunDir
from kbench.io import sha256_file
from kbench.metrics.qa import SCORERS, get_scorer

RESULTS_SCHEMA = "results.qa.v1.json"
CATEGORIES = ("unchanged", "new", "edited")
SLICES = ("unchanged", "new", "outdated", "updated")
CHUNK_ITEMS = 128
NEEDED = ("id", "relation", "question", "answer", "answer1", "answer2", "category")


@dataclass(frozen=True)
class QASettings:
    metric: str = "official"
    prompt: str = "question"
    fewshot: int = 0
    config: str | None = None
    limit: int | None = None
    seed: int = 0
    max_new_tokens: int = 16


def build_qa_prompts(items: list[dict], settings: QASettings, tokenizer, examples: list[dict]) -> list[Prompt]:
    """Prompts in the shared forms; a row's `object` is its current answer (answer2)."""
    as_questions = [{**r, "object": r["answer"], "subject": r.get("subject") or r["question"]} for r in items]
    pool = [{**r, "object": r["answer"], "subject": r.get("subject") or r["question"]} for r in examples]
    return build_prompts(as_questions, settings.prompt, tokenizer, "causal", settings.fewshot, pool, settings.seed)


def read_items(dataset: Path, config: str | None) -> list[dict]:
    import polars as pl

    rows = []
    for category in CATEGORIES:
        try:
            path = split_path(dataset, category, config)
        except UserError:
            continue  # a snapshot pair may have no item of some category
        frame = pl.read_parquet(path)
        missing = [c for c in NEEDED if c not in frame.columns]
        if missing:
            raise InputError(path, f"missing column(s) {', '.join(missing)}; is this an evolving QA dataset (schemas/qa_item.v1.json)?")
        rows += frame.to_dicts()
    if not rows:
        raise UserError(f"{dataset}: no unchanged/new/edited split; build one with pipelines/evolving.toml")
    return rows


def _item_rows(runner, items: list[dict], built: list[Prompt], settings: QASettings) -> list[dict]:
    em, f1 = get_scorer(settings.metric)
    prompts = [p.text for p in built]
    predictions = [p.strip() for p in runner.generate(prompts, settings.max_new_tokens, stop=list(built[0].stop))]
    edited = [i for i, r in enumerate(items) if r["category"] == "edited"]
    # how an answer continues its prompt: " " + answer after plain text, the bare answer after a chat turn
    lead = [built[i].gold[:len(built[i].gold) - len(items[i]["answer"])] for i in range(len(items))]
    scored = runner.score_answers([prompts[i] for i in edited for _ in (1, 2)],
                                  [lead[i] + items[i][key] for i in edited for key in ("answer1", "answer2")])
    likelihood = {i: (scored[2 * k][0], scored[2 * k + 1][0]) for k, i in enumerate(edited)}
    out = []
    for i, (row, prediction) in enumerate(zip(items, predictions)):
        item = {"id": row["id"], "relation": row["relation"], "category": row["category"], "question": row["question"],
                "prompt": prompts[i], "prediction": prediction, "answer": row["answer"],
                "answer1": row["answer1"], "answer2": row["answer2"]}
        if row["category"] == "edited":
            lp1, lp2 = likelihood[i]
            item.update({"em_outdated": em(prediction, row["answer1"]), "f1_outdated": f1(prediction, row["answer1"]),
                         "em_updated": em(prediction, row["answer2"]), "f1_updated": f1(prediction, row["answer2"]),
                         "logprob_answer1": lp1, "logprob_answer2": lp2, "prefers_updated": lp2 > lp1})
        else:
            item.update({"em": em(prediction, row["answer"]), "f1": f1(prediction, row["answer"])})
        out.append(item)
    return out


def aggregate(items: list[dict]) -> dict:
    def mean100(values: list[float]) -> float | None:
        return 100.0 * sum(values) / len(values) if values else None

    slices = {}
    for name in SLICES:
        if name in ("outdated", "updated"):
            rows = [r for r in items if r["category"] == "edited"]
            em_key, f1_key = f"em_{name}", f"f1_{name}"
        else:
            rows = [r for r in items if r["category"] == name]
            em_key, f1_key = "em", "f1"
        slices[name] = {"n": len(rows), "em": mean100([r[em_key] for r in rows]), "f1": mean100([r[f1_key] for r in rows])}
    edited = [r for r in items if r["category"] == "edited"]
    preference = {"n": len(edited), "prefers_updated": sum(r["prefers_updated"] for r in edited) / len(edited) if edited else None,
                  "ties": sum(r["logprob_answer1"] == r["logprob_answer2"] for r in edited)}
    return {"splits": slices, "edited_preference": preference}


def run_qa(runner, dataset: Path, out: Path, settings: QASettings, progress=None) -> dict:
    """Evaluate, journal, finalise; return the results dict (also in out/results.json)."""
    if settings.metric not in SCORERS:
        raise UserError(f"unknown --metric {settings.metric!r}; choose one of {', '.join(SCORERS)}")
    loaded = runner.loaded
    if loaded.kind != "causal":
        raise UserError("kbench evaluate qa generates answers and needs a causal LM")
    everything = read_items(dataset, settings.config)
    items = seeded_sample(everything, settings.limit, settings.seed)
    examples = [r for r in everything if r["category"] == "unchanged"] if settings.fewshot else []
    prompts = {r["id"]: p for r, p in zip(items, build_qa_prompts(items, settings, loaded.tokenizer, examples))}
    files = sorted(p for p in (dataset / "data").rglob("*.parquet"))
    config = {"model": loaded.identity, "model_name": loaded.name,
              "dataset_files": [sha256_file(p) for p in files], **asdict(settings)}
    started, computed = time.perf_counter(), 0
    with RunDir(out, "qa", config) as run:
        done = run.done_ids()
        todo = [r for r in items if r["id"] not in done]
        if progress is not None and done:
            progress(len(items) - len(todo), len(items))
        for start in range(0, len(todo), CHUNK_ITEMS):
            chunk = todo[start:start + CHUNK_ITEMS]
            run.append(_item_rows(runner, chunk, [prompts[r["id"]] for r in chunk], settings))
            computed += len(chunk)
            if progress is not None:
                progress(len(chunk), len(items))
        by_id = {r["id"]: r for r in run.rows()}
        rows = [by_id[r["id"]] for r in items]
        summary = aggregate(rows)
        splits = summary["splits"]
        headline = {f"qa:{name}:em": splits[name]["em"] / 100 for name in ("unchanged", "new", "updated") if splits[name]["n"]}
        if summary["edited_preference"]["n"]:
            headline["qa:prefers_updated"] = summary["edited_preference"]["prefers_updated"]
        seconds = time.perf_counter() - started
        results = {
            "schema": "results.qa.v1", "task": "qa",
            "model": {"name": loaded.name, "identity": loaded.identity, "kind": loaded.kind, "dtype": loaded.dtype},
            "dataset": {"path": str(dataset), "files": [str(p) for p in files]},
            "settings": asdict(settings),
            **summary, "headline": headline,
            "timing": {"seconds": round(seconds, 3), "items_computed": computed},
        }
        run.finalize(rows, results, RESULTS_SCHEMA)
    return results
