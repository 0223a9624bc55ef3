"""What a bench script leaves for the Benchmarks page: with `--record`, a script appends one row to
bench/results/<script>.json: the exact command, the date, the commit, the machine (cores, CPU, peak float32
matmul GFLOP/s, measured here and now) and the figures it printed. `python bench/collect.py` turns those files
into docs/benchmarks.md. Nothing on that page is typed by hand.

    from record import add_record_flag, record           # bench/ is the script's own folder on sys.path
    parser = add_record_flag(argparse.ArgumentParser(...))
    ...
    if args.record:
        record(__file__, {"rows_per_s": 62000, ...})
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"


def add_record_flag(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--record", action="store_true", help="append this run to bench/results/<script>.json (docs/benchmarks.md)"
    )
    return parser


def matmul_peak_gflops(size: int = 2048, repeats: int = 5) -> float:
    """The best of three timings of float32 square matmuls with torch: the machine's practical peak."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 * repeats / best / 1e9


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cores": cores, "cpu": cpu, "peak_gflops": round(matmul_peak_gflops(), 1), "load_1min": load}


def record(script: str, figures: dict) -> Path:
    """Append this run (command, date, commit, machine, `figures`) to bench/results/<script>.json."""
    name = Path(script).stem
    commit = subprocess.run(
        ["git", "-C", str(BENCH), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    row = {
        "command": " ".join(["python", f"bench/{Path(script).name}", *map(shlex.quote, sys.argv[1:])]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "commit": commit or None,
        "machine": machine(),
        "figures": figures,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    rows = json.loads(path.read_text()) if path.is_file() else []
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps([*rows, row], indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    print(f"recorded in {path.relative_to(BENCH.parent)}; `python bench/collect.py` rewrites docs/benchmarks.md")
    return path
