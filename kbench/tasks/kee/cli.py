"""`kbench evaluate kee`: knowledge-elicitation techniques vs the greedy baseline (MAPLE)."""

from __future__ import annotations

import typer

from kbench.cli.common import TaskCall, evaluate_command


@evaluate_command("kee", exclude=("technique_params",), comma=("techniques",))
def kee(
    values: dict,
    technique_param: list[str] = typer.Option(
        [], "--technique-param", help="NAME.KEY=VALUE, repeatable: a technique setting, e.g. iti.heads=13."
    ),
) -> TaskCall:
    """Compare elicitation techniques with the baseline on paired items; rerunning the same command resumes."""
    from kbench.tasks.kee.techniques import parse_technique_params

    return TaskCall({**values, "technique_params": parse_technique_params(technique_param)}, after=_comparison_report)


def _comparison_report(results: dict, run_dir) -> None:
    """The protocol block and the paired tests on the terminal (the task itself wrote comparison.md
    and the charts)."""
    from rich.console import Console

    from kbench.protocol import describe, read_protocol

    console = Console(stderr=True)
    protocol = read_protocol(results, str(run_dir / "results.json"))
    console.print(f"protocol: {describe(protocol)}", markup=False)
    for d in protocol.deviations if protocol else ():
        console.print(f"  {d.id}: {d.kbench} (MAPLE: {d.paper})", markup=False)
    for i in protocol.interpretations if protocol else ():
        console.print(f"  ~ {i.id} (interpretation; MAPLE is silent): {i.kbench}", markup=False)
    console.print(_tests_table(results["metrics"]))
    console.print(f"table: {run_dir / 'comparison.md'}; charts: {run_dir / 'prs.png'}, {run_dir / 'gain_loss.png'}")


def _tests_table(metrics: dict):
    """Per technique: the exact McNemar test against every other technique, and the PRS sign test."""
    from rich.table import Table

    table = Table(title="paired tests (exact McNemar: b / c, p [Holm]) and PRS Improved vs Worsened (sign test)")
    for column in ("first", "second", "b / c", "p [Holm]"):
        table.add_column(column)
    for t in metrics["pairwise_tests"]:
        table.add_row(t["first"], t["second"], f"{t['b']} / {t['c']}", f"{t['p_value']:.3g} [{t['p_holm']:.3g}]")
    for name, m in metrics["per_technique"].items():
        sign = m["prs"]["sign_test"]
        table.add_row(name, "PRS sign test", f"{sign['plus']} / {sign['minus']}", f"{sign['p_value']:.3g}")
    return table
