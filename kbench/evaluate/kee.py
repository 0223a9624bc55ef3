"""`kbench evaluate kee`: knowledge-elicitation techniques against the greedy baseline (MAPLE).

Input: a dataset folder (`data/<config>/<split>.parquet`, Question columns). Per item and
technique (`kbench.evaluate.techniques`), through the batched, cached `ModelRunner`: the final
answer, MAPLE correctness and strict exact match, and the gold first token's full-vocabulary
rank under the technique. For the shallow/deep partition, `max(k, sweep_max)` samples per item
at each temperature with seed A = 42 on the baseline prompt.

Outputs in the run directory (`rundir.RunDir`):
- `items.parquet` / `items.jsonl`: one row per (technique, item), plus one row per
  (partition temperature, item) holding the seed-A samples' correctness;
- `results.json` (schema `results.kee.v1.json`): per technique Acc, exact Acc, Gain, Loss,
  PRS improved/tied/worsened, SGR/DGR at each temperature, overall and per frequency bin;
  the Kendall tau of the method ranking at each K against K = `k`; items/s per technique;
- `comparison.md`, `comparison.csv`, `prs.png`, `gain_loss.png` (`kbench.evaluate.kee_report`).

Undefined ratios (empty denominators) are null in JSON and "undefined" in tables. Resume: rows
are journalled per technique; every model call is cached per item, and fitted vectors/probes
are stored in `fits/`, so a rerun recomputes nothing that finished.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kbench.errors import UserError
from kbench.evaluate.extraction import read_rows, seeded_sample, split_path
from kbench.evaluate.rundir import RunDir
from kbench.evaluate.techniques import get_technique, known_techniques
from kbench.evaluate.techniques.base import (ANSWER_STOP, MAX_ANSWER_TOKENS, KeeContext, KeeItem, use_chat,
                                             clean_answer)
from kbench.io import sha256_file
from kbench.metrics import kee as metrics
from kbench.metrics.matching import exact_match, maple_correct

RESULTS_SCHEMA = "results.kee.v1.json"
SEED_A = 42
PARTITION = "partition"
FITTING_SPLITS = ("train", "dev")


@dataclass(frozen=True)
class KeeSettings:
    techniques: tuple[str, ...] = ("baseline",)
    split: str = "test"
    config: str | None = None
    limit: int | None = None
    seed: int = 0                          # chooses the --limit sample and the fitting pool sample
    k: int = 20                            # samples that split base failures into shallow / deep
    sweep_max: int = 30                    # K = 1..sweep_max for the ranking-stability check
    temperatures: tuple[float, ...] = (0.7, 1.2)
    recite_runs: int = 20
    fit_pool_limit: int = 100              # train (or dev) split items used to fit CAA / ITI
    case_sensitive: bool = False
    prompt: str = "auto"                   # auto (chat template when the model has one) | chat | question


def parse_techniques(text: str) -> tuple[str, ...]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = known_techniques()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserError(f"unknown technique(s) {', '.join(unknown)}; known techniques: {', '.join(known)}")
    if not names:
        raise UserError(f"--techniques is empty; known techniques: {', '.join(known)}")
    # the baseline is what every technique is compared with, so it always runs, first
    return ("baseline", *dict.fromkeys(n for n in names if n != "baseline"))


def to_item(row: dict) -> KeeItem:
    answers = [a for a in (row.get("answers") or []) if a] or [row["object"]]
    if row["object"] in answers:
        answers.remove(row["object"])
    return KeeItem(id=str(row["id"]), question=row["question"], answers=(row["object"], *answers),
                   relation=row.get("relation") or "", frequency_bin=row.get("frequency_bin"))


def _technique_params(name: str, settings: KeeSettings) -> dict:
    return {"runs": settings.recite_runs} if name == "recite" else {}


def _output_rows(name: str, items: Sequence[KeeItem], outputs, case_sensitive: bool) -> list[dict]:
    rows = []
    for item, out in zip(items, outputs):
        rows.append({"id": f"{name}::{item.id}", "technique": name, "item_id": item.id, "relation": item.relation,
                     "frequency_bin": item.frequency_bin, "answer": out.answer,
                     "correct": maple_correct(out.answer, item.answers, case_sensitive=case_sensitive),
                     "exact": exact_match(out.answer, item.answers, case_sensitive=case_sensitive),
                     "gold_rank": int(out.gold_rank), "gold_logprob": float(out.gold_logprob),
                     "sample_correct": None, "detail": json.dumps(out.detail, ensure_ascii=False, sort_keys=True)})
    return rows


def _partition_rows(context: KeeContext, items: Sequence[KeeItem], temperature: float, n_samples: int,
                    case_sensitive: bool) -> list[dict]:
    samples = context.runner.sample([context.answer_prompt(i.question) for i in items], k=n_samples, temperature=temperature,
                            seed=SEED_A, max_new_tokens=MAX_ANSWER_TOKENS, stop=ANSWER_STOP)
    name = f"{PARTITION}@{temperature}"
    rows = []
    for item, texts in zip(items, samples):
        answers = [clean_answer(t) for t in texts]
        rows.append({"id": f"{name}::{item.id}", "technique": name, "item_id": item.id, "relation": item.relation,
                     "frequency_bin": item.frequency_bin, "answer": None, "correct": None, "exact": None,
                     "gold_rank": None, "gold_logprob": None,
                     "sample_correct": [maple_correct(a, item.answers, case_sensitive=case_sensitive) for a in answers],
                     "detail": json.dumps({"samples": answers}, ensure_ascii=False)})
    return rows


def _summary(techniques: Sequence[str], by_tech: dict[str, dict[str, dict]], partitions: dict[float, dict[str, list]],
             ids: Sequence[str], k: int) -> dict:
    """Metrics of every technique over the items `ids` (the whole split or one frequency bin)."""
    base = {i: by_tech["baseline"][i]["correct"] for i in ids}
    base_rank = {i: by_tech["baseline"][i]["gold_rank"] for i in ids}
    splits = {t: metrics.partition_failures(base, {i: partitions[t][i] for i in ids}, k) for t in partitions}
    out = {}
    for name in techniques:
        rows = by_tech[name]
        correct = {i: rows[i]["correct"] for i in ids}
        rates = {}
        for t, (shallow, deep) in splits.items():
            sgr, dgr = metrics.gain_rates(shallow, deep, correct)
            rates[str(t)] = {"sgr": sgr, "dgr": dgr, "shallow": len(shallow), "deep": len(deep)}
        out[name] = {
            "n": len(ids),
            "accuracy": metrics.accuracy(correct),
            "exact_accuracy": metrics.accuracy({i: rows[i]["exact"] for i in ids}),
            "gain": metrics.gain(base, correct),
            "loss": metrics.loss(base, correct),
            "prs": metrics.prs(base, correct, base_rank, {i: rows[i]["gold_rank"] for i in ids}).as_dict(),
            "beyond_sampling": rates,
        }
    return out


def _stability(techniques: Sequence[str], by_tech, partitions, ids, k: int, sweep_max: int) -> dict:
    """Per temperature and rate: Kendall tau-b of the method ranking at each K vs at K = k."""
    base = {i: by_tech["baseline"][i]["correct"] for i in ids}
    methods = [t for t in techniques if t != "baseline"]   # the baseline recovers nothing by definition
    out = {}
    for t, samples in partitions.items():
        per_rate: dict[str, dict[int, dict]] = {"sgr": {}, "dgr": {}}
        for kk in range(1, sweep_max + 1):
            shallow, deep = metrics.partition_failures(base, samples, kk)
            for m in methods:
                sgr, dgr = metrics.gain_rates(shallow, deep, {i: by_tech[m][i]["correct"] for i in ids})
                per_rate["sgr"].setdefault(kk, {})[m] = sgr
                per_rate["dgr"].setdefault(kk, {})[m] = dgr
        out[str(t)] = {rate: {str(kk): tau for kk, tau in metrics.ranking_stability(scores, k).items()}
                       for rate, scores in per_rate.items()}
    return out


def _fitting_split(dataset: Path, settings: KeeSettings) -> str | None:
    """The dataset's own split that CAA/ITI fit on: train, else dev; None means two folds."""
    for name in FITTING_SPLITS:
        if name == settings.split:
            continue
        try:
            split_path(dataset, name, settings.config)
        except UserError:
            continue
        return name
    return None


