"""Through the real CLI (a subprocess, exit codes and stderr as a user sees them); builders shared with `tests/unit/test_report_standardize.py`."""

from __future__ import annotations

import json
import pytest
from kbench.errors import UserError
from kbench.report.standardize import standardize_runs
from tests.conftest import run_kbench
from tests.unit.test_report_standardize import _run, _truefalse


def test_ambiguous_runs_and_cli(tmp_path):
    one = _run(tmp_path, "one", _truefalse("a", "prior", 0.5))
    two = _run(tmp_path, "two", _truefalse("a", "prior", 0.6))
    with pytest.raises(UserError, match="both give"):
        standardize_runs([one, two], tmp_path / "x")
    other = _run(tmp_path, "three", _truefalse("a", "open-book", 0.9))
    other_results = json.loads((other / "results.json").read_text())
    other_results["settings"]["retriever"] = "gold"
    (other / "results.json").write_text(json.dumps(other_results))
    proc = run_kbench("report", "standardize", str(one), str(other), "--out", str(tmp_path / "cli"))
    assert proc.returncode == 0, proc.stderr
    tasks = json.loads((tmp_path / "cli" / "standardized.json").read_text())["tasks"]
    assert tasks == ["truefalse:open-book-gold:dev:accuracy", "truefalse:prior:dev:accuracy"]
    bad = run_kbench("report", "standardize", str(one), str(tmp_path / "missing"), "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
