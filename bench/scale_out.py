"""Scale-out benchmark: a synthetic document corpus through the row-wise build stages on Ray, with
1 and with 2 workers.

The recipe is the MAPLE front and tail, every stage row-wise: `clean_documents` -> `load_annotated_triplets`
-> `link_wikidata` -> `quality_filters` -> `triplets_to_facts` -> `to_questions`, over N documents
(default 1,000,000) in the REBEL format, each a few sentences with one annotated triple. Each run
is `kbench.construct.runner.run_recipe` with `RayExecutor(workers=W)` (an in-process Ray with W CPUs,
`--shard-rows` rows per shard), in a fresh subprocess, and the link index is built beforehand in
its own process (as in bench/stream_memory.py). It prints the wall time per stage, then

    rows_per_s_1: documents per second through the whole recipe with 1 worker
    rows_per_s_2: the same with 2 workers
    scaling_efficiency: rows_per_s_2 / (2 * rows_per_s_1)   (1.0 = perfect)
    peak_rss_mb_per_worker_1 / _2: the largest peak RSS (VmHWM) of any Ray worker process

The driver's own work is not parallel: it reads the JSONL source into a table (clean_documents is
a source stage) and appends every stage's shards into one file, so efficiency stays below 1 even
on idle cores.

Measured once on the 2-core dev machine (2026-12-01, Ray 2.60) while other jobs kept its load
average at 9-11: 1 worker 325 s, 2 workers 256 s for 1M documents -> 899,800 questions;
rows_per_s_1: 3076, rows_per_s_2: 3911, scaling_efficiency: 0.64; peak RSS per worker 576 MB
(1 worker), 565 / 559 MB (2). Per stage, 1 -> 2 workers: clean_documents 77 -> 41 s (its JSONL is
read on the driver), load_annotated_triplets 206 -> 179 s (spaCy sentencizer; the second core was
busy with other jobs), the four tail stages 39 -> 35 s. Usage:

    python bench/scale_out.py [--docs 1000000] [--shard-rows 100000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTITIES = 20_000
RELATIONS = [("P17", "country"), ("P131", "located in the administrative territorial entity"), ("P361", "part of"),
             ("P30", "continent"), ("P31", "instance of")]
RECIPE = """
[pipeline]
name = "scale-out-bench"

[[stages]]
stage = "clean_documents"
path = "docs.jsonl"
min_words = 10

[[stages]]
stage = "load_annotated_triplets"

[[stages]]
stage = "link_wikidata"
documents = "index_docs.jsonl"

[[stages]]
stage = "quality_filters"

[[stages]]
stage = "triplets_to_facts"
templates = "templates.jsonl"

[[stages]]
stage = "to_questions"
"""


def write_inputs(folder: Path, docs: int) -> None:
    """The corpus, a small documents file for the link index (every entity's name and id), templates."""
    (folder / "bench.toml").write_text(RECIPE, encoding="utf-8")
    with open(folder / "index_docs.jsonl", "w", encoding="utf-8") as fh:
        for i in range(ENTITIES):
            preds = [{"predicate": {"uri": p, "surfaceform": label}} for p, label in RELATIONS] if i == 0 else []
            fh.write(json.dumps({"title": f"Place{i}", "uri": f"Q{i + 1}", "text": "",
                                 "entities": [{"uri": f"Q{i + 1}", "surfaceform": f"Place{i}"}], "triples": preds}) + "\n")
    with open(folder / "templates.jsonl", "w", encoding="utf-8") as fh:
        for pid, label in RELATIONS:
            fh.write(json.dumps({"relation": pid, "template": f"[X] has {label} [Y] ."}) + "\n")
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as fh:
        for i in range(docs):
            subj, obj = i % ENTITIES, (i * 13 + 1) % ENTITIES
            pid, label = RELATIONS[i % len(RELATIONS)]
            first = f"Place{subj} is a place with {label} Place{obj} ."
            text = f"{first} It was founded long ago by people from far away . Its name is old and well known ."
            if i % 10 == 0:
                text = "Too short ."  # dropped by clean_documents
            triple = {"subject": {"uri": f"Q{subj + 1}", "surfaceform": f"Place{subj}", "boundaries": [0, len(f"Place{subj}")]},
                      "predicate": {"uri": pid, "surfaceform": label},
                      "object": {"uri": f"Q{obj + 1}", "surfaceform": f"Place{obj}",
                                 "boundaries": [first.index(f"Place{obj}"), first.index(f"Place{obj}") + len(f"Place{obj}")]}}
            fh.write(json.dumps({"docid": str(i), "title": f"Place{subj}", "uri": f"Q{subj + 1}", "text": text,
                                 "triples": [triple]}) + "\n")


def build_link_index(folder: Path) -> None:
    from kbench.sources.link_index import build_indexes

    build_indexes(folder / "cache", documents=folder / "index_docs.jsonl", titles_table=None, property_table=None)


def worker_peak_rss_mb() -> list[float]:
    """Peak RSS (VmHWM) of every Ray worker process under this one, read before Ray shuts down."""
    import psutil

    peaks = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "default_worker.py" not in " ".join(proc.cmdline()) and not proc.name().startswith("ray::"):
                continue
            for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]) / 1024)
        except (psutil.NoSuchProcess, psutil.AccessDenied, FileNotFoundError):
            continue
    return sorted(peaks, reverse=True)


