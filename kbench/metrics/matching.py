"""Answer matching for knowledge probing (docs/definitions.md, "Answer matching" and "LAMA P@1").

* `normalize_for_matching`: MAPLE's normalisation - drop every character that is not a letter
  or digit (any script), including all whitespace; case-insensitive unless `case_sensitive`.
* `maple_correct`: the normalised prediction equals a normalised valid answer (gold + aliases),
  or contains one as a substring. Answers that normalise to "" never match (they would be a
  substring of everything).
* `exact_match`: only the equality half of the rule. Reported beside `maple_correct` because
  substring matching counts "not Paris" as correct for "Paris".
* `distinct_fact_hits`: LAMA's P@1 inputs - per relation, one hit per distinct (subject, object)
  fact; `uncertainty.macro_mean` of them is the unweighted (macro) mean over relations (`evaluate
  extraction --protocol lama` reports it as `lama_p_at_1`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def normalize_for_matching(text: str, *, case_sensitive: bool = False) -> str:
    kept = "".join(ch for ch in text if ch.isalnum())
    return kept if case_sensitive else kept.casefold()


def _valid(answers: Sequence[str], case_sensitive: bool) -> list[str]:
    normalised = (normalize_for_matching(a, case_sensitive=case_sensitive) for a in answers)
    return [a for a in normalised if a]


def maple_correct(prediction: str, answers: Sequence[str], *, case_sensitive: bool = False) -> bool:
    pred = normalize_for_matching(prediction, case_sensitive=case_sensitive)
    return any(a == pred or a in pred for a in _valid(answers, case_sensitive))


def exact_match(prediction: str, answers: Sequence[str], *, case_sensitive: bool = False) -> bool:
    pred = normalize_for_matching(prediction, case_sensitive=case_sensitive)
    return any(a == pred for a in _valid(answers, case_sensitive))


def distinct_fact_hits(rows: Iterable[tuple[str, str, str, bool]]) -> dict[str, list[float]]:
    """rows: (relation, subject, object, hit). Per relation (in first-seen order), one 0/1 per
    distinct (subject, object) fact: a fact seen twice counts once, by its first row."""
    seen: dict[str, dict[tuple[str, str], float]] = {}
    for relation, subject, obj, hit in rows:
        seen.setdefault(relation, {}).setdefault((subject, obj), float(bool(hit)))
    return {rel: list(facts.values()) for rel, facts in seen.items()}
