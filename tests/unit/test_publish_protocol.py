"""`kbench publish RUN` carries the run's protocol block (docs/protocol.md): results.json goes up
unchanged, the generated card and the bundled HTML report show the block; an older run shows
"protocol not recorded"; a malformed block refuses the upload before anything is planned."""

from __future__ import annotations

import json

import pytest

from kbench.cards.publish import plan_upload
from kbench.errors import UserError
from kbench.protocol import REFERENCES, Deviation, ProtocolRecord
from tests.report_runs import extraction_run, lama_items, predict

LIMIT = Deviation("sample-limit", "evaluates every item", "a seeded sample of 30 of the 300 items", "every number")


def _run(tmp_path, shared_data, block):
    run = extraction_run(tmp_path / "run", "model-a", predict(lama_items(shared_data, 30), 3))
    results = json.loads((run / "results.json").read_text())
    if block is not None:
        results["protocol"] = block
    (run / "results.json").write_text(json.dumps(results))
    return run


def test_the_card_and_report_show_the_block_and_results_keep_it(shared_data, tmp_path):
    block = ProtocolRecord("maple-extraction", REFERENCES["maple"], (LIMIT,)).block()
    run = _run(tmp_path, shared_data, block)
    plan = plan_upload(run)
    assert "results.json" in plan.files and "results.json" not in plan.generated  # uploaded as it is on disk
    assert json.loads((run / "results.json").read_text())["protocol"] == block
    card = plan.generated["README.md"]
    assert "## Protocol" in card and "**1 deviation from maple-extraction**" in card
    assert "| sample-limit | evaluates every item | a seeded sample of 30 of the 300 items | every number |" in card
    assert b"1 deviation from maple-extraction" in plan.generated["report/index.html"]


def test_an_older_run_is_not_recorded_and_a_malformed_block_refuses(shared_data, tmp_path):
    card = plan_upload(_run(tmp_path / "old", shared_data, None)).generated["README.md"]
    assert "Protocol not recorded" in card and "faithful to" not in card
    with pytest.raises(UserError, match=r"results.json: protocol.name is missing"):
        plan_upload(_run(tmp_path / "bad", shared_data, {**ProtocolRecord("x", "y").block(), "name": ""}))
