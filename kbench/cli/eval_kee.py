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
    from kbench.evaluate.techniques import parse_technique_params

    return TaskCall({**values, "technique_params": parse_technique_params(technique_param)}, after=_comparison_report)


def _comparison_report(results: dict, run_dir) -> None:
    from rich.console import Console

    from kbench.report.kee import write_report

    write_report(results, run_dir)
    Console(stderr=True).print(f"table: {run_dir / 'comparison.md'}; charts: {run_dir / 'prs.png'}, {run_dir / 'gain_loss.png'}")
