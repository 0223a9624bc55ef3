"""The packaged claim sets: one per paper, each claim with its id and its verbatim quote.

A claim is tested per model on one suite cell of its task (`statistic` names the function in
`kbench.claims.statistics` that computes it), then across models. `kind` tells a reported finding
from a design expectation no paper reports as a result: a contradicted expectation does not
contradict the paper. An equivalence claim ("similar", "about as well") states no margin in its
paper; the set declares one (`margin`) and the verdict records it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kbench.errors import UserError
from kbench.protocol import REFERENCES


@dataclass(frozen=True)
class Claim:
    id: str  # the paper's claim id, kept in every output
    statement: str
    quote: str  # verbatim from the paper
    source: str  # where the quote is
    compared: str  # what the statistic compares, in words
    task: str  # the `kbench evaluate` task whose cells it reads
    statistic: str  # a function of kbench.claims.statistics
    direction: Literal["greater", "equivalent"]  # the statistic is claimed > 0, or within +-margin
    kind: Literal["finding", "expectation"] = "finding"
    margin: float | None = None  # equivalence claims: declared here, no paper states one


@dataclass(frozen=True)
class ClaimSet:
    name: str
    paper: str
    claims: tuple[Claim, ...]


KOLA = ClaimSet(
    "kola",
    REFERENCES["kola"],
    (
        Claim(
            id="KoLA-13",
            statement="Low-frequency entities are harder than high-frequency ones (head known better than tail).",
            quote="此外我们想探索 LLM 的知识记忆是否与训练频率相关。",
            source="KoLA (a Chinese write-up), line 10; in English: "
            '"We also want to explore whether LLM knowledge memorization relates to training frequency."',
            compared="accuracy on head-bin facts − accuracy on tail-bin facts (the cell's primary metric; unpaired: "
            "Newcombe interval, two-sided Fisher exact p)",
            task="extraction",
            statistic="head_minus_tail",
            direction="greater",
            kind="expectation",
        ),
    ),
)

EVOLVINGQA = ClaimSet(
    "evolvingqa",
    REFERENCES["evolvingqa"],
    (
        Claim(
            id="EVQA-1",
            statement="Models often fail to forget outdated facts: Outdated scores about as well as Updated.",
            quote="Models often fail to forget outdated knowledge, yielding similar EM/F1 scores for 'Outdated' and "
            "'Updated' questions instead of near-zero for outdated.",
            source="EvolvingQA evaluation card, line 43",
            compared="EM against the outdated answer − EM against the updated answer, on the same edited questions "
            "(paired: Newcombe's paired interval, exact McNemar p)",
            task="qa",
            statistic="outdated_minus_updated_em",
            direction="equivalent",
            margin=0.10,
        ),
    ),
)

CLAIM_SETS: dict[str, ClaimSet] = {s.name: s for s in (KOLA, EVOLVINGQA)}


def claim_set(name: str) -> ClaimSet:
    if name not in CLAIM_SETS:
        raise UserError(f"--set {name}: no such claim set; packaged: {', '.join(sorted(CLAIM_SETS))}")
    return CLAIM_SETS[name]
