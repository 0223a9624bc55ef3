"""A suite folder as a Hub dataset repo (`kbench publish SUITE_DIR --repo-id ORG/NAME`), as
lm-eval's `push_results_to_hub` and `push_samples_to_hub` publish a run:

    leaderboard.parquet         generated: one row per cell (model, task, dataset, status, each
                                headline metric with its 95% interval and n, the error of a failed cell)
    suite.json, claims.md       as the suite folder holds them
    cells/KEY/results.json      every finished cell's envelope, and its per-item rows
    cells/KEY/items.parquet
    report/...                  generated: the suite report (`kbench report SUITE_DIR`)
    README.md                   generated: a card whose configs open the leaderboard (default) and
                                each cell's per-item rows with `datasets.load_dataset`
"""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

from kbench.errors import UserError


def leaderboard_rows(document: dict) -> list[dict]:
    """One row per (cell, headline metric); a failed or pending cell gets one row without numbers."""
    rows = []
    for key, cell in document["cells"].items():
        base = {"cell": key, "model": cell["model"], "task": cell["task"], "dataset": cell["dataset"], "status": cell["status"]}
        blank = {"metric": None, "value": None, "ci_low": None, "ci_high": None, "n": None, "error": cell.get("error")}
        headline = cell.get("headline") or {}
        if not headline:
            rows.append({**base, **blank})
        for metric, estimate in headline.items():
            values = {k: estimate.get(k) for k in ("value", "ci_low", "ci_high", "n")}
            rows.append({**base, **blank, "metric": metric, **values})
    return rows


def _parquet(rows: list[dict]) -> bytes:
    import polars as pl

    schema: dict[str, type[pl.DataType]]
    schema = {"cell": pl.String, "model": pl.String, "task": pl.String, "dataset": pl.String, "status": pl.String}
    schema |= {"metric": pl.String, "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64}
    buffer = io.BytesIO()
    pl.DataFrame(rows, schema={**schema, "error": pl.String}).write_parquet(buffer, statistics=False)
    return buffer.getvalue()


def _report(folder: Path) -> dict[str, bytes]:
    from kbench.suite.report import build_suite_report

    with tempfile.TemporaryDirectory(prefix="kbench-suite-report-") as tmp:
        out = Path(tmp) / "report"
        build_suite_report(folder, out)
        return {f"report/{p.relative_to(out).as_posix()}": p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _card(document: dict, per_item: list[str], files: list[str], rows: int) -> str:
    import yaml

    from kbench.cards.render import size_category

    configs = [{"config_name": "leaderboard", "data_files": [{"split": "test", "path": "leaderboard.parquet"}], "default": True}]
    for rel in per_item:
        name = re.sub(r"[^A-Za-z0-9_-]+", "_", rel.removeprefix("cells/").rsplit("/", 1)[0]).strip("_")
        configs.append({"config_name": name, "data_files": [{"split": "test", "path": rel}]})
    name = document["suite"]["suite"]["name"]
    meta = {
        "pretty_name": f"kbench suite {name}",
        "language": ["en"],
        "license": "other",
        "task_categories": ["question-answering"],
        "size_categories": [size_category(rows)],
        "source_datasets": ["original"],
        "tags": ["kbench", "evaluation-results", "leaderboard"],
        "configs": configs,
    }
    cells = document["cells"].values()
    body = [
        f"# kbench suite {name}",
        "",
        f"{len(cells)} cells (model × task × dataset) run by `kbench suite run`: "
        + ", ".join(f"{sum(c['status'] == s for c in cells)} {s}" for s in sorted({c["status"] for c in cells}))
        + ". `leaderboard.parquet` holds each cell's headline metrics with their 95% intervals and n; each "
        "cell's `items.parquet` its per-item rows, so every number can be recomputed; `report/index.html` the "
        "suite report; `suite.json` the suite, the cells' status and the model table"
        + ("; `claims.md` the papers' claims tested on it." if "claims.md" in files else "."),
        "",
        "## License",
        "",
        "The items inherit the licenses of the datasets they were evaluated on; model outputs are subject to "
        "each model's terms. Hence `license: other`.",
        "",
        "## Files",
        "",
        *[f"- `{rel}`" for rel in sorted({"README.md", *files})],
    ]
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{front}---\n\n" + "\n".join(body) + "\n"


def plan_suite(folder: Path):
    """The upload plan of a suite folder (kbench.cards.publish.UploadPlan, kind "suite")."""
    from kbench.cards.publish import UploadPlan
    from kbench.cards.validate import validate_card
    from kbench.suite.status import read_suite_json

    document = read_suite_json(folder)
    done = [c for c in document["cells"].values() if c["status"] == "done"]
    if not done:
        raise UserError(f"{folder}: no finished cell to publish (kbench suite status {folder})")
    files = ["suite.json"] + (["claims.md"] if (folder / "claims.md").is_file() else [])
    per_item = []
    for cell in done:
        files.append(f"{cell['run_dir']}/results.json")
        table = f"{cell['run_dir']}/items.parquet"
        if (folder / table).is_file():
            per_item.append(table)
    rows = leaderboard_rows(document)
    generated: dict[str, str | bytes] = {"leaderboard.parquet": _parquet(rows), **_report(folder)}
    everything = sorted({*files, *per_item, *generated, "README.md"})
    card = _card(document, per_item, everything, len(rows))
    with tempfile.TemporaryDirectory(prefix="kbench-suite-card-") as tmp:  # the card's configs name these paths
        for rel in ("leaderboard.parquet", *per_item):
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).touch()
        validate_card(card, Path(tmp), where=folder / "README.md (generated)")
    generated["README.md"] = card
    return UploadPlan("suite", folder, everything, generated=generated)
