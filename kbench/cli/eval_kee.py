"""`kbench evaluate kee`: knowledge-elicitation techniques vs the greedy baseline (MAPLE)."""

from __future__ import annotations

from typing import Optional

import typer

from kbench.cli.common import TaskCall, evaluate_command

ALL_TECHNIQUES = "baseline,temp0.7,temp1.2,recite,genread,caa,iti,decore,activation_decoding"


@evaluate_command("kee")
def kee(
    techniques: str = typer.Option(ALL_TECHNIQUES, "--techniques", help="Comma-separated; the baseline always runs."),
    k: int = typer.Option(20, "--k", help="Seed-A samples that split base failures into shallow / deep."),
    sweep_max: int = typer.Option(30, "--sweep-max", help="Ranking stability is checked at K = 1..this."),
    recite_runs: int = typer.Option(20, "--recite-runs", help="RECITE recite-and-answer runs (majority vote)."),
    technique_param: list[str] = typer.Option(
        [], "--technique-param", help="NAME.KEY=VALUE, repeatable: a technique setting, e.g. iti.heads=13."
    ),
    fit_pool_limit: int = typer.Option(3254, "--fit-pool-limit", help="Train/dev items that fit CAA and ITI (MAPLE: 3,254)."),
    top_k: Optional[int] = typer.Option(None, "--top-k", help="Sampling scheme (temperature baselines, partition): top-k."),
    top_p: float = typer.Option(1.0, "--top-p", help="Sampling scheme: nucleus mass (1.0: no truncation)."),
    prompt: str = typer.Option("auto", "--prompt", help="auto (the chat template when the model has one) | chat | question."),
    case_sensitive: bool = typer.Option(False, "--case-sensitive", help="MAPLE matching keeps case."),
) -> TaskCall:
    """Compare elicitation techniques with the baseline on paired items; rerunning the same command resumes."""
    from kbench.evaluate.techniques import parse_technique_params

    names = tuple(n.strip() for n in techniques.split(",") if n.strip())
    values = {
        "techniques": names,
        "k": k,
        "sweep_max": sweep_max,
        "recite_runs": recite_runs,
        "prompt": prompt,
        "case_sensitive": case_sensitive,
        "fit_pool_limit": fit_pool_limit,
        "top_k": top_k,
        "top_p": top_p,
        "technique_params": parse_technique_params(technique_param),
    }
    return TaskCall(values, after=_comparison_report)


def _comparison_report(results: dict, run_dir) -> None:
    from rich.console import Console

    from kbench.report.kee import write_report

    write_report(results, run_dir)
    console = Console(stderr=True)
    metrics = results["metrics"]
    deviating = {t: d["deviations"] for t, d in metrics.get("technique_details", {}).items() if d.get("deviations")}
    if deviating:
        console.print("deviations from MAPLE:")
        for technique, deviations in deviating.items():
            console.print(f"  {technique}: " + "; ".join(deviations), markup=False)
    console.print(_tests_table(metrics))
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
