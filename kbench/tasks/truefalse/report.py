"""LEFT's setting comparisons: open book - prior and closed book - prior, paired on statements.

A truefalse run scores one setting (`kbench.tasks.truefalse.task`). A closed-book run scores the
base model's prior too, so its own results hold closed book - prior (`before_after`). Open book
- prior needs two runs of one model: given a prior run and open-book runs (by model identity),
`setting_comparisons` pairs their statements by id and reports the paired difference of
accuracy with Newcombe's paired interval and the exact McNemar test; `markdown` renders them
for `left_settings.md` beside the report.
"""

from __future__ import annotations

from kbench.metrics.uncertainty import difference_paired, format_estimate, mcnemar
from kbench.report.items import item_correct
from kbench.report.runs import Run

PRIOR = "prior"


def _setting(run: Run) -> str:
    return str(run.metrics.get("setting") or run.results.get("settings", {}).get("setting") or "")


def _correct(rows: list[dict]) -> dict[str, bool]:
    return {str(r["id"]): ok for r in rows if (ok := item_correct(r)) is not None}


def setting_comparisons(runs: list[Run], items: list[list[dict]]) -> list[dict]:
    """[{model, setting, against, source, difference, paired_test}] for every truefalse setting
    that has a prior to be compared with (another run of the same model, or the run itself)."""
    truefalse = [(run, rows) for run, rows in zip(runs, items) if run.task == "truefalse"]
    priors = {run.results["model"].get("identity"): (run, rows) for run, rows in truefalse if _setting(run) == PRIOR and rows}
    out = []
    for run, rows in truefalse:
        setting = _setting(run)
        inside = run.metrics.get("before_after", {})
        if "difference" in inside:
            out.append(
                {
                    "model": run.label,
                    "setting": setting,
                    "against": PRIOR,
                    "source": "within the run (the base model's prior)",
                    "difference": inside["difference"],
                    "paired_test": inside["paired_test"],
                }
            )
        elif setting != PRIOR and rows and (prior := priors.get(run.results["model"].get("identity"))):
            mine, theirs = _correct(rows), _correct(prior[1])
            out.append(
                {
                    "model": run.label,
                    "setting": setting,
                    "against": PRIOR,
                    "source": f"runs {run.path.name} and {prior[0].path.name}, paired on statement ids",
                    "difference": difference_paired(mine, theirs),
                    "paired_test": mcnemar(mine, theirs),
                }
            )
    return out


def markdown(comparisons: list[dict]) -> str:
    lines = [
        "# LEFT: each setting against the prior, paired on statements",
        "",
        "Difference of per-statement accuracy (setting - prior) in percentage points with Newcombe's paired 95% "
        "interval; b = statements only the setting gets right, c = only the prior; p = exact McNemar.",
        "",
        "| model | setting - prior | difference [95% CI] | n | b | c | p | paired from |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for c in comparisons:
        test, d = c["paired_test"], c["difference"]
        lines.append(
            f"| {c['model']} | {c['setting']} - {c['against']} | {format_estimate(d, digits=1, percent=True)} | {d['n']} "
            f"| {test['b']} | {test['c']} | {test['p_value']:.3g} | {c['source']} |"
        )
    return "\n".join(lines) + "\n"
