"""Through the real CLI (a subprocess, exit codes and stderr as a user sees them); builders shared with `tests/unit/test_report_compare.py`."""

from __future__ import annotations

import pytest
from conftest import run_kbench
from kbench.errors import UserError
from kbench.report.build import build_report
from tests.report_runs import extraction_run, lama_items, predict


def test_runs_over_disjoint_items_are_refused(shared_data, tmp_path):
    items = lama_items(shared_data, 200)
    a = extraction_run(tmp_path / "a", "model-a", predict(items[:100], 3))
    b = extraction_run(tmp_path / "b", "model-b", predict(items[100:], 2))
    with pytest.raises(UserError, match="share no item .* model-a: 100 items, model-b: 100 items"):
        build_report([a, b], tmp_path / "report")
    assert not (tmp_path / "report").exists()   # refused before anything is written
    out = run_kbench("report", str(a), str(b), "--out", str(tmp_path / "cli"))
    assert out.returncode == 2 and "cannot be compared" in out.stderr and "Traceback" not in out.stderr