def run_build(folder: Path, workers: int, shard_rows: int) -> dict:
    """In a fresh process: the recipe on an in-process Ray with `workers` CPUs; the measurements."""
    import shutil

    from kbench.construct.executors.ray import RayExecutor
    from kbench.construct.recipe import load_recipe
    from kbench.construct.runner import run_recipe

    shutil.rmtree(folder / "run", ignore_errors=True)
    executor = RayExecutor(workers=workers, shard_rows=shard_rows)
    try:
        started = time.perf_counter()
        result = run_recipe(load_recipe(folder / "bench.toml"), folder / "run", cache_dir=folder / "cache", executor=executor)
        seconds = time.perf_counter() - started
        peaks = worker_peak_rss_mb()
    finally:
        executor.close()
    docs = result.stages[0].rows_in or sum(result.stages[0].dropped.values()) + result.stages[0].rows_out
    return {"workers": workers, "docs": docs, "questions": result.stages[-1].rows_out, "seconds": seconds,
            "rows_per_s": docs / seconds, "worker_peak_rss_mb": peaks[:workers],
            "stage_seconds": {s.id: s.seconds for s in result.stages}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--shard-rows", type=int, default=100_000)
    parser.add_argument("--child", nargs=3, metavar=("WORKERS", "SHARD_ROWS", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workers, shard_rows, folder = args.child
        if workers == "index":
            build_link_index(Path(folder))
        else:
            print(json.dumps(run_build(Path(folder), int(workers), int(shard_rows))))
        return
    results = {}
    with tempfile.TemporaryDirectory(prefix="kbench-scale-") as tmp:
        write_inputs(Path(tmp), args.docs)
        for workers in ("index", "1", "2"):
            done = subprocess.run([sys.executable, __file__, "--child", workers, str(args.shard_rows), tmp],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"benchmark child ({workers}) failed:\n{done.stderr[-3000:]}")
            if workers != "index":
                results[workers] = result = json.loads(done.stdout.strip().splitlines()[-1])
                print(f"{workers} worker(s): {result['docs']:,} documents -> {result['questions']:,} questions in "
                      f"{result['seconds']:.1f} s; seconds per stage {result['stage_seconds']}")
    one, two = results["1"], results["2"]
    print(f"rows_per_s_1: {one['rows_per_s']:.0f}")
    print(f"rows_per_s_2: {two['rows_per_s']:.0f}")
    print(f"scaling_efficiency: {two['rows_per_s'] / (2 * one['rows_per_s']):.2f}")
    print(f"peak_rss_mb_per_worker_1: {', '.join(f'{m:.0f}' for m in one['worker_peak_rss_mb'])}")
    print(f"peak_rss_mb_per_worker_2: {', '.join(f'{m:.0f}' for m in two['worker_peak_rss_mb'])}")


if __name__ == "__main__":
    main()
