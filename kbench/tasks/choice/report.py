"""The choice task's section of the report: per relation, the answers the model picks when it is
wrong (`metrics.prior_bias`). A model that says "English" for most native languages it gets wrong
shows a prior, not knowledge: the accuracy tables cannot tell the two apart."""

from __future__ import annotations

from html import escape


def prior_bias_section(run) -> str:
    bias = run.metrics.get("prior_bias") or {}
    if not bias:
        return ""
    rows = []
    for relation, entry in bias.items():
        picks = ", ".join(f"{escape(a['answer'])} ({a['count']}, {a['share_of_wrong']:.0%})" for a in entry["answers"]) or "—"
        name = escape(run.relation_name(relation))
        rows.append(f"<tr><td>{name}</td><td>{entry['wrong']} of {entry['items']}</td><td>{picks}</td></tr>")
    return (
        "<h3>Most-chosen wrong answers (the model's prior)</h3>"
        "<p class='meta'>Per relation: the items answered wrongly, then the answers picked for them, most picked "
        "first (count, share of the wrong items). One answer taking most of a relation's errors is a bias of the "
        "model, whatever the subject.</p>"
        "<div class='scroll'><table><thead><tr><th>relation</th><th>wrong</th><th>picked instead</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
