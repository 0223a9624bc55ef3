"""Publish a built dataset folder, or an evaluation run directory, as a Hub dataset repo.

`plan_upload(DIR)` decides what leaves the machine and refuses what must not:
  * a dataset folder (has manifest.json) needs a valid card (README.md, see `kbench card`) and a
    manifest `files` section that matches the files byte for byte (sha256); it uploads exactly
    `publishable_files(DIR)`: no `.kbench/` work files, locks or temp files;
  * a suite folder (has suite.json) comes with the plan `kbench.suite.publish` lays out;
  * an evaluation run (has results.json) is published as a results dataset, as lm-eval publishes
    its details: results.json, the per-item tables, the run's HTML report (`report/`, rendered
    for the upload as `kbench report RUN` renders it) and a generated card whose `configs` open
    the per-item tables with `datasets.load_dataset`. The run's protocol block (docs/protocol.md)
    travels unchanged in results.json and is shown in the card ("faithful to NAME", the
    deviations, or "protocol not recorded"); a malformed block refuses the upload.
`publish(...)` then calls `create_repo` and `upload_folder` (repo_type="dataset"). `--dry-run`
prints the plan's file list, which is exactly what `upload_folder` would send.

The token comes from huggingface_hub's usual places (HF_TOKEN, then the token store). It is passed
to huggingface_hub and to nothing else: never printed, logged or written; an error message that
would contain it has it replaced.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.cards.folder import file_mismatches, publishable_files
from kbench.cards.validate import validate_card
from kbench.errors import InputError, UserError
from kbench.io import read_json

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")
_PER_ITEM_SUFFIXES = (".parquet", ".jsonl")


@dataclass
class UploadPlan:
    artifact: str  # "dataset", "results" or "suite"
    root: Path
    files: list[str]  # paths in the repo, sorted; exactly what is uploaded
    generated: dict[str, str | bytes] = field(default_factory=dict)  # repo path -> content written only into the upload


def check_repo_id(repo_id: str) -> str:
    if not _REPO_ID.match(repo_id) or ".." in repo_id or repo_id.endswith((".git", ".")):
        raise UserError(f"--repo-id {repo_id!r}: expected ORG/NAME (letters, digits, '-', '_', '.')")
    return repo_id


def plan_upload(root: str | Path) -> UploadPlan:
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root}: not a folder")
    if (root / "manifest.json").exists():
        return _plan_dataset(root)
    if (root / "results.json").exists():
        return _plan_results(root)
    raise UserError(f"{root}: neither a built dataset (manifest.json), an evaluation run (results.json) nor a suite (suite.json)")


def _plan_dataset(root: Path) -> UploadPlan:
    readme = root / "README.md"
    if not readme.is_file():
        raise InputError(readme, f"no data card; write one with: kbench card {root}")
    try:
        validate_card(readme.read_text(encoding="utf-8"), root)
    except InputError as exc:
        raise UserError(f"{exc}; regenerate the card with: kbench card {root}") from exc
    manifest = read_json(root / "manifest.json")
    recorded = manifest.get("files") if isinstance(manifest, dict) else None
    if not recorded:
        raise InputError(root / "manifest.json", f"no `files` checksums; record them with: kbench card {root}", key="files")
    problems = file_mismatches(root, recorded)
    if problems:
        raise InputError(
            root / "manifest.json",
            "files do not match the manifest (sha256): "
            + "; ".join(problems[:5])
            + (f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""),
            key="files",
        )
    return UploadPlan("dataset", root, publishable_files(root))


def _plan_results(root: Path) -> UploadPlan:
    from kbench.report.runs import load_run

    run = load_run(root)  # the results envelope (a v1 file is converted); refuses what the report cannot read
    # Only results and per-item tables (plus top-level JSON such as a run manifest) are data worth
    # publishing; caches (sqlite, safetensors) and logs in a run directory stay local.
    # The resume journal duplicates the per-item rows; a JSONL twin of a parquet table is uploaded
    # but not offered as a second config.
    candidates = [f for f in publishable_files(root) if not Path(f).name.startswith("journal")]
    tables = [f for f in candidates if f.endswith(_PER_ITEM_SUFFIXES)]
    files = [f for f in candidates if f in tables or ("/" not in f and f.endswith(".json"))]
    per_item = [f for f in tables if not (f.endswith(".jsonl") and f[: -len(".jsonl")] + ".parquet" in tables)]
    report = _render_report(root)
    card = results_card(root, run, per_item, [*files, *report])
    validate_card(card, root, where=root / "README.md (generated)")
    files = sorted(set(files) | set(report) | {"README.md"})
    return UploadPlan("results", root, files, generated={"README.md": card, **report})


def _render_report(root: Path) -> dict[str, bytes]:
    """The run's HTML report (summary with intervals, item explorer, charts) as `report/...` files."""
    from kbench.report.build import build_report

    with tempfile.TemporaryDirectory(prefix="kbench-report-") as tmp:
        out = Path(tmp) / "report"
        build_report([root], out)
        return {f"report/{p.relative_to(out).as_posix()}": p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def results_card(root: Path, run, per_item: list[str], files: list[str]) -> str:
    """A card for an evaluation run: metrics summary and one config per per-item table."""
    import pyarrow.parquet as pq
    import yaml

    from kbench.cards.render import size_category

    configs = []
    for i, rel in enumerate(per_item):
        name = re.sub(r"[^A-Za-z0-9_-]+", "_", rel.rsplit(".", 1)[0]).strip("_")
        entry: dict[str, Any] = {"config_name": name, "data_files": [{"split": "test", "path": rel}]}
        if i == 0:
            entry["default"] = True
        configs.append(entry)
    from kbench.metrics.uncertainty import format_estimate

    task, model_name = run.task, run.results["model"].get("name")
    meta = {
        "pretty_name": f"kbench {task} results" + (f" for {model_name}" if model_name else ""),
        "language": ["en"],
        "license": "other",
        "task_categories": ["question-answering"],
        "size_categories": [
            size_category(max((pq.read_metadata(root / f).num_rows for f in per_item if f.endswith(".parquet")), default=0))
        ],
        "source_datasets": ["original"],
        "tags": ["kbench", "evaluation-results"],
        "configs": configs or [{"config_name": "results", "data_files": [{"split": "test", "path": "results.json"}]}],
    }
    from kbench.report.protocols import block_markdown

    summary = [f"- `{k}`: {format_estimate(v)} (n = {v['n']})" for k, v in run.headline.items()]
    body = "\n".join(
        [
            f"# kbench {task} results",
            "",
            f"Evaluation run `{root.name}` produced by `kbench evaluate {task}`"
            + (f" on model `{model_name}`." if model_name else "."),
            "",
            "`results.json` holds the aggregates (its schema is named inside it); the per-item tables hold one row "
            "per evaluated item, so every number can be recomputed.",
            "",
            block_markdown(run.protocol),
            "## Summary",
            "",
            *(summary or ["(see results.json)"]),
            "",
            "## License",
            "",
            "The items inherit the license of the dataset they were evaluated on (see that dataset's card); "
            "model outputs are subject to the model's terms. Hence `license: other`.",
            "",
            "## Files",
            "",
            *[f"- `{rel}`" for rel in sorted({"README.md", *files})],
        ]
    )
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{front}---\n\n{body}\n"


def _scrub(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text


def publish(
    root: str | Path, repo_id: str, *, private: bool = False, dry_run: bool = False, plan: UploadPlan | None = None
) -> UploadPlan:
    """Check the folder, then (unless `dry_run`) create the repo and upload the plan's files (`plan`:
    one made elsewhere, as `kbench.suite.publish.plan_suite` makes a suite's)."""
    check_repo_id(repo_id)
    plan = plan or plan_upload(root)
    if dry_run:
        return plan
    from huggingface_hub import HfApi, get_token

    token = get_token()
    if not token:
        raise UserError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (use --dry-run to check without one)")
    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None, token=token)
    try:
        # private=None leaves the Hub's default (and an existing repo's visibility) alone
        api.create_repo(repo_id, repo_type="dataset", private=True if private else None, exist_ok=True)
        if plan.generated:
            _upload_staged(api, plan, repo_id)
        else:
            api.upload_folder(
                folder_path=plan.root,
                repo_id=repo_id,
                repo_type="dataset",
                allow_patterns=[glob.escape(f) for f in plan.files],
                commit_message=f"Upload {plan.artifact} with kbench",
            )
    except UserError:
        raise
    except Exception as exc:  # HTTP and connection errors of every kind: one clear line, token removed
        raise UserError(_scrub(f"publishing to {repo_id} failed: {type(exc).__name__}: {exc}", token)) from None
    return plan


def _upload_staged(api, plan: UploadPlan, repo_id: str) -> None:
    """Upload a plan with generated files: stage links/copies plus the generated text, upload that."""
    with tempfile.TemporaryDirectory(prefix="kbench-publish-") as tmp:
        staging = Path(tmp)
        for rel in plan.files:
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if rel in plan.generated:
                content = plan.generated[rel]
                target.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
                continue
            try:
                os.link(plan.root / rel, target)  # no copy of large per-item tables when the filesystem allows
            except OSError:
                shutil.copy2(plan.root / rel, target)
        api.upload_folder(
            folder_path=staging,
            repo_id=repo_id,
            repo_type="dataset",
            allow_patterns=[glob.escape(f) for f in plan.files],
            commit_message=f"Upload {plan.artifact} with kbench",
        )
