"""The card's "Protocol" section: which paper's construction procedure the dataset follows and
every step where the build stands in for it (the manifest's `protocol` block, `docs/protocol.md`).

Both cards show it: the one `kbench build` writes (`write_dataset`, from the block built so far)
and the full one `kbench card` writes (from manifest.json). A dataset built before kbench recorded
the block reads "not recorded", never "faithful".
"""

from __future__ import annotations

from kbench.construct.protocols import frequency_stand_in
from kbench.protocol import ProtocolRecord, describe


def render_protocol(protocol: ProtocolRecord | None) -> str:
    if protocol is None:
        return "## Protocol\n\n**Protocol not recorded**: this dataset was built before kbench recorded construction protocols."
    if protocol.name == "custom":  # "faithful to custom" would read as a claim about a paper
        lines = ["## Protocol", "", f"**No paper's construction procedure named** (reference: {protocol.reference})."]
    else:
        lines = ["## Protocol", "", f"**{describe(protocol)}**: {protocol.reference}."]
    if protocol.deviations:
        lines += ["", "| id | the paper | this build | affects |", "|---|---|---|---|"]
        for d in protocol.deviations:
            cells = [f"`{d.id}`", d.paper, d.kbench, d.effect]
            lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    if protocol.interpretations:
        lines += ["", "**Interpretations** (the paper is silent; kbench's reading, not the paper's):", ""]
        lines += ["| id | the paper | this build | alternatives | affects |", "|---|---|---|---|---|"]
        for i in protocol.interpretations:
            cells = [f"`{i.id}`", i.paper, i.kbench, "; ".join(i.alternatives), i.effect]
            lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    if note := frequency_stand_in(protocol):
        lines += ["", f"**Head / tail differences** drawn from this dataset: {note}; quote the note beside the number."]
    lines += ["", "The same block is in `manifest.json` (`protocol`)."]
    return "\n".join(lines)
