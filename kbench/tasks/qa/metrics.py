"""Exact match and F1 for short-answer QA, as EvolvingQA scores them.

Two scorers, chosen by name (`SCORERS`):

* ``official`` (the default) -- the EvolvingQA repository's SQuAD-style scorer. Both strings are
  normalised: lowercase; delete ASCII punctuation (`string.punctuation`); replace the whole words
  a / an / the with a space; collapse whitespace. EM = normalised strings equal. F1 = multiset
  (Counter) token overlap; 0 when nothing overlaps (so also when both are empty), else 2PR/(P+R).
* ``card`` -- the evaluation card's recipe: EM = the stripped strings are equal (case-sensitive);
  F1 = 2·|set(p) ∩ set(g)| / (|p| + |g|) over lowercased whitespace tokens, 0 when both are empty.

Per-item scores are in [0, 1]; the QA task reports their means ×100, as the paper does.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable

from kbench.registry import Registry

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, drop ASCII punctuation, articles -> space, collapse whitespace (in this order)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def official_em(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def official_f1(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    overlap = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def card_em(prediction: str, gold: str) -> float:
    return float(prediction.strip() == gold.strip())


def card_f1(prediction: str, gold: str) -> float:
    pred_tokens = prediction.lower().split()
    gold_tokens = gold.lower().split()
    total = len(pred_tokens) + len(gold_tokens)
    if total == 0:
        return 0.0
    return 2 * len(set(pred_tokens) & set(gold_tokens)) / total


#: scorer name -> (em, f1), each (prediction, gold) -> float in [0, 1]
SCORERS: Registry[tuple[Callable[[str, str], float], Callable[[str, str], float]]] = Registry("QA metric")
SCORERS.add("official", (official_em, official_f1))
SCORERS.add("card", (card_em, card_f1))


def get_scorer(name: str) -> tuple[Callable[[str, str], float], Callable[[str, str], float]]:
    return SCORERS.get(name)
