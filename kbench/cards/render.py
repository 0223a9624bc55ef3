"""Render a dataset folder's README.md (its Hub data card) from a family template.

Contract of `write_card(DIR)`:
  * the family comes from `--family`, else the manifest's `card_family` (top level or in the
    recipe's [pipeline] table), else the recipe/dataset name and the detected sources;
  * the template is `data_cards/<family>.md`: YAML front matter (Hub metadata plus a `kbench:` block
    with default `sources` and papers to `cite`, removed from the output) and a markdown body whose
    `{{placeholders}}` are filled here from manifest.json, stats.json and the parquet splits
    (`{{drops}}`: what each step dropped, per fact source, `kbench.cards.drops`; `{{checks}}`: what
    the Wikidata checks ran against and whether LLM judges ran, `kbench.cards.checks`;
    `{{protocol}}`: the manifest's construction protocol block, `kbench.construct.protocol_section`);
  * `configs`, `license`, `size_categories` and `source_datasets` are computed, never copied from
    the template; the license is inherited from the sources and `--license` may only tighten it
    (see `kbench.cards.licenses`) unless forced;
  * the card is validated (`kbench.cards.validate`) before it replaces README.md.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from kbench.cards import licenses
from kbench.cards.checks import check_claims, render_checks
from kbench.cards.drops import render_drops
from kbench.cards.folder import DatasetFolder, ensure_file_hashes, load_folder
from kbench.cards.markdown import table as _table
from kbench.cards.validate import validate_card
from kbench.construct.protocol_section import render_protocol
from kbench.dataset import dataset_configs, dataset_infos
from kbench.errors import InputError, UserError
from kbench.io import write_text
from kbench.protocol import read_protocol
from kbench.sources.references import detect_sources, reference

FAMILIES = ("lama", "lama-binned", "maple-wiki", "left-textbook", "evolving")
_PLACEHOLDER = re.compile(r"{{\s*([a-z_]+)\s*}}")
_SIZE_BOUNDS = [
    (1_000, "n<1K"),
    (10_000, "1K<n<10K"),
    (100_000, "10K<n<100K"),
    (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"),
    (100_000_000, "10M<n<100M"),
    (1_000_000_000, "100M<n<1B"),
]
MAX_RELATION_ROWS = 60
SOURCE_PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"  # absent in a wheel install


def template_dir() -> Path:
    """The packaged `kbench/data_cards/` (the top-level `data_cards/` links there);
    `KBENCH_CARD_TEMPLATES` points elsewhere."""
    override = os.environ.get("KBENCH_CARD_TEMPLATES")
    return Path(override) if override else Path(__file__).resolve().parents[1] / "data_cards"


def split_front_matter(path: Path) -> tuple[dict[str, Any], str]:
    import yaml

    text = path.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n?(.*)$", text, re.S)
    if not match:
        raise InputError(path, "a card template starts with YAML front matter between '---' lines", line=1)
    try:
        meta = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise InputError(path, f"invalid YAML front matter: {exc}") from exc
    return meta, match.group(2)


def choose_family(folder: DatasetFolder, sources: list[str]) -> str:
    manifest = folder.manifest
    declared = manifest.get("card_family") or manifest.get("resolved", {}).get("pipeline", {}).get("card_family")
    if declared:
        return declared
    name = f"{manifest.get('dataset', '')} {manifest.get('recipe_file', '')}".lower()
    for family, markers in (
        ("evolving", ("evolv",)),
        ("left-textbook", ("left", "textbook", "openstax")),
        ("maple-wiki", ("maple", "rebel", "wiki")),
        ("lama-binned", ("binned",)),
        ("lama", ("lama", "trex", "google")),
    ):
        if any(m in name for m in markers):
            return _lama_family(folder) if family == "lama" else family
    for family, source in (("maple-wiki", "rebel"), ("left-textbook", "openstax"), ("lama", "lama")):
        if source in sources:
            return _lama_family(folder) if family == "lama" else family
    raise UserError(
        f"{folder.root}: cannot tell the dataset family from the manifest; pass --family "
        f"(one of {', '.join(FAMILIES)}) or set `card_family` in the manifest"
    )


def _lama_family(folder: DatasetFolder) -> str:
    """The `lama` card says every LAMA fact is there; a build that dropped rows is a derived benchmark."""
    dropped = any(stage.get("dropped_total") for stage in folder.stats.get("stages") or [])
    return "lama-binned" if dropped else "lama"


def size_category(rows: int) -> str:
    for bound, label in _SIZE_BOUNDS:
        if rows < bound:
            return label
    return "n>1B"


def _overview(folder: DatasetFolder) -> str:
    m = folder.manifest
    parts = [
        f"- **Dataset:** `{m.get('dataset', folder.root.name)}` version `{m.get('version', '?')}`",
        f"- **Rows:** {folder.rows():,} in {len(folder.splits)} split file(s)",
        f"- **Config hash:** `{m.get('config_hash', '?')}` (equal hashes mean identical recipe, code versions and inputs)",
    ]
    packages = m.get("packages") or {}
    if packages:
        parts.append("- **Built with:** " + ", ".join(f"{k} {v}" for k, v in sorted(packages.items())))
    return "\n".join(parts)


def _license_text(license_id: str, source_keys: list[str], chosen_by_user: bool) -> str:
    lines = [f"**{licenses.display_name(license_id)}** (`{license_id}`).", ""]
    if chosen_by_user:
        lines.append("The license was chosen when the card was written; the sources' own terms are listed below.")
    else:
        lines.append(
            "This license is inherited from the sources: a derived dataset keeps every condition of "
            "every source it was built from."
        )
    if licenses.NON_COMMERCIAL in licenses.CONDITIONS.get(license_id, frozenset()):
        lines.append("**Non-commercial use only.**")
    lines.append("")
    for key in source_keys:
        ref = reference(key)
        lines.append(f"- {ref.title}: {licenses.display_name(ref.license)}. {ref.note}".rstrip())
    return "\n".join(lines)


def _structure(folder: DatasetFolder) -> str:
    rows = [[s.config, s.split, f"`{s.path.as_posix()}`", f"{s.rows:,}"] for s in folder.splits]
    text = _table(["config", "split", "file", "rows"], rows)
    import pyarrow.parquet as pq

    schema = pq.read_schema(folder.root / folder.splits[0].path)
    cols = ", ".join(f"`{f.name}` ({f.type})" for f in schema)
    return f"{text}\n\nColumns: {cols}."


def _build_steps(folder: DatasetFolder) -> str:
    stages = folder.stats.get("stages") or []
    if not stages:
        return "No stage statistics were recorded (stats.json is missing or empty)."
    params = {s.get("id"): s.get("params", {}) for s in folder.manifest.get("resolved", {}).get("stages", [])}
    rows = []
    for s in stages:
        dropped = s.get("dropped") or {}
        reasons = "; ".join(f"{reason}: {n:,}" for reason, n in sorted(dropped.items(), key=lambda kv: -kv[1])) or "none"
        rows.append([f"`{s['id']}`", s.get("stage", ""), f"{s.get('rows_in', 0):,}", f"{s.get('rows_out', 0):,}", reasons])
    out = [
        _table(["step", "stage", "rows in", "rows out", "dropped (by reason)"], rows),
        "",
        "Parameters of each step (defaults filled in):",
        "",
    ]
    for s in stages:
        out.append(f"- `{s['id']}`: `{json.dumps(params.get(s['id'], {}), sort_keys=True, ensure_ascii=False)}`")
    if (folder.root / "rejected").is_dir():
        out += ["", "Every dropped row is kept with its reason in `rejected/<step>.parquet`."]
    return "\n".join(out)


def _distributions(folder: DatasetFolder) -> str:
    import polars as pl

    frames = [
        pl.read_parquet(folder.root / s.path).with_columns(pl.lit(f"{s.config}/{s.split}").alias("__split"))
        for s in folder.splits
    ]
    table = pl.concat(frames, how="diagonal_relaxed")
    split_names = list(dict.fromkeys(table["__split"].to_list()))
    out = []
    for column, title in (
        ("frequency_bin", "Frequency bins"),
        ("domain", "Domains"),
        ("source", "Fact sources"),
        ("book", "Books"),
        ("label", "Labels (true / false)"),
    ):
        if column in table.columns and table[column].null_count() < table.height:
            out += [f"### {title}", "", _crosstab(table, [column], split_names), ""]
    if "relation" in table.columns:
        keys = ["relation"] + (["relation_label"] if "relation_label" in table.columns else [])
        n_rel = table["relation"].n_unique()
        out += [f"### Relations ({n_rel})", "", _crosstab(table, keys, split_names, limit=MAX_RELATION_ROWS), ""]
    return "\n".join(out).strip() or "The splits have no relation, frequency-bin or domain columns."


def _crosstab(table, keys: list[str], split_names: list[str], limit: int | None = None) -> str:
    import polars as pl

    counts = table.group_by(keys + ["__split"]).len()
    wide = counts.pivot(on="__split", index=keys, values="len").fill_null(0)
    present = [s for s in split_names if s in wide.columns]
    wide = wide.with_columns(pl.sum_horizontal(present).alias("total")).sort(
        ["total"] + keys, descending=[True] + [False] * len(keys)
    )
    shown = wide if limit is None else wide.head(limit)
    rows = [
        [r[k] if r[k] is not None else "(none)" for k in keys] + [f"{r[s]:,}" for s in present] + [f"{r['total']:,}"]
        for r in shown.iter_rows(named=True)
    ]
    text = _table(keys + present + ["total"], rows)
    if limit is not None and wide.height > limit:
        text += f"\n\n… and {wide.height - limit} more (see the parquet files)."
    return text


def _rebuild(folder: DatasetFolder) -> str:
    recipe_file = folder.manifest.get("recipe_file", "RECIPE.toml")
    command = folder.manifest.get("command") or f"kbench build {recipe_file}"
    if (SOURCE_PIPELINES / recipe_file).is_file():  # a recipe of kbench's own source tree
        command = command.replace(f"kbench build {recipe_file}", f"kbench build pipelines/{recipe_file}", 1)
    if "--out" not in command:
        command += f" --out {folder.root.name}"
    return "\n".join(
        [
            "```bash",
            command,
            f"kbench card {folder.root.name}",
            "```",
            "",
            "The recipe with every `--set` override applied is recorded in `manifest.json` (`recipe`, and "
            "`resolved` with defaults filled in), together with the sha256 of every input file. A rebuild that "
            "reports the same config hash reproduces these splits.",
        ]
    )


def _files(folder: DatasetFolder) -> str:
    recorded = folder.manifest.get("files", {})
    rows = [[f"`{rel}`", f"{info.get('bytes', 0):,}", f"`{info.get('sha256', '')}`"] for rel, info in sorted(recorded.items())]
    return (
        _table(["file", "bytes", "sha256"], rows) + "\n\nThe same list is in `manifest.json` (`files`); "
        "`kbench publish` refuses a folder whose files no longer match it."
    )


def _citations(keys: list[str]) -> str:
    return "\n\n".join(f"{reference(k).title}:\n\n```bibtex\n{reference(k).bibtex}\n```" for k in keys)


def render_card(folder: DatasetFolder, *, family: str | None = None, license_id: str | None = None, force: bool = False) -> str:
    import yaml

    detected = detect_sources([i.get("path", "") for i in folder.manifest.get("inputs", [])])
    family = family or choose_family(folder, detected)
    path = template_dir() / f"{family}.md"
    if not path.is_file():
        raise UserError(f"no card template for family {family!r} at {path}; families: {', '.join(FAMILIES)}")
    meta, body = split_front_matter(path)
    kb = meta.pop("kbench", {}) or {}
    source_keys = list(dict.fromkeys([*(kb.get("sources") or []), *detected]))
    cite_keys = list(dict.fromkeys([*(kb.get("cite") or []), *source_keys]))
    source_licenses = [reference(k).license for k in source_keys if reference(k).license]
    if license_id:
        licenses.check_license_choice(license_id, source_licenses, force=force)
    chosen = license_id or licenses.inherited_license(source_licenses)

    meta.update(
        {
            "license": chosen,
            "size_categories": [size_category(folder.rows())],
            "source_datasets": [reference(k).hub_source for k in source_keys if reference(k).hub_source] or ["original"],
            "configs": dataset_configs(folder.root),  # the same rules write_dataset uses
            "dataset_info": dataset_infos(folder.root),  # keeps datasets' folder cache honest after rebuilds
        }
    )
    fills = {
        "title": f"{folder.manifest.get('dataset', folder.root.name)} {folder.manifest.get('version', '')}".strip(),
        "checks": render_checks(folder, family),
        "protocol": render_protocol(read_protocol(folder.manifest, str(folder.root / "manifest.json"))),
        "overview": _overview(folder),
        "license": _license_text(chosen, source_keys, chosen_by_user=bool(license_id)),
        "structure": _structure(folder),
        "build": _build_steps(folder),
        "drops": render_drops(folder),
        "distributions": _distributions(folder),
        "rebuild": _rebuild(folder),
        "files": _files(folder),
        "citations": _citations(cite_keys),
    }

    def fill(match: re.Match) -> str:
        if match.group(1) not in fills:
            raise InputError(path, f"unknown placeholder {{{{{match.group(1)}}}}}; known: {', '.join(fills)}")
        return fills[match.group(1)]

    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    text = f"---\n{front}---\n\n{_PLACEHOLDER.sub(fill, body).strip()}\n"
    check_claims(text, folder)
    return text


def write_card(root: str | Path, *, family: str | None = None, license_id: str | None = None, force: bool = False) -> Path:
    """Render, validate and atomically write DIR/README.md; returns its path."""
    from kbench.dataset import run_lock

    if not (Path(root) / "manifest.json").is_file():
        load_folder(root)  # raises the precise error (no folder, no manifest) before any lock file is made
    with run_lock(Path(root)):  # a build writing this folder at the same time would race the manifest
        folder = load_folder(root)
        ensure_file_hashes(folder)  # the card lists the checksums, so they must exist and match first
        text = render_card(folder, family=family, license_id=license_id, force=force)
        validate_card(text, folder.root)
        target = folder.root / "README.md"
        write_text(target, text)
    return target