def run_kee(loaded, runner, dataset: Path, out: Path, settings: KeeSettings,
            progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Evaluate, journal, finalise and report; return the results (also in out/results.json).
    `progress(stage, done, total)` is called as techniques and partitions finish."""
    from kbench.report import kee as kee_report

    if loaded.kind != "causal":
        raise UserError("kee generates answers and needs a causal LM")
    if settings.k < 1 or settings.sweep_max < 1:
        raise UserError(f"--k and the sweep must be >= 1 (got k={settings.k}, sweep_max={settings.sweep_max})")
    if settings.k > settings.sweep_max:
        settings = KeeSettings(**{**asdict(settings), "sweep_max": settings.k})
    path = split_path(dataset, settings.split, settings.config)
    rows = seeded_sample(read_rows(path), settings.limit, settings.seed)
    if not rows:
        raise UserError(f"{path}: the split has no items")
    items = [to_item(r) for r in rows]
    train_items: list[KeeItem] = []
    pool_split = _fitting_split(dataset, settings)
    if pool_split is not None:
        pool_rows = seeded_sample(read_rows(split_path(dataset, pool_split, settings.config)), settings.fit_pool_limit, settings.seed)
        train_items = [to_item(r) for r in pool_rows]
    config = {"model": loaded.identity, "model_name": loaded.name, "dataset_file": sha256_file(path),
              **{k: v for k, v in asdict(settings).items() if k != "techniques"}}
    stages = [*settings.techniques, *(f"{PARTITION}@{t}" for t in settings.temperatures)]
    timing: dict[str, dict] = {}
    with RunDir(out, "kee", config) as run:
        context = KeeContext(runner=runner, fit_dir=out / "fits", train_items=train_items, seed=settings.seed,
                             chat=use_chat(loaded.tokenizer, settings.prompt))
        for number, stage in enumerate(stages):
            done = run.done_ids()
            if all(f"{stage}::{i.id}" in done for i in items):
                continue
            started = time.perf_counter()
            if stage.startswith(PARTITION):
                temperature = float(stage.split("@")[1])
                new = _partition_rows(context, items, temperature, settings.sweep_max, settings.case_sensitive)
            else:
                technique = get_technique(stage, **_technique_params(stage, settings))
                new = _output_rows(stage, items, technique.run(context, items), settings.case_sensitive)
            run.append([r for r in new if r["id"] not in done])
            seconds = time.perf_counter() - started
            timing[stage] = {"seconds": round(seconds, 3), "items_per_second": round(len(items) / seconds, 3) if seconds > 0 else None}
            if progress is not None:
                progress(stage, number + 1, len(stages))
        by_id = {r["id"]: r for r in run.rows()}
        all_rows = [by_id[f"{s}::{i.id}"] for s in stages for i in items]
        by_tech = {name: {i.id: by_id[f"{name}::{i.id}"] for i in items} for name in settings.techniques}
        partitions = {t: {i.id: by_id[f"{PARTITION}@{t}::{i.id}"]["sample_correct"] for i in items}
                      for t in settings.temperatures}
        ids = [i.id for i in items]
        bins: dict[str, list[str]] = defaultdict(list)
        for item in items:
            bins[item.frequency_bin or "unbinned"].append(item.id)
        results = {
            "schema": "results.kee.v1", "task": "kee",
            "model": {"name": loaded.name, "identity": loaded.identity, "dtype": loaded.dtype},
            "dataset": {"path": str(dataset), "file": str(path), "sha256": config["dataset_file"], "split": settings.split,
                        "items": len(items), "fitting_pool": f"{pool_split} split" if pool_split else "two folds of the items"},
            "settings": {**asdict(settings), "seed_a": SEED_A, "prompt_form": "chat" if context.chat else "question",
                         "technique_params": {n: get_technique(n, **_technique_params(n, settings)).params()
                                              for n in settings.techniques}},
            "techniques": list(settings.techniques),
            "overall": _summary(settings.techniques, by_tech, partitions, ids, settings.k),
            "per_frequency_bin": {b: _summary(settings.techniques, by_tech, partitions, b_ids, settings.k)
                                  for b, b_ids in sorted(bins.items())},
            "ranking_stability": _stability(settings.techniques, by_tech, partitions, ids, settings.k, settings.sweep_max),
            "timing": timing,
        }
        results = json.loads(json.dumps(results))  # tuples -> lists, int keys -> strings, as readers see it
        run.finalize(all_rows, results, RESULTS_SCHEMA)
    kee_report.write_report(results, out)
    return results
