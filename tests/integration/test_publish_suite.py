"""`kbench publish SUITE_DIR` against the local Hub stand-in (tests/servers/hub.py): the leaderboard
as a dataset (leaderboard.parquet, the card's default config), the suite report, suite.json and
claims.md, and every finished cell's results and per-item rows; nothing else leaves the machine."""

from __future__ import annotations

import io
import json

import polars as pl

from kbench.metrics.uncertainty import proportion
from tests.conftest import run_kbench
from tests.integration.test_claims_papers import constructed_suite


def test_publish_a_suite_as_a_leaderboard_dataset(hub, tmp_path):
    fake, env = hub
    folder = constructed_suite(tmp_path / "suite")
    document = json.loads((folder / "suite.json").read_text())
    document["cells"]["m0__kee__data"]["headline"] = {"accuracy": proportion(50, 100)}
    document["cells"]["m1__kee__data"].update(status="failed", error="OSError: model did not open")
    (folder / "suite.json").write_text(json.dumps(document))
    (folder / "cells" / "m0__kee__data" / "journal.jsonl").write_text("{}\n")  # the resume journal stays local
    assert run_kbench("claims", str(folder), "--set", "maple").returncode == 0

    dry = run_kbench("publish", str(folder), "--repo-id", "someone/suite", "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    out = run_kbench("publish", str(folder), "--repo-id", "someone/suite", env=env)
    assert out.returncode == 0, out.stderr
    uploaded = fake.committed_files()
    assert sorted(uploaded) == [line.removesuffix(" (generated)") for line in dry.stdout.split("\n") if line]
    assert {"README.md", "leaderboard.parquet", "suite.json", "claims.md", "report/index.html"} <= set(uploaded)
    assert "cells/m0__kee__data/items.parquet" in uploaded and "cells/m0__kee__data/results.json" in uploaded
    assert not any("m1__kee__data" in p or "journal" in p for p in uploaded)  # a failed cell has no results to send
    board = pl.read_parquet(io.BytesIO(uploaded["leaderboard.parquet"]))
    first = board.filter(pl.col("cell") == "m0__kee__data").row(0, named=True)
    assert (first["metric"], first["value"], first["n"]) == ("accuracy", 0.5, 100) and first["ci_low"] < 0.5
    failed = board.filter(pl.col("cell") == "m1__kee__data").row(0, named=True)
    assert failed["status"] == "failed" and failed["error"] == "OSError: model did not open" and failed["value"] is None
    card = uploaded["README.md"].decode()
    assert "config_name: leaderboard" in card and "default: true" in card and "path: cells/m0__kee__data/items.parquet" in card
    assert b"leaderboard" in uploaded["report/index.html"]
    fake.assert_token_only_in_authorization()
