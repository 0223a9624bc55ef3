"""Streaming benchmark: the row-wise tabular MAPLE stages on a synthetic triplet table.

Runs `link_wikidata` -> `quality_filters` -> `triplets_to_facts` (their lazy polars plans, written
with `sink_parquet` as the build runner writes a stage's output, with smaller row groups: see
below) over 100k and 1M synthetic
triplets, each size in a fresh subprocess, and prints rows/s and peak RSS per size and

    rss_ratio_1m_over_100k: X

A ratio near 1 means memory stays flat as the table grows 10x. (Stages that must see every row
at once, e.g. `frequency_bin`'s global ranking or `relation_cap`'s per-relation sampling, are not
part of this streaming claim.)

Row groups matter: polars' parquet reader prefetches a window of row groups, so peak memory is
bounded by (window x row-group size) rather than by the table's length. With polars' default
sink row groups (~90k rows, what the build runner writes today) that window covers about a
million rows (a plain scan -> sink peaks at 240 MB at 1M rows and 273 MB at 3M), so this
benchmark writes the input and every stage output with `--row-group-rows` (default 10,000).

Measured on the 2-core dev machine (polars 2.1): 100k rows peak 170 MB, 1M rows 253 MB, ratio
~1.5. Memory grows sub-linearly (10x rows -> 1.5x memory, ~70 MB of which is the interpreter
and imports) but is not perfectly flat: even scan -> add a column -> sink grows ~40 MB from 100k
to 1M rows, and `replace`/`replace_strict` expressions do not stream at all in this polars
version, so the stages use joins (`maintain_order="left"`) for look-ups. Usage:

    python bench/stream_memory.py [--sizes 100000 1000000] [--row-group-rows 10000]
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
             ("P30", "continent"), ("P461", "opposite of"), ("P31", "instance of")]


def write_inputs(folder: Path, rows: int, row_group_rows: int) -> None:
    """A documents file (the linking index's source) and `rows` synthetic triplets, in batches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(folder / "docs.jsonl", "w", encoding="utf-8") as fh:
        for i in range(ENTITIES):
            ent = [{"uri": f"Q{i + 1}", "surfaceform": f"Place{i}"}]
            pred = [{"predicate": {"uri": p, "surfaceform": label}} for p, label in RELATIONS] if i == 0 else []
            fh.write(json.dumps({"title": f"Place{i}", "uri": f"Q{i + 1}", "text": "", "entities": ent, "triples": pred}) + "\n")
    with open(folder / "templates.jsonl", "w", encoding="utf-8") as fh:
        for pid, label in RELATIONS[:4]:
            fh.write(json.dumps({"relation": pid, "template": f"[X] has {label} [Y] ."}) + "\n")
    with pq.ParquetWriter(folder / "triplets.parquet", schema=_schema(pa)) as writer:
        for start in range(0, rows, row_group_rows):
            n = min(row_group_rows, rows - start)
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


def run_stages(folder: Path, row_group_rows: int) -> dict:
    """In a fresh process: the stages over the table, written by sink_parquet; returns the measurements."""
    import polars as pl

    from kbench.build.context import StageContext
    from kbench.build.stage import stage_registry

    registry = stage_registry()
    ctx = StageContext(recipe_path=folder / "bench.toml", run_dir=folder / "run", seed=0, cache_dir=folder / "cache")
    plan = [("link_wikidata", {"documents": "docs.jsonl"}), ("quality_filters", {}),
            ("triplets_to_facts", {"templates": "templates.jsonl"})]
    rss_before = peak_rss_mb()
    started = time.perf_counter()
    source = folder / "triplets.parquet"
    rows_in = pl.scan_parquet(source).select(pl.len()).collect().item()
    peaks = []
    for i, (name, params) in enumerate(plan):
        cls = registry[name]
        out = cls(cls.Params(**params), ctx).run(pl.scan_parquet(source))
        target = folder / f"stage{i}.parquet"
        out.kept.sink_parquet(target, row_group_size=row_group_rows)
        if out.rejected is not None:
            out.rejected.sink_parquet(folder / f"rejected{i}.parquet", row_group_size=row_group_rows)
        source = target
        peaks.append(round(peak_rss_mb()))
    seconds = time.perf_counter() - started
    rows_out = pl.scan_parquet(source).select(pl.len()).collect().item()
    return {"rows": rows_in, "rows_out": rows_out, "seconds": seconds, "rows_per_s": rows_in / seconds,
            "peak_rss_mb": peak_rss_mb(), "rss_before_mb": rss_before, "peak_after_each_stage_mb": peaks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[100_000, 1_000_000])
    parser.add_argument("--row-group-rows", type=int, default=10_000)
    parser.add_argument("--child", nargs=2, metavar=("TASK", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        task, folder = args.child
        if task == "index":
            build_link_index(Path(folder))
        else:
            print(json.dumps(run_stages(Path(folder), args.row_group_rows)))
        return
    results = []
    for rows in args.sizes:
        with tempfile.TemporaryDirectory(prefix="kbench-stream-") as tmp:
            write_inputs(Path(tmp), rows, args.row_group_rows)
            for task in ("index", "run"):
                done = subprocess.run([sys.executable, __file__, "--row-group-rows", str(args.row_group_rows),
                                       "--child", task, tmp], capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"benchmark child ({task}) failed:\n{done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
        results.append(result)
        print(f"{result['rows']:>9,} rows -> {result['rows_out']:,} kept: {result['rows_per_s']:,.0f} rows/s, "
              f"peak RSS {result['peak_rss_mb']:.0f} MB (after imports {result['rss_before_mb']:.0f} MB; "
              f"after each stage {result['peak_after_each_stage_mb']})")
    print(f"rss_ratio_1m_over_100k: {results[1]['peak_rss_mb'] / results[0]['peak_rss_mb']:.2f}")


if __name__ == "__main__":
    main()
