"""KoLA's knowledge-creation score with the self-contrast term, on Rouge-L F1.

C is a context, R the human continuation, K the annotated events in R; T is the model's
completion from C alone and T_k its completion from C plus K. Then

    score = avg(RougeL_F1(T, R), RougeL_F1(T, T_k), RougeL_F1(T_k, R))

where RougeL_F1(a, b) is the `rouge-score` package's Rouge-L F-measure with `a` as the prediction
and `b` as the reference (Rouge-L F1 is symmetric when precision and recall are weighted equally,
so the order does not change the number). Tokenisation is the package's default (lowercase,
non-alphanumerics split); stemming is off unless asked.
"""

from __future__ import annotations

from functools import lru_cache

from kbench.errors import require


@lru_cache(maxsize=2)
def _scorer(use_stemmer: bool):
    rouge_scorer = require("rouge_score.rouge_scorer", "the Rouge-L metric", "text", package="rouge-score")
    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)


def rouge_l_f1(prediction: str, reference: str, *, use_stemmer: bool = False) -> float:
    return float(_scorer(use_stemmer).score(reference, prediction)["rougeL"].fmeasure)


def self_contrast_score(
    completion: str, completion_with_knowledge: str, reference: str, *, use_stemmer: bool = False
) -> dict[str, float]:
    """The three Rouge-L terms and their mean ("score"), each in [0, 1]."""
    t_r = rouge_l_f1(completion, reference, use_stemmer=use_stemmer)
    t_tk = rouge_l_f1(completion, completion_with_knowledge, use_stemmer=use_stemmer)
    tk_r = rouge_l_f1(completion_with_knowledge, reference, use_stemmer=use_stemmer)
    return {"t_r": t_r, "t_tk": t_tk, "tk_r": tk_r, "score": (t_r + t_tk + tk_r) / 3}
