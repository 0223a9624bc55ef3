"""The choice task's numbers: each item's ranking, accuracy and P@k, their roll-ups, and the
answers a model picks when it is wrong.

A candidate's rank is its place when the answer space is sorted by score, highest first, ties
kept in answer-space order; the prediction is rank 1 (the first highest score, as lm-pub-quiz's
`index(max(scores))`). Accuracy = P@1; P@k = the share of items whose gold ranks k or better.
Every share is a Wilson-interval Estimate with its n (`kbench.metrics.uncertainty`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

from kbench.metrics import uncertainty as u

#: answer-space sizes are rolled up in these buckets (upper bounds, inclusive)
SIZE_BUCKETS = (10, 50, 200)
TOP_WRONG = 5  # the most-chosen wrong answers kept per relation


def rank_of(scores: Sequence[float], index: int) -> int:
    """1 + the candidates ranked before `index`: scored higher, or equal and listed earlier."""
    mine = scores[index]
    return 1 + sum(1 for j, s in enumerate(scores) if s > mine or (s == mine and j < index))


def predicted_index(scores: Sequence[float]) -> int:
    best = max(scores)
    return next(i for i, s in enumerate(scores) if s == best)


def size_bucket(size: int) -> str:
    low = 1
    for high in SIZE_BUCKETS:
        if size <= high:
            return f"{low}-{high}"
        low = high + 1
    return f"{low}+"


def estimates(rows: Sequence[dict], ks: Sequence[int]) -> dict:
    """accuracy and p_at_<k> of a slice of items."""
    out = {"accuracy": u.proportion_of([r["correct"] for r in rows])}
    for k in ks:
        out[f"p_at_{k}"] = u.proportion_of([r["gold_rank"] <= k for r in rows])
    return out


def grouped(rows: Sequence[dict], key: Callable[[dict], str | None]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        name = key(row)
        if name is not None:
            groups[name].append(row)
    return dict(sorted(groups.items()))


def prior_bias(rows: Sequence[dict]) -> dict[str, dict]:
    """Per relation, the answers the model picked when it was wrong, most picked first: a model
    that answers "London" to every place of birth shows its prior here, not its knowledge."""
    out = {}
    for relation, members in grouped(rows, lambda r: r["relation"]).items():
        wrong = [r["prediction"] for r in members if not r["correct"]]
        counts = Counter(wrong)
        top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_WRONG]
        out[relation] = {
            "wrong": len(wrong),
            "items": len(members),
            "answers": [{"answer": a, "count": c, "share_of_wrong": c / len(wrong)} for a, c in top],
        }
    return out


def summary(rows: Sequence[dict], ks: Sequence[int]) -> dict:
    """Everything `aggregate` reports but the protocol: overall, macro over relations, roll-ups."""
    per_relation = grouped(rows, lambda r: r["relation"])
    return {
        "overall": estimates(rows, ks),
        # each relation counts once, however many items it has (BEAR's relations differ in size)
        "accuracy_macro": u.macro_mean({rel: [float(r["correct"]) for r in rs] for rel, rs in per_relation.items()}),
        # what a uniform guess over each item's answer space scores on these items
        "chance_accuracy": sum(1 / r["answer_space_size"] for r in rows) / len(rows) if rows else None,
        "per_relation": {rel: estimates(rs, ks) for rel, rs in per_relation.items()},
        "per_domain": {d: estimates(rs, ks) for d, rs in grouped(rows, lambda r: r.get("domain")).items()},
        "per_answer_space_size": {
            b: estimates(rs, ks) for b, rs in grouped(rows, lambda r: size_bucket(r["answer_space_size"])).items()
        },
        "prior_bias": prior_bias(rows),
    }
