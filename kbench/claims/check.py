"""claims.md's provenance, and `kbench claims DIR --check FILE.md`: does this suite reproduce the
numbers of a claims.md? Sampling is seeded, so a rerun of the same suite must match exactly.

A claims.md is read back with `parse_claims`: every table row (claim, model, task / dataset ->
difference, n, p, p Holm, verdict, n to decide; a reading's row names its model "MODEL · reading NAME", a
model outside the claim's scope or without its setting has dashes and that verdict) and every "Across
models" line. The provenance section (command,
commit, date, machine, models) is what differs between two runs of one suite, and is not compared.
"""

from __future__ import annotations

import datetime
import platform
import re
import shlex
from pathlib import Path

from kbench.errors import UserError

PROVENANCE = "## Provenance"
_HEADING = re.compile(r"^### (.+?): ")
_ACROSS = re.compile(r"^Across models, (.+?): (.+)\.$")


def provenance(document: dict, folder: Path, destination: Path, sets: list[str]) -> list[str]:
    """The lines of claims.md's provenance: the commands that rebuild it (no path of this machine),
    kbench's commit, the date, the machine and each model's weights (sha256 or revision) from
    suite.json's model table."""
    from kbench.models.provenance import _device_name, _git_commit

    lines = [
        PROVENANCE,
        "",
        f"- command: {rerun(document, folder, destination, sets)}",
        f"- kbench commit: {_git_commit() or 'not a source checkout'}",
        f"- date: {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {_device_name('cpu')}, {platform.platform()}",
    ]
    for label, row in sorted(document.get("models", {}).items()):
        weights = f"sha256 {row['sha256']}" if row.get("sha256") else f"revision {row.get('revision') or 'not recorded'}"
        lines.append(f"- model {label}: {row.get('model')}, {weights}")
    return [*lines, ""]


def _portable(path: Path, elsewhere: str) -> str:
    """`path` relative to the working folder when it lies inside it, else `elsewhere` (a folder
    outside says nothing to another machine)."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return elsewhere


def rerun(document: dict, folder: Path, destination: Path, sets: list[str]) -> str:
    """`kbench suite run SUITE --out DIR`, then `kbench claims DIR ...`: SUITE is the packaged suite's
    name when suite.json records that suite unchanged, else a suite file with the suite.json's suite."""
    from kbench.suite.spec import load_suite, packaged_suites

    name = document["suite"]["suite"]["name"]
    packaged = name in packaged_suites() and load_suite(packaged_suites()[name]).document() == document["suite"]
    suite = name if packaged else f"{name}.toml"
    where = _portable(folder, f"runs/{name}")
    options = "".join(f" --set {shlex.quote(s)}" for s in sets)
    out = _portable(destination, Path(destination).name)
    claims = f"kbench claims {shlex.quote(where)}{options} --out {shlex.quote(out)}"
    text = f"`kbench suite run {shlex.quote(suite)} --out {shlex.quote(where)}`, then `{claims}`"
    return text if packaged else f"{text} ({suite}: the suite that suite.json records, as a suite file)"


def parse_claims(text: str, where: str = "claims.md") -> dict[str, str]:
    """{"CLAIM | model | task / dataset": "difference | n | p | p Holm | verdict | n to decide | test", "CLAIM | across |
    column": verdict}: the numbers of a claims.md. A UserError for a file in another format."""
    if not text.startswith("# Claims tested on suite "):
        raise UserError(f"{where}: not a claims.md written by `kbench claims` (its first line)")
    found: dict[str, str] = {}
    claim = None
    for number, line in enumerate(text.splitlines(), 1):
        heading = _HEADING.match(line)
        if heading:
            claim = heading.group(1)
            continue
        across = _ACROSS.match(line)
        if across and claim:
            found[f"{claim} | across | {across.group(1)}"] = across.group(2)
            continue
        if claim and line.startswith("| ") and not line.startswith(("| model ", "|---")):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) not in (8, 9):  # 8: a claims.md from before the "n to decide" column
                raise UserError(f"{where}:{number}: a table row with {len(cells)} columns, not 9")
            found[f"{claim} | {cells[0]} | {cells[1]}"] = " | ".join(cells[2:])
    return found


def compare(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    """The differences, one line each (empty: the run reproduces the file)."""
    lines = []
    for key in sorted(set(expected) | set(actual)):
        if expected.get(key) != actual.get(key):
            lines.append(f"{key}: file {expected.get(key, '(absent)')!s}, this run {actual.get(key, '(absent)')!s}")
    return lines
