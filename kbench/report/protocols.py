"""A run's (or a dataset's) protocol block as the report, the cards and the exports show it
(docs/protocol.md): "faithful to NAME", or "N deviations from NAME" with the list (id, what the
paper does, what kbench did, which numbers it touches), or "protocol not recorded" for a file
from before the record, which is never shown as faithful."""

from __future__ import annotations

from html import escape

from kbench.protocol import Protocol, describe

NOT_RECORDED = (
    "this file carries no protocol block (written before kbench recorded one, or converted from v1): "
    "nothing says whether its numbers follow the paper's procedure"
)
COLUMNS = ("id", "paper", "kbench", "effect")


def block_html(protocol: Protocol | None) -> str:
    if protocol is None:
        return f"<p class='warn'><b>protocol not recorded</b>: {escape(NOT_RECORDED)}</p>"
    head = f"<b>{escape(describe(protocol))}</b> <span class='meta'>({escape(protocol.reference)})</span>"
    if protocol.faithful:
        return f"<p class='ok'>{head}</p>"
    header = "".join(f"<th>{c}</th>" for c in COLUMNS)
    rows = "".join("<tr>" + "".join(f"<td>{escape(getattr(d, c))}</td>" for c in COLUMNS) + "</tr>" for d in protocol.deviations)
    return (
        f"<p class='warn'>{head}</p><div class='scroll'><table class='protocol'><thead><tr>{header}</tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def block_markdown(protocol: Protocol | None, heading: str = "## Protocol") -> str:
    """The block as a Markdown section (a card, an exported task's README)."""
    if protocol is None:
        return f"{heading}\n\nProtocol not recorded: {NOT_RECORDED}.\n"
    lines = [heading, "", f"**{describe(protocol)}** ({protocol.reference}).", ""]
    if not protocol.faithful:
        lines += ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(_cell(getattr(d, c)) for c in COLUMNS) + " |" for d in protocol.deviations]
        lines.append("")
    return "\n".join(lines)


def block_lines(protocol: Protocol | None) -> list[str]:
    """The block for a terminal: one line, then one per deviation."""
    if protocol is None:
        return ["protocol not recorded"]
    return [describe(protocol)] + [f"  - {d.id}: {d.kbench} (touches {d.effect})" for d in protocol.deviations]
