"""Benchmark: the CAA, ITI and DeCoRe fits through the model interface, first and repeated.

    python bench/technique_fits.py [--dataset /tmp/lama] [--facts 50]

Fits each technique on the first `--facts` facts of the dataset's train split with SmolLM2-135M
(fp32, CPU), through a fresh result cache: the first fit computes every forward pass, the
repeated fit (a new run folder, so the fitted files are not there, the same result cache) is
served from the cache. Times are CPU seconds of this process (OMP_NUM_THREADS=1: the machine
is shared, so wall time says little); wall seconds are printed too.

Prints, per technique: first and repeated seconds, speed-up of the first fit over the code
before the white-box seam (#22; BEFORE below) and over the code before shared prefixes
(PREVIOUS below), each measured with that code on the same facts by the same procedure, and
repeated / first.
Build the dataset first: kbench build pipelines/lama-trex.toml --out /tmp/lama

Before (#22, code at 9912c51): CAA's activations were read in left-padded batches of 16 texts
outside the runner and the cache, ITI's likewise, DeCoRe's attention by its own passes; a
repeated fit recomputed all of them (only CAA's layer sweep, a runner call, was cached). The
sweep (one full forward pass of the held-out prompts per layer: 60% of CAA's first fit) now
runs the prompts' prefixes once and only their last token under each layer's steering
(`rank_first_token_each`). 200 facts were tried first: under the machine's load the old code
had not finished CAA's first fit after 30 minutes.

Previous (94a474d): activations read from packed rows, every statement in full. Of ITI's ~53
tokens per statement (chat template), ~38 are the system prompt and question frame every
statement shares and most of the rest the prompt its true and false statements share; now each
shared prefix runs once into a KV cache (`kbench.models.shared_prefix`; ITI asks for a pair in
one call), 4,200 tokens of the 80 build statements become 674. CAA's contrast texts gain too.
DeCoRe's copy sequences ran one per pass with every position's logits and all layers' attention
maps kept; now they run batched, only the last position's logits, each block's map reduced to
its argmax at once. ITI's probes train 3x faster (multiply-sum instead of einsum's tiny bmm).
Now (3 runs, 2026-12-02, load 2-3): CAA 16.5-17.3 s, ITI 7.1-7.4 s, DeCoRe 2.2-2.4 s first;
repeated 0.1 s, 0.8-1.0 s, 0.0 s.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

#: CPU seconds (first fit, repeated fit) of the old code (9912c51) on the first 50 train facts of the
#: lama-trex build, measured 2026-12-01 on the shared 2-core machine (load 9-15) by the same procedure
BEFORE = {"caa": (85.3, 17.8), "iti": (24.5, 23.7), "decore": (4.3, 4.6)}
#: CPU seconds of the first fit with the code before shared prefixes (94a474d), the lowest of 3 runs
#: on 2026-12-02 (ranges: CAA 26.5-28.9, ITI 21.6-22.5, DeCoRe 3.5-3.8), load 1-3, same procedure
PREVIOUS = {"caa": 26.5, "iti": 21.6, "decore": 3.5}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=Path("/tmp/lama"))
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--facts", type=int, default=50, help="BEFORE was measured at 50")
    args = parser.parse_args()

    from kbench.dataset import read_rows, split_path
    from kbench.tasks.kee.task import to_item
    from kbench.tasks.kee.techniques import get_technique
    from kbench.tasks.kee.techniques.base import KeeContext, use_chat
    from kbench.models.interface import ModelSpec
    from kbench.models.cached import open_model
    from kbench.models.result_cache import ResultCache

    if not (args.dataset / "data").is_dir():
        raise SystemExit(f"{args.dataset} is not a dataset folder; build one: kbench build pipelines/lama-trex.toml --out DIR")
    pool = [to_item(r) for r in read_rows(split_path(args.dataset, "train", None))[: args.facts]]
    folder = Path(tempfile.mkdtemp())
    model = open_model(ModelSpec(args.model), cache=ResultCache(folder / "results.sqlite"))
    chat = use_chat(model.info, "auto")
    model.generate(["warm up"], 2)  # allocator, kernels
    seconds: dict[str, dict[str, float]] = {}
    for run in ("first", "repeated"):
        context = KeeContext(model=model, fit_dir=folder / f"fits-{run}", chat=chat)
        for name in ("caa", "iti", "decore"):
            technique = get_technique(name)
            started, cpu = time.perf_counter(), time.process_time()
            with model.produced_by("bench"):
                technique.heads(context) if name == "decore" else technique.fit(context, pool)
            seconds.setdefault(name, {})[run] = time.process_time() - cpu
            print(f"{run} {name}: {seconds[name][run]:.1f} s cpu ({time.perf_counter() - started:.1f} s wall)", flush=True)
    print(f"model: {args.model}, facts: {len(pool)}")
    for name, s in seconds.items():
        before_first, before_repeated = BEFORE[name]
        speedup = f"{before_first / s['first']:.2f}x faster than before ({before_first:.1f} s)" if before_first else "no before"
        speedup += f", {PREVIOUS[name] / s['first']:.2f}x than previous ({PREVIOUS[name]:.1f} s)"
        repeated = f"repeated/first: {s['repeated'] / s['first']:.3f}"
        was = f" (before: {before_repeated / before_first:.3f})" if before_first and before_repeated else ""
        print(f"{name}: first {s['first']:.1f} s, {speedup}; {repeated}{was}")


if __name__ == "__main__":
    main()
