"""The XTEVAL retrieval test: rank the gold document among distractors, top-1 accuracy.

Per test query (paper section 2, "Inference"):
- every (h,r,.) document is enumerated (each other tail D^theta holds for the relation);
- `per_type` documents of each other non-gold type: (.,r,t), (h,.,t), (.,.,t), (.,r,.), (h,.,.), (.,.,.);
- as many (`per_type`) true documents of test facts that share no slot with the query.
Distractors are deduplicated by text (small pools repeat documents; a repeat changes no ranking
except ties) and never equal the gold text. A query counts as correct only when the gold scores
strictly higher than every distractor, so ties (e.g. a constant scorer) are failures.

Under `accelerate launch`, queries are split between processes and the results gathered.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kbench.tasks.xteval.documents import GOLD, INPUT_TYPES, DocumentGenerator, Triple
from kbench.tasks.xteval.training.crossencoder import Candidates, CrossEncoder, FinetuneConfig

DISTRACTOR_TYPES = tuple(k for k in INPUT_TYPES if k not in (GOLD, "(h,r,.)"))


def test_candidates(
    fact: Triple, generator: DocumentGenerator, test_pool: Sequence[Triple], per_type: int, rng: random.Random
) -> tuple[Candidates, dict[str, int]]:
    """The query, gold first then distinct distractors; and how many distractors of each type."""
    gold = generator.gold(fact, rng)
    docs = generator.enumerate_head_relation(fact, rng)
    for doc_type in DISTRACTOR_TYPES:
        docs += generator.sample_many(doc_type, fact, per_type, rng)
    docs += generator.true_unrelated(fact, test_pool, per_type, rng)
    seen = {gold.text}
    distractors: list[str] = []
    counts: dict[str, int] = {}
    for d in docs:
        if d.text not in seen:
            seen.add(d.text)
            distractors.append(d.text)
            counts[d.doc_type] = counts.get(d.doc_type, 0) + 1
    return Candidates(generator.query(fact, rng), [gold.text, *distractors]), counts


def evaluate_retrieval(
    encoder: CrossEncoder,
    facts: Sequence[Triple],
    generator: DocumentGenerator,
    per_type: int,
    seed: int,
    cfg: FinetuneConfig,
) -> list[dict]:
    """One row per test fact: the query, whether the gold ranked first, the gold's rank among the
    candidates (a near miss and a far miss differ even when accuracy is 0), candidate counts."""
    from accelerate import Accelerator
    from accelerate.utils import gather_object

    accelerator = Accelerator()
    indexed = list(enumerate(facts))
    rows: list[dict] = []
    with accelerator.split_between_processes(indexed) as mine:
        for index, fact in mine:
            candidates, counts = test_candidates(fact, generator, facts, per_type, random.Random(f"{seed}-test-{index}"))
            scores = encoder.score_pairs(candidates.query, candidates.documents, cfg)
            gold_score = scores[0]
            at_least_as_high = sum(s >= gold_score for s in scores[1:])  # ties count against the gold
            rows.append(
                {
                    "index": index,
                    "head": fact.head,
                    "relation": fact.relation,
                    "tail": fact.tail,
                    "query": candidates.query,
                    "correct": at_least_as_high == 0,
                    "gold_rank": 1 + at_least_as_high,
                    "n_candidates": len(scores),
                    "distractors": counts,
                }
            )
    if accelerator.num_processes > 1:
        rows = gather_object(rows)
    return sorted(rows, key=lambda r: r["index"])
