"""Run every check on a model (and its agreement with `--against` models); write check.json.

    report = run_checks("smollm2-135m", against=["openai:http://127.0.0.1:8000/v1"], limit=50)
    report["failed"]  -> ["repeat"]          # the CLI exits 1 when a check failed

check.json (schema check.v1.json) holds the probe, the thresholds, the model's `describe()` block and
one record per check: name, group, verdict, evidence (the line the table prints), measured values.
The latest check of a model is also kept in the cache folder (`kbench.check.latest`), where
`kbench evaluate` and `kbench suite run` find it for the run's model block."""

from __future__ import annotations

import contextlib
import datetime
from pathlib import Path

from kbench.check.checks import (
    Thresholds,
    batch_check,
    capabilities_check,
    chat_check,
    comparison_check,
    greedy_argmax_check,
    logprobs_check,
    order_check,
    repeat_check,
    seed_check,
    verdict,
)
from kbench.check.latest import record_latest
from kbench.check.measure import compare, run_pass
from kbench.check.probe import probe_items
from kbench.errors import UserError

SCHEMA = "kbench.check.v1"
SCHEMA_FILE = "check.v1.json"


def open_unmemoized(name: str, dtype: str, device: str):
    """The model `name` names, opened as `kbench evaluate --model` opens it but without a result
    cache: a cached answer would make every repeat identical."""
    from kbench.models.cached import open_model
    from kbench.models.interface import ModelSpec
    from kbench.models.served.spec import backend_for

    backend = backend_for(name)
    options = {"dtype": dtype, "device": device} if backend == "hf" else {"dtype": dtype} if backend == "vllm" else {}
    return open_model(ModelSpec(name=name, backend=backend, use_cache=False, **options))


def run_checks(
    model: str,
    *,
    against: list[str] = (),
    dataset: Path | None = None,
    limit: int = 50,
    seed: int = 0,
    thresholds: Thresholds | None = None,
    dtype: str = "float32",
    device: str = "cpu",
) -> dict:
    """The check report of `model` (a `--model` argument), its agreement with each of `against`."""
    limits = thresholds or Thresholds()
    items, source = probe_items(dataset, limit, seed)
    with contextlib.ExitStack() as opened:
        main = open_unmemoized(model, dtype, device)
        opened.callback(main.close)
        checks, base = _own_checks(main, items, limits)
        for other_name in against:
            other = open_unmemoized(other_name, dtype, device)
            try:
                checks += _agreement(main, other, other_name, items, base, limits)
            finally:
                other.close()
        described, identity = main.describe(), main.info.identity
    report = {
        "schema": SCHEMA,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "model": model,
        "model_block": described,
        "against": list(against),
        "probe": {"source": source, "n": len(items), "seed": seed, "ids": [i.id for i in items]},
        "thresholds": vars(limits),
        "checks": checks,
        "failed": [c["name"] for c in checks if c["verdict"] == "fail"],
    }
    validate(report)
    record_latest(report, identity)
    return report


def _own_checks(model, items, limits: Thresholds) -> tuple[list[dict], object]:
    try:
        base, error = run_pass(model, items), None
    except UserError as exc:  # a request the backend claims to answer was refused
        base, error = None, str(exc)
    checks = [capabilities_check(model, base, error)]
    if base is None:
        return checks, None
    checks += [greedy_argmax_check(model, items, base, limits), logprobs_check(base, limits)]
    checks += [repeat_check(model, items, base, limits), batch_check(model, items, base, limits)]
    checks += [order_check(model, items, base, limits), seed_check(model, items, base)]
    checks.append(chat_check(model, items, base))
    return checks, base


def _agreement(main, other, name: str, items, base, limits: Thresholds) -> list[dict]:
    """`other`'s capabilities (a server behind `--against` may ignore `echo` too), then the probe through it,
    item by item against `main`: answers, ranks, log-probs."""
    check = f"agreement:{name}"
    try:
        theirs, error = run_pass(other, items), None
    except UserError as exc:
        theirs, error = None, str(exc)
    capabilities = {**capabilities_check(other, theirs, error), "name": f"capabilities:{name}"}
    if base is None or theirs is None:
        return [capabilities, verdict(check, "agreement", "skip", "a probe failed: see the capabilities lines")]
    what = f"{main.info.name} vs {other.info.name}"
    return [capabilities, comparison_check(check, "agreement", what, compare(base, theirs), limits.agreement_tolerance, limits)]


def write_report(report: dict, out: Path) -> Path:
    """check.json in `out` (written atomically; `run_checks` validated it against its schema)."""
    from kbench.io import write_json

    path = Path(out) / "check.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, report)
    return path


def validate(report: dict) -> None:
    from jsonschema import Draft202012Validator

    from kbench.io import load_schema

    error = next(Draft202012Validator(load_schema(SCHEMA_FILE)).iter_errors(report), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise ValueError(f"check.json does not match {SCHEMA_FILE} at {where or 'the top'}: {error.message}")


def print_table(report: dict) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"kbench check: {report['model']} ({report['probe']['n']} probe items)")
    for column in ("check", "group", "verdict", "evidence"):
        table.add_column(column, overflow="fold")
    colours = {"pass": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
    for c in report["checks"]:
        table.add_row(escape(c["name"]), c["group"], f"[{colours[c['verdict']]}]{c['verdict']}[/]", escape(c["evidence"]))
    console = Console()
    console.print(table)
    failed = report["failed"]
    console.print(f"failed: {', '.join(failed)}" if failed else "every check passed or warned", markup=False)
