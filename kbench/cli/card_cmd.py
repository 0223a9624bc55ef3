"""`kbench card` and `kbench publish`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app


@app.command()
def card(
    folder: Path = typer.Argument(..., help="A built dataset folder (has manifest.json and data/)."),
    family: Optional[str] = typer.Option(
        None, "--family", help="Card template: lama, maple-wiki, left-textbook or evolving (default: from the manifest)."
    ),
    license_id: Optional[str] = typer.Option(
        None, "--license", help="Hub license id; must keep every condition of the sources' licenses."
    ),
    force: bool = typer.Option(
        False, "--force", help="Accept a --license less restrictive than the sources (you hold other rights)."
    ),
) -> None:
    """Write or refresh FOLDER/README.md, the Hub data card, from the manifest, stats and splits."""
    from kbench.cards.render import write_card

    path = write_card(folder, family=family, license_id=license_id, force=force)
    typer.echo(f"card written to {path}")


@app.command()
def publish(
    folder: Path = typer.Argument(
        ...,
        help="A built dataset folder, an evaluation run directory (uploads results.json, items and its HTML report), "
        "or a suite folder (the leaderboard as a dataset, the suite report, every cell's per-item rows).",
    ),
    repo_id: str = typer.Option(..., "--repo-id", help="Hub dataset repo, ORG/NAME."),
    private: bool = typer.Option(False, "--private", help="Create the repo as private."),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Check the folder and list the files that would be uploaded; upload nothing."
    ),
) -> None:
    """Upload a dataset (or evaluation results) to the Hugging Face Hub as a dataset repo."""
    from kbench.cards.publish import publish as publish_folder

    suite = None
    if (Path(folder) / "suite.json").is_file():  # a suite lays out its own upload
        from kbench.suite.publish import plan_suite

        suite = plan_suite(Path(folder))
    plan = publish_folder(folder, repo_id, private=private, dry_run=dry_run, plan=suite)
    generated = " (generated)"
    for rel in plan.files:
        typer.echo(f"{rel}{generated if rel in plan.generated else ''}")
    verb = "would upload" if dry_run else "uploaded"
    typer.echo(f"{verb} {len(plan.files)} files to dataset repo {repo_id}" + (" (private)" if private else ""), err=True)
