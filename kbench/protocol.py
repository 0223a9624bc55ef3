"""The protocol record: which paper's procedure made a number, where this run departs from it, and
where the paper is silent and kbench had to choose.

Every evaluation run (`results.json`) and every built dataset (`manifest.json`, the card) carries
one block (`docs/protocol.md`, `schemas/protocol.v2.json`):

    {"schema": "kbench.protocol.v2", "name": "maple-kee", "reference": "...", "faithful": false,
     "deviations": [{"id": "sgr-majority-vote", "paper": "...", "kbench": "...", "effect": "..."}],
     "interpretations": [{"id": "sgr-recovery-rule", "paper": "...", "kbench": "...",
                          "alternatives": ["..."], "effect": "..."}]}

A deviation is where the run departs from what the paper says; an interpretation is a choice where
the paper says nothing, with the readings kbench did not take. The two are kept apart: an
interpretation never makes a run unfaithful, and kbench's reading is never presented as the
paper's. The entries are made by the code path that departs or chooses, from the settings the run
used, the model kind, the data it found: never a hand-kept list. `faithful` is true only when the
deviation list is empty. A results file without a block reads as "not recorded", never as faithful;
a v1 block (before interpretations were recorded) still reads, with no interpretation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kbench.errors import UserError

SCHEMA = "kbench.protocol.v2"
V1 = "kbench.protocol.v1"  # no `interpretations`; still read
_SLUG = re.compile(r"^[a-z0-9][a-z0-9@.+-]*$")

#: The papers, cited once; a task or recipe names its reference by key.
REFERENCES = {
    "lama": "Petroni et al. 2019, Language Models as Knowledge Bases? (EMNLP 2019)",
    "maple": "MAPLE: A Multi-Axis Parametric Knowledge Extraction Lens for LLM Evaluation",
    "xteval": (
        "Kazemnejad, Rezagholizadeh, Parthasarathi and Chandar 2023, Measuring the Knowledge "
        "Acquisition-Utilization Gap in Pretrained Language Models (Findings of EMNLP 2023)"
    ),
    "left": "Perhaps PTLMs Should Go to School - A Task to Assess Open Book and Closed Book QA (EMNLP 2021)",
    "evolvingqa": (
        "Kim et al. 2023, Carpe Diem: On the Evaluation of World Knowledge in Lifelong Language Models (arXiv:2311.08106)"
    ),
    "kola": "Yu et al. 2023, KoLA: Carefully Benchmarking World Knowledge of Large Language Models (arXiv:2306.09296)",
    "bear": (
        "Wiland, Ploner and Akbik 2024, BEAR: A Unified Framework for Evaluating Relational Knowledge in Causal "
        "and Masked Language Models (NAACL 2024 Findings)"
    ),
}


@dataclass(frozen=True)
class Deviation:
    """One departure from the paper: `id` a stable slug, `paper` what the paper does, `kbench` what
    this run or build did, `effect` which reported numbers it touches."""

    id: str
    paper: str
    kbench: str
    effect: str

    def __post_init__(self) -> None:
        if not _SLUG.match(self.id):
            raise ValueError(f"deviation id {self.id!r} is not a lower-case slug")
        for key in ("paper", "kbench", "effect"):
            if not getattr(self, key).strip():
                raise ValueError(f"deviation {self.id}: `{key}` is empty")

    def as_dict(self) -> dict:
        return {"id": self.id, "paper": self.paper, "kbench": self.kbench, "effect": self.effect}


def departures(*settings: tuple[str, object, object, str, str, str]) -> list[Deviation]:
    """A Deviation for each (id, the run's value, the paper's, what the paper does, what the run does,
    what it moves) whose two values differ: the common "a setting off the paper's default" case."""
    return [Deviation(key, paper, text, effect) for key, ours, papers, paper, text, effect in settings if ours != papers]


@dataclass(frozen=True)
class Interpretation:
    """A choice where the paper is silent: `id` a stable slug, `paper` what the paper says (and
    leaves unsaid), `kbench` the reading this run took, `alternatives` the readings it did not
    take (at least one: else there was no choice), `effect` which numbers depend on the reading."""

    id: str
    paper: str
    kbench: str
    alternatives: tuple[str, ...]
    effect: str

    def __post_init__(self) -> None:
        if not _SLUG.match(self.id):
            raise ValueError(f"interpretation id {self.id!r} is not a lower-case slug")
        for key in ("paper", "kbench", "effect"):
            if not getattr(self, key).strip():
                raise ValueError(f"interpretation {self.id}: `{key}` is empty")
        if not self.alternatives or not all(isinstance(a, str) and a.strip() for a in self.alternatives):
            raise ValueError(f"interpretation {self.id}: `alternatives` must name at least one other reading")

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "paper": self.paper,
            "kbench": self.kbench,
            "alternatives": list(self.alternatives),
            "effect": self.effect,
        }


@dataclass(frozen=True)
class ProtocolRecord:
    """A named procedure, this run's departures from it and its readings where the paper is silent
    (each in the order they were recorded)."""

    name: str
    reference: str
    deviations: tuple[Deviation, ...] = field(default=())
    interpretations: tuple[Interpretation, ...] = field(default=())

    def __post_init__(self) -> None:
        for what, entries in (("deviation", self.deviations), ("interpretation", self.interpretations)):
            ids = [e.id for e in entries]
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            if repeated:
                raise ValueError(f"protocol {self.name}: {what} ids repeated: {', '.join(repeated)}")

    @property
    def faithful(self) -> bool:
        return not self.deviations  # an interpretation departs from nothing the paper says

    def with_deviations(self, deviations: Iterable[Deviation]) -> ProtocolRecord:
        return ProtocolRecord(self.name, self.reference, (*self.deviations, *deviations), self.interpretations)

    def with_interpretations(self, interpretations: Iterable[Interpretation]) -> ProtocolRecord:
        return ProtocolRecord(self.name, self.reference, self.deviations, (*self.interpretations, *interpretations))

    def block(self) -> dict:
        return {
            "schema": SCHEMA,
            "name": self.name,
            "reference": self.reference,
            "faithful": self.faithful,
            "deviations": [d.as_dict() for d in self.deviations],
            "interpretations": [i.as_dict() for i in self.interpretations],
        }

    @classmethod
    def from_block(cls, block: object, where: str) -> ProtocolRecord:
        """Read a block back; a malformed one is a `UserError` naming `where` and the key."""
        if not isinstance(block, dict):
            raise UserError(f"{where}: `protocol` is not an object")
        if block.get("schema") not in (SCHEMA, V1):
            raise UserError(f"{where}: protocol.schema is {block.get('schema')!r}, expected {SCHEMA!r} (or {V1!r})")
        for key in ("name", "reference"):
            if not isinstance(block.get(key), str) or not block[key]:
                raise UserError(f"{where}: protocol.{key} is missing or not a string")
        entries = block.get("deviations")
        if not isinstance(entries, list):
            raise UserError(f"{where}: protocol.deviations is missing or not a list")
        deviations = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or set(entry) != {"id", "paper", "kbench", "effect"}:
                raise UserError(f"{where}: protocol.deviations[{i}] must have exactly id, paper, kbench, effect")
            if not all(isinstance(v, str) for v in entry.values()):
                raise UserError(f"{where}: protocol.deviations[{i}] has a value that is not a string")
            try:
                deviations.append(Deviation(**entry))
            except ValueError as exc:
                raise UserError(f"{where}: protocol.deviations[{i}]: {exc}") from exc
        interpretations = _interpretations(block, where) if block["schema"] == SCHEMA else ()
        try:
            protocol = cls(block["name"], block["reference"], tuple(deviations), interpretations)
        except ValueError as exc:
            raise UserError(f"{where}: {exc}") from exc
        if block.get("faithful") is not protocol.faithful:
            raise UserError(f"{where}: protocol.faithful is {block.get('faithful')!r} but it lists {len(deviations)} deviations")
        return protocol


def _interpretations(block: dict, where: str) -> tuple[Interpretation, ...]:
    entries = block.get("interpretations")
    if not isinstance(entries, list):
        raise UserError(f"{where}: protocol.interpretations is missing or not a list")
    out = []
    keys = {"id", "paper", "kbench", "alternatives", "effect"}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != keys:
            raise UserError(f"{where}: protocol.interpretations[{i}] must have exactly {', '.join(sorted(keys))}")
        alternatives = entry["alternatives"]
        texts = [v for k, v in entry.items() if k != "alternatives"]
        if not all(isinstance(v, str) for v in texts) or not isinstance(alternatives, list):
            raise UserError(f"{where}: protocol.interpretations[{i}]: alternatives must be a list, the rest strings")
        try:
            out.append(Interpretation(**{**entry, "alternatives": tuple(alternatives)}))
        except ValueError as exc:
            raise UserError(f"{where}: protocol.interpretations[{i}]: {exc}") from exc
    return tuple(out)


def read_protocol(document: dict, where: str) -> ProtocolRecord | None:
    """The `protocol` block of a results file or manifest; None when it was not recorded (an older
    file), which readers show as "not recorded", never as faithful."""
    if "protocol" not in document:
        return None
    return ProtocolRecord.from_block(document["protocol"], where)


def describe(protocol: ProtocolRecord | None) -> str:
    """One line for a table: "faithful to NAME", "N deviations from NAME" or "not recorded"."""
    if protocol is None:
        return "protocol not recorded"
    if protocol.faithful:
        return f"faithful to {protocol.name}"
    n = len(protocol.deviations)
    return f"{n} deviation{'s' if n != 1 else ''} from {protocol.name}"


def comparison_differences(protocols: dict[str, ProtocolRecord | None], same_items: Iterable[str] = ()) -> list[str]:
    """Why runs with these protocol blocks are not comparable as like for like: one line per
    difference (a run without a record, another procedure, or a deviation some runs have and
    others lack or made with other settings), saying what each run did and which numbers it
    touches; [] when none. Deviations in `same_items` change only which items a run has (a
    `--limit` sample): a comparison on the shared items handles them, so they are not listed."""
    lines = []
    unrecorded = sorted(run for run, p in protocols.items() if p is None)
    if unrecorded:
        lines.append(
            f"protocol not recorded for {', '.join(unrecorded)}: nothing says which procedure made its numbers, "
            "so the comparison may set different procedures side by side"
        )
    recorded = {run: p for run, p in protocols.items() if p is not None}
    names = {p.name for p in recorded.values()}
    if len(names) > 1:
        lines.append(
            "different procedures: "
            + ", ".join(f"{run} is {p.name}" for run, p in sorted(recorded.items()))
            + "; their numbers measure different things and a difference between them is not a difference between models"
        )
        return lines
    ignored = set(same_items)
    ids = sorted({d.id for p in recorded.values() for d in p.deviations} - ignored)
    for deviation_id in ids:
        having = {run: next((d for d in p.deviations if d.id == deviation_id), None) for run, p in sorted(recorded.items())}
        if len({d.kbench if d else None for d in having.values()}) == 1:
            continue  # every run departs the same way: like for like (each block still shows it)
        some = next(d for d in having.values() if d is not None)
        what = "; ".join(f"{run}: {d.kbench if d else 'as the paper (' + some.paper + ')'}" for run, d in having.items())
        lines.append(f"{deviation_id} differs between the runs ({what}); it touches {some.effect}")
    # a reading where the paper is silent, taken differently by runs that record it (a v1 block records none)
    readings = [p for p in recorded.values() if p.interpretations]
    for reading_id in sorted({i.id for p in readings for i in p.interpretations}):
        having = {run: next((i for i in p.interpretations if i.id == reading_id), None) for run, p in sorted(recorded.items())}
        taken = {run: i for run, i in having.items() if i is not None}
        if len({i.kbench for i in taken.values()}) > 1:
            what = "; ".join(f"{run}: {i.kbench}" for run, i in taken.items())
            some = next(iter(taken.values()))
            lines.append(f"{reading_id} (the paper is silent) is read differently ({what}); it touches {some.effect}")
    return lines
