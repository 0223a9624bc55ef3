"""One log-likelihood per (item, candidate), through `LanguageModel.score_answers`.

`--score statement` (lm-pub-quiz's default): every token of the statement after the model's start
token, as lm-pub-quiz scores it. The statement is start + prefix + answer + suffix
(`statements.fill`); score_answers gives the answer + suffix tokens given start + prefix, per
candidate, and the prefix tokens given start, once per item: together, every token of the
statement, each conditioned on all before it. `--score answer`: the candidate's tokens only (its
own tokens, given start + prefix).

`--reduction sum` (default) adds the token log-probs, `mean` divides by their number.

A unit's candidates share start + prefix, so a backend that runs shared prefixes once (the Hugging
Face runner) computes the template's start once per item, not once per candidate; the result
cache keys every (prompt, continuation) pair, so a rerun reads them back.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbench.records import Question
from kbench.tasks.choice.statements import Statement, fill


def score_candidates(
    model, start: str, rows: Sequence[Question], space: tuple[str, ...], score: str, reduction: str
) -> list[list[float]]:
    """Per row, one score per candidate of `space` (in its order)."""
    statements = [fill(row["template"], row["subject"], candidate) for row in rows for candidate in space]
    prompts = [start + s.prefix for s in statements]
    if score == "answer":
        tokens = [per for _, per in model.score_answers(prompts, [s.answer for s in statements])]
    else:
        rests = model.score_answers(prompts, [s.answer + s.suffix for s in statements])
        prefix_tokens = _prefix_tokens(model, start, statements)
        tokens = [prefix_tokens.get(s.prefix, []) + per for s, (_, per) in zip(statements, rests)]
    reduced = [sum(per) if reduction == "sum" else sum(per) / len(per) for per in tokens]
    k = len(space)
    return [reduced[i * k : (i + 1) * k] for i in range(len(rows))]


def _prefix_tokens(model, start: str, statements: list[Statement]) -> dict[str, list[float]]:
    """prefix -> its tokens' log-probs given the start text, each distinct prefix scored once."""
    prefixes = list(dict.fromkeys(s.prefix for s in statements if s.prefix))
    if not prefixes:
        return {}
    scored = model.score_answers([start] * len(prefixes), prefixes)
    return {prefix: per for prefix, (_, per) in zip(prefixes, scored)}
