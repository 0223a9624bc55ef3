"""Through the real CLI (a subprocess, exit codes and stderr as a user sees them); builders shared with `tests/unit/test_report.py`."""

from __future__ import annotations

import json
import shutil
from conftest import run_kbench
from tests.report_runs import extraction_run, lama_items, predict


def test_cli_report_and_its_errors(shared_data, tmp_path):
    run = extraction_run(tmp_path / "ext", "model-a", predict(lama_items(shared_data, 30), 3))
    out = run_kbench("report", str(run), "--out", str(tmp_path / "report"))
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == [
        "explorer-1.html", "index.html", "per_frequency_bin.png", "per_relation.png"]
    missing = run_kbench("report", str(tmp_path / "nope"), "--out", str(tmp_path / "r2"))
    assert missing.returncode == 2 and "not a run directory" in missing.stderr and "Traceback" not in missing.stderr
    bad = tmp_path / "bad"
    shutil.copytree(run, bad)
    (bad / "results.json").write_text(json.dumps({"schema": "whatever"}))
    out = run_kbench("report", str(bad), "--out", str(tmp_path / "r3"))
    assert out.returncode == 2 and "unknown results schema" in out.stderr and "Traceback" not in out.stderr
