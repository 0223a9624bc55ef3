"""Which paper's construction procedure a recipe follows, and what a built dataset's block implies.

A recipe names its procedure in `[pipeline] protocol` (one of `CONSTRUCTION_PROTOCOLS`); the
runner starts the dataset's protocol block (`kbench.protocol`) from it and adds each stage's
departures (`Stage.deviations`), so the block in `manifest.json` and in the card says where the
build stands in for the paper. `frequency_stand_in` tells a reader of a head/tail difference
whether the bins it compares are the paper's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from kbench.protocol import REFERENCES, Deviation, ProtocolRecord

#: protocol name -> REFERENCES key (None: the recipe follows no paper's procedure).
CONSTRUCTION_PROTOCOLS: dict[str, str | None] = {
    "lama-probe": "lama",  # the original LAMA probe, every test fact
    "lama-derived": "lama",  # a benchmark derived from LAMA's facts (filtered, binned, capped)
    "maple-benchmark": "maple",
    "left-textbook": "left",
    "evolvingqa": "evolvingqa",
    "custom": None,
}
CUSTOM_REFERENCE = 'none: the recipe follows no paper\'s construction procedure ([pipeline] protocol = "custom")'

#: Deviation ids (made by `frequency_bin`) meaning the head / torso / tail bins are not MAPLE's.
FREQUENCY_STAND_IN_PREFIX = "frequency-"


def construction_protocol(name: str) -> ProtocolRecord:
    """The block a build starts from, before its stages add their departures."""
    key = CONSTRUCTION_PROTOCOLS[name]
    return ProtocolRecord(name, REFERENCES[key] if key else CUSTOM_REFERENCE)


def add_stage_deviations(protocol: ProtocolRecord, deviations: Iterable[Deviation], stage_id: str) -> ProtocolRecord:
    """`protocol` with a stage's entries; an id an earlier stage already recorded (a recipe that bins
    or checks twice) gets `@<stage id>`, so both entries stay."""
    seen = {d.id for d in protocol.deviations}
    suffix = "@" + re.sub(r"[^a-z0-9.+-]", "-", stage_id.lower())
    return protocol.with_deviations(replace(d, id=d.id + suffix) if d.id in seen else d for d in deviations)


def frequency_stand_in(protocol: ProtocolRecord | None) -> str | None:
    """A note for a head/tail difference drawn from a dataset with this (construction) protocol, or
    None when its bins are the paper's. An unrecorded protocol cannot vouch for its bins."""
    if protocol is None:
        return "frequency bins of unknown provenance (the dataset records no protocol)"
    ids = [d.id for d in protocol.deviations if d.id.startswith(FREQUENCY_STAND_IN_PREFIX)]
    if not ids:
        return None
    return f"frequency bins are a stand-in for MAPLE's pageview bins ({', '.join(ids)})"


def results_bin_note(results: dict) -> str | None:
    """The note for a head/tail difference in a results file: from the dataset's construction
    protocol that the run recorded (`dataset.construction_protocol`); unknown when it has none."""
    block = (results.get("dataset") or {}).get("construction_protocol")
    if block is None:
        return frequency_stand_in(None)
    return frequency_stand_in(ProtocolRecord.from_block(block, "results.json dataset.construction_protocol"))
