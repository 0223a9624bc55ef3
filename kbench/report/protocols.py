"""A run's (or a dataset's) protocol block as the report, the cards and the exports show it
(docs/protocol.md): "faithful to NAME", or "N deviations from NAME" with the list (id, what the
paper does, what kbench did, which numbers it touches), or "protocol not recorded" for a file
from before the record, which is never shown as faithful. The interpretations (kbench's readings
where the paper is silent) follow in a list of their own, never among the deviations."""

from __future__ import annotations

from html import escape

from kbench.protocol import Interpretation, ProtocolRecord, describe

NOT_RECORDED = (
    "this file carries no protocol block (written before kbench recorded one, or converted from v1): "
    "nothing says whether its numbers follow the paper's procedure"
)
COLUMNS = ("id", "paper", "kbench", "effect")
READING_COLUMNS = ("id", "paper", "kbench", "alternatives", "effect")
READINGS_HEAD = "Interpretations (the paper is silent; kbench's reading, not the paper's)"


def _reading(i: Interpretation, column: str) -> str:
    return "; ".join(i.alternatives) if column == "alternatives" else getattr(i, column)


def block_html(protocol: ProtocolRecord | None) -> str:
    if protocol is None:
        return f"<p class='warn'><b>protocol not recorded</b>: {escape(NOT_RECORDED)}</p>"
    head = f"<b>{escape(describe(protocol))}</b> <span class='meta'>({escape(protocol.reference)})</span>"
    readings = _readings_html(protocol)
    if protocol.faithful:
        return f"<p class='ok'>{head}</p>{readings}"
    header = "".join(f"<th>{c}</th>" for c in COLUMNS)
    rows = "".join("<tr>" + "".join(f"<td>{escape(getattr(d, c))}</td>" for c in COLUMNS) + "</tr>" for d in protocol.deviations)
    return (
        f"<p class='warn'>{head}</p><div class='scroll'><table class='protocol'><thead><tr>{header}</tr></thead>"
        f"<tbody>{rows}</tbody></table></div>{readings}"
    )


def _readings_html(protocol: ProtocolRecord) -> str:
    if not protocol.interpretations:
        return ""
    header = "".join(f"<th>{c}</th>" for c in READING_COLUMNS)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(_reading(i, c))}</td>" for c in READING_COLUMNS) + "</tr>"
        for i in protocol.interpretations
    )
    return (
        f"<p class='meta'><b>{escape(READINGS_HEAD)}</b></p><div class='scroll'><table class='protocol'>"
        f"<thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def block_markdown(protocol: ProtocolRecord | None, heading: str = "## Protocol") -> str:
    """The block as a Markdown section (a card, an exported task's README)."""
    if protocol is None:
        return f"{heading}\n\nProtocol not recorded: {NOT_RECORDED}.\n"
    lines = [heading, "", f"**{describe(protocol)}** ({protocol.reference}).", ""]
    if not protocol.faithful:
        lines += ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(_cell(getattr(d, c)) for c in COLUMNS) + " |" for d in protocol.deviations]
        lines.append("")
    lines += readings_markdown(protocol)
    return "\n".join(lines)


def readings_markdown(protocol: ProtocolRecord | None) -> list[str]:
    """The interpretations as a Markdown table of their own ([] when none are recorded)."""
    if protocol is None or not protocol.interpretations:
        return []
    lines = [f"**{READINGS_HEAD}:**", "", "| " + " | ".join(READING_COLUMNS) + " |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(_cell(_reading(i, c)) for c in READING_COLUMNS) + " |" for i in protocol.interpretations]
    return lines + [""]


def block_lines(protocol: ProtocolRecord | None) -> list[str]:
    """The block for a terminal: one line, then one per deviation, then one per interpretation."""
    if protocol is None:
        return ["protocol not recorded"]
    return (
        [describe(protocol)]
        + [f"  - {d.id}: {d.kbench} (touches {d.effect})" for d in protocol.deviations]
        + [f"  ~ {i.id} (interpretation; the paper is silent): {i.kbench}" for i in protocol.interpretations]
    )
