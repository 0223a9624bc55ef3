"""Streaming benchmark: the row-wise MAPLE stages, through the build runner, on a synthetic triplet table.

Runs the recipe `load_triplets` -> `link_wikidata` -> `quality_filters` -> `triplets_to_facts` ->
`to_questions` with `kbench.construct.runner.run_recipe` (the code path of `kbench build`) over 100k
and 1M synthetic triplets, each size in a fresh subprocess, and prints rows/s and peak RSS per
size and

    rss_ratio_1m_over_100k: X

A ratio near 1 means memory stays flat as the table grows 10x. These stages are row-wise, so the
runner reads each one's input `CHUNK_ROWS` (20,000) rows at a time and appends each chunk's output
(see kbench/construct/runner.py): peak memory is set by the chunk size, not the table's length. Stages
that must see every row at once (`frequency_bin`'s ranking, `relation_cap`'s sampling, ...) are not
part of this claim. The link index is built beforehand in its own process, so its (size-independent)
cost does not flatter the ratio.

Measured on the 2-core dev machine while other benchmarks ran on it (polars 2.1, pyarrow 26):
100k rows peak RSS 274 / 268 MB (two runs) at 36,000-42,000 rows/s, 1M rows 258 / 270 MB at
62,000 rows/s, ratio 0.94 / 1.01 (both sizes reach the same plateau; which is higher is noise).
About 90 MB of it is the interpreter, polars and pyarrow. The previous version of this benchmark
(the stages' whole-table lazy plans written with `sink_parquet`, without the runner or
`to_questions`) measured 170 MB vs 253 MB, ratio ~1.5. Usage:

    python bench/stream_memory.py [--sizes 100000 1000000] [--record]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import add_record_flag, record

ENTITIES = 20_000
RELATIONS = [("P17", "country"), ("P131", "located in the administrative territorial entity"), ("P361", "part of"),
             ("P30", "continent"), ("P461", "opposite of"), ("P31", "instance of")]
RECIPE = """
[pipeline]
name = "stream-bench"

[[stages]]
stage = "load_triplets"
path = "triplets.parquet"

[[stages]]
stage = "link_wikidata"
documents = "docs.jsonl"

[[stages]]
stage = "quality_filters"

[[stages]]
stage = "triplets_to_facts"
templates = "templates.jsonl"

[[stages]]
stage = "to_questions"
"""


def write_inputs(folder: Path, rows: int, batch_rows: int = 10_000) -> None:
    """A documents file (the link index's source), templates, the recipe and `rows` synthetic triplets."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "bench.toml").write_text(RECIPE, encoding="utf-8")
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as fh:
        for i in range(ENTITIES):
            ent = [{"uri": f"Q{i + 1}", "surfaceform": f"Place{i}"}]
            pred = [{"predicate": {"uri": p, "surfaceform": label}} for p, label in RELATIONS] if i == 0 else []
            fh.write(json.dumps({"title": f"Place{i}", "uri": f"Q{i + 1}", "text": "", "entities": ent, "triples": pred}) + "\n")
    with open(folder / "templates.jsonl", "w", encoding="utf-8") as fh:
        for pid, label in RELATIONS[:4]:
            fh.write(json.dumps({"relation": pid, "template": f"[X] has {label} [Y] ."}) + "\n")
    with pq.ParquetWriter(folder / "triplets.parquet", schema=_schema(pa)) as writer:
        for start in range(0, rows, batch_rows):
            n = min(batch_rows, rows - start)
            idx = range(start, start + n)
            subj = [f"Place{(i * 7) % ENTITIES}" for i in idx]
            obj = [f"Place{(i * 13 + 1) % ENTITIES}" for i in idx]
            rel = [RELATIONS[i % len(RELATIONS)] for i in idx]
            writer.write_table(pa.table({
                "triplet_id": [f"t{i:08d}" for i in idx], "doc_id": [str(i // 5) for i in idx],
                "origin": ["rebel"] * n, "subject": subj, "subject_id": [None] * n,
                "relation": [None] * n, "relation_label": [label for _, label in rel],
                "object": obj, "object_id": [f"Q{(i * 13 + 1) % ENTITIES + 1}" if i % 2 else None for i in idx],
                "object_kind": ["entity" if i % 17 else "literal" for i in idx],
            }, schema=_schema(pa)))


def _schema(pa):
    s = pa.string()
    return pa.schema([(c, s) for c in ("triplet_id", "doc_id", "origin", "subject", "subject_id", "relation",
                                       "relation_label", "object", "object_id", "object_kind")])


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM; unlike ru_maxrss it does not carry the parent's
    peak over `fork` + `exec`)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (this benchmark needs Linux)")


def build_link_index(folder: Path) -> None:
    """In its own process, so the index build does not count towards the stages' peak memory."""
    from kbench.sources.link_index import build_indexes

    build_indexes(folder / "cache", documents=folder / "docs.jsonl", titles_table=None, property_table=None)


def run_build(folder: Path) -> dict:
    """In a fresh process: the recipe through the build runner; returns the measurements."""
    from kbench.construct.recipe import load_recipe
    from kbench.construct.runner import run_recipe

    recipe = load_recipe(folder / "bench.toml")
    rss_before = peak_rss_mb()
    started = time.perf_counter()
    result = run_recipe(recipe, folder / "run", cache_dir=folder / "cache")
    seconds = time.perf_counter() - started
    rows_in = result.stages[0].rows_out
    return {"rows": rows_in, "rows_out": result.stages[-1].rows_out, "seconds": seconds,
            "rows_per_s": rows_in / seconds, "peak_rss_mb": peak_rss_mb(), "rss_before_mb": rss_before,
            "stage_seconds": {s.id: s.seconds for s in result.stages}}


def main() -> None:
    parser = add_record_flag(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--sizes", type=int, nargs=2, default=[100_000, 1_000_000])
    parser.add_argument("--child", nargs=2, metavar=("TASK", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        task, folder = args.child
        if task == "index":
            build_link_index(Path(folder))
        else:
            print(json.dumps(run_build(Path(folder))))
        return
    results = []
    for rows in args.sizes:
        with tempfile.TemporaryDirectory(prefix="kbench-stream-") as tmp:
            write_inputs(Path(tmp), rows)
            for task in ("index", "run"):
                done = subprocess.run([sys.executable, __file__, "--child", task, tmp], capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"benchmark child ({task}) failed:\n{done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
        results.append(result)
        print(f"{result['rows']:>9,} rows -> {result['rows_out']:,} questions: {result['rows_per_s']:,.0f} rows/s, "
              f"peak RSS {result['peak_rss_mb']:.0f} MB (before the build {result['rss_before_mb']:.0f} MB; "
              f"seconds per stage {result['stage_seconds']})")
    ratio = results[1]["peak_rss_mb"] / results[0]["peak_rss_mb"]
    print(f"rss_ratio_1m_over_100k: {ratio:.2f}")
    if args.record:
        figures = {}
        for result in results:
            figures[f"rows/s at {result['rows']:,}"] = round(result["rows_per_s"])
            figures[f"peak RSS MB at {result['rows']:,}"] = round(result["peak_rss_mb"])
        record(__file__, {**figures, "peak RSS ratio, larger / smaller": round(ratio, 2)})


if __name__ == "__main__":
    main()
