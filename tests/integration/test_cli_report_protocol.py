"""`kbench report` and the protocol block through the real CLI: the terminal names each run's
protocol and what makes a comparison not like for like; a malformed block exits 2 with one line
naming the file and the key, and leaves --out as it was."""

from __future__ import annotations

import json

from conftest import run_kbench
from kbench.protocol import REFERENCES, Deviation, ProtocolRecord
from tests.report_runs import extraction_run, lama_items, predict

FEWSHOT = Deviation("fewshot", "asks each fact zero-shot", "1 solved example before each item", "every reported number")


def _run(tmp_path, shared_data, name, block, every=3):
    run = extraction_run(tmp_path / name, name, predict(lama_items(shared_data, 30), every))
    results = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**results, "protocol": block}))
    return run


def test_terminal_protocols_and_a_malformed_block(shared_data, tmp_path):
    maple = ProtocolRecord("maple-extraction", REFERENCES["maple"])
    a = _run(tmp_path, shared_data, "a", maple.block())
    b = _run(tmp_path, shared_data, "b", maple.with_deviations([FEWSHOT]).block(), every=2)
    out = run_kbench("report", str(a), str(b), "--out", str(tmp_path / "report"))
    assert out.returncode == 0, out.stderr
    assert "a (extraction): faithful to maple-extraction" in out.stdout
    assert "b (extraction): 1 deviation from maple-extraction" in out.stdout
    assert "  - fewshot: 1 solved example before each item (touches every reported number)" in out.stdout
    assert "warning: the extraction comparison is not like for like" in out.stdout
    assert "fewshot differs between the runs" in out.stdout

    before = {p.name: p.read_bytes() for p in (tmp_path / "report").iterdir()}
    broken = {**maple.block(), "faithful": "yes"}
    c = _run(tmp_path, shared_data, "c", broken)
    out = run_kbench("report", str(a), str(c), "--out", str(tmp_path / "report"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    error = [line for line in out.stderr.splitlines() if "protocol" in line]
    assert len(error) == 1 and str(c / "results.json") in error[0] and "protocol.faithful" in error[0]
    assert {p.name: p.read_bytes() for p in (tmp_path / "report").iterdir()} == before  # nothing overwritten
