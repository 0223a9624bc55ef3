"""The packaged claim sets (kbench/claims/papers/*.json): one per paper, every claim of it with its
id and verbatim quote.

A measurable claim names the `kbench evaluate` task whose cells it reads, a statistic (a function
of `kbench.claims.statistics`, `kbench.claims.across` or `kbench.claims.entries`) with its
parameters, the scope it reads (one cell; one model's cells by setting, or every task entry of
one model; every model's cells), and the claimed direction: the statistic > 0, < 0, or within
+-margin. `kind` tells a reported finding from a design expectation no paper
reports as a result: a contradicted expectation does not contradict the paper. Equivalence claims
("similar", "about as well") state no margin in their papers; the set declares one and the
verdict records it. A claim kbench cannot measure keeps its id and quote, with the reason
(`unmeasurable`). One claim with two quantities ("A gains and loses more") is two parts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

from kbench.errors import UserError
from kbench.protocol import REFERENCES


@dataclass(frozen=True)
class Claim:
    id: str  # the paper's claim id, kept in every output
    statement: str
    quote: str  # verbatim from the paper
    source: str  # where the quote is
    translation: str | None = None  # of a quote not in English
    unmeasurable: str | None = None  # why kbench cannot test it (then nothing below applies)
    part: str | None = None
    compared: str = ""  # what the statistic compares, in words
    task: str = ""  # the `kbench evaluate` task whose cells it reads
    statistic: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    scope: Literal["cell", "model", "entries", "scale"] = "cell"
    direction: Literal["greater", "less", "equivalent"] = "greater"
    kind: Literal["finding", "expectation"] = "finding"
    margin: float | None = None  # equivalence claims: declared here, no paper states one

    @property
    def label(self) -> str:
        return f"{self.id} ({self.part})" if self.part else self.id

    @property
    def measurable(self) -> bool:
        return self.unmeasurable is None


@dataclass(frozen=True)
class ClaimSet:
    name: str
    paper: str
    claims: tuple[Claim, ...]

    @property
    def tested(self) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.measurable)

    @property
    def tasks(self) -> set[str]:
        return {c.task for c in self.tested}


SET_NAMES = ("maple", "xteval", "left", "kola", "evolvingqa")


def _load(name: str) -> ClaimSet:
    document = json.loads(resources.files("kbench.claims").joinpath(f"papers/{name}.json").read_text(encoding="utf-8"))
    return ClaimSet(name, REFERENCES[document["reference"]], tuple(Claim(**c) for c in document["claims"]))


@cache
def claim_sets() -> dict[str, ClaimSet]:
    return {name: _load(name) for name in SET_NAMES}


def claim_set(name: str) -> ClaimSet:
    sets = claim_sets()
    if name not in sets:
        raise UserError(f"--set {name}: no such claim set; packaged: {', '.join(sorted(sets))}")
    return sets[name]


def check_tasks(chosen: ClaimSet, present: set[str], where: str) -> None:
    """A UserError when the set's claims need a task the suite lacks."""
    lacking = sorted(chosen.tasks - present)
    if lacking:
        raise UserError(f"{where}: claim set {chosen.name} needs task(s) {', '.join(lacking)}, which the suite lacks")
