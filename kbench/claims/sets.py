"""The packaged claim sets (kbench/claims/papers/*.json): one per paper, every claim of it with its
id and verbatim quote.

A measurable claim names the `kbench evaluate` task whose cells it reads, a statistic (registered by
name in `kbench.claims.statistics.STATISTICS`, from the task's folder: `kbench/tasks/<name>/claims.py`) with its
parameters, the scope it reads (one cell; one model's cells by setting, or every task entry of
one model; every model's cells; the cells of the claim's models against the others'), and the
claimed direction: the statistic > 0, < 0, within +-margin ("equivalent"), or not above +margin
("not_greater": A is no better than B, a non-superiority claim such as "comparable to or lags
behind"). `kind` tells a reported finding from a design expectation no paper
reports as a result: a contradicted expectation does not contradict the paper. Equivalence claims
("similar", "about as well") state no margin in their papers; the set declares one and the
verdict records it. A claim kbench cannot measure keeps its id and quote, with the reason
(`unmeasurable`). One claim with two quantities ("A gains and loses more") is two parts.

Scope over models: `models` names the models or families a claim is about (empty: every model)
and `except_models` those it excludes, each a case-insensitive glob (fnmatch) matched against the
suite's model label, its model spec and the last path component of its hub id ("*llama-3*"
matches meta-llama/Meta-Llama-3-8B-Instruct). A model outside the scope gets no verdict.
`requires` names a setting the claim is about that a plain evaluation does not give: the only one
is "continual-pretraining", which a model provides when it is a `kbench read` checkpoint (its row
in suite.json's model table carries the checkpoint's `read` record); a model without it reports
"setting not met".
"""

from __future__ import annotations

import fnmatch
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
    scope: Literal["cell", "model", "entries", "scale", "contrast"] = "cell"
    direction: Literal["greater", "less", "equivalent", "not_greater"] = "greater"
    kind: Literal["finding", "expectation"] = "finding"
    margin: float | None = None  # equivalence and non-superiority claims: declared here, no paper states one
    models: tuple[str, ...] = ()  # globs of the models the claim is about (empty: every model)
    except_models: tuple[str, ...] = ()  # globs of the models it excludes
    requires: str | None = None  # a setting the suite must provide (SETTINGS)
    # the effect the paper prints, for `kbench claims plan`: {"value", "against", "quote"[, "note"]}, the
    # statistic's two rates (or its rate and reference) as the paper reports them
    paper_effect: dict[str, Any] | None = None

    def __post_init__(self) -> None:  # JSON lists, kept hashable
        object.__setattr__(self, "models", tuple(self.models))
        object.__setattr__(self, "except_models", tuple(self.except_models))
        if self.measurable and self.direction in ("equivalent", "not_greater") and self.margin is None:
            raise ValueError(f"claim {self.label}: a {self.direction} claim declares its margin")
        if self.requires is not None and self.requires not in SETTINGS:
            raise ValueError(f"claim {self.id}: requires {self.requires!r}, not one of {', '.join(SETTINGS)}")

    @property
    def label(self) -> str:
        return f"{self.id} ({self.part})" if self.part else self.id

    @property
    def measurable(self) -> bool:
        return self.unmeasurable is None


def _names(label: str, row: dict) -> list[str]:
    """What a scope glob is matched against: the label, the model spec, its last path component."""
    spec = str(row.get("model") or "")
    return [n.lower() for n in (label, spec, spec.rstrip("/").rsplit("/", 1)[-1]) if n]


def _matches(patterns: tuple[str, ...], label: str, row: dict) -> bool:
    return any(fnmatch.fnmatchcase(name, p.lower()) for p in patterns for name in _names(label, row))


def in_scope(claim: Claim, label: str, row: dict | None) -> bool:
    """Whether the claim is about the model `label` (row: its row of suite.json's model table)."""
    row = row or {}
    if claim.models and not _matches(claim.models, label, row):
        return False
    return not _matches(claim.except_models, label, row)


def scope_text(claim: Claim) -> str:
    """The claim's models in words ("" for every model)."""
    parts = [f"models matching {', '.join(claim.models)}"] if claim.models else []
    parts += [f"except {', '.join(claim.except_models)}"] if claim.except_models else []
    return " ".join(parts)


# the settings a claim can require: what each is, and whether a model (its model-table row) provides it
SETTINGS = {
    "continual-pretraining": (
        "a model after continual pretraining (a `kbench read` checkpoint)",
        lambda row: bool((row or {}).get("read")),
    ),
}


def provides(setting: str, row: dict | None) -> bool:
    return SETTINGS[setting][1](row)


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
