"""The item explorer: its rows and columns for every task, and the page itself in a real headless
Chromium (Debian's `chromium`; the browser tests skip only when it is not installed).

Chromium is driven without extra dependencies: `--dump-dom` returns the DOM after the page's
script ran (the filters are given in the URL hash, as a reader's link would), `#status` carries
the counts, and `--enable-logging=stderr` prints every console message and uncaught exception as
an `INFO:CONSOLE` line."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from kbench.report.build import build_report
from kbench.report.explorer import explorer_data
from kbench.report.items import attach_relation_labels, dataset_rows, read_items
from kbench.report.runs import load_runs
from tests.report_runs import extraction_run, lama_items, predict, relation_labels

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "results_v1"


def _kee_run_with_dataset(tmp_path: Path) -> Path:
    """The golden v1 KEE run, its results.json pointing at a dataset split that has the questions."""
    import polars as pl

    run = tmp_path / "kee"
    shutil.copytree(GOLDEN / "kee", run)
    split = tmp_path / "maple" / "data" / "default" / "test.parquet"
    split.parent.mkdir(parents=True)
    ids = sorted({json.loads(line)["item_id"] for line in (run / "items.jsonl").read_text().splitlines()})
    pl.DataFrame([{"id": i, "relation": "P36", "relation_label": "capital", "subject": f"subject {i}",
                   "question": f"question {i}?", "answers": [f"gold {i}", f"alias {i}"]} for i in ids]).write_parquet(split)
    results = json.loads((run / "results.json").read_text())
    results["dataset"]["file"] = str(split)
    (run / "results.json").write_text(json.dumps(results))
    return run


def _data(run_dir: Path, relations_file: Path | None = None) -> dict:
    (run,) = load_runs([run_dir])
    items, dataset = read_items(run.path), dataset_rows(run)
    attach_relation_labels(run, items, dataset, relations_file)
    return explorer_data(run, items, dataset)


def test_extraction_columns_in_reading_order_then_the_rest(shared_data, tmp_path):
    data = _data(extraction_run(tmp_path / "a", "model-a", predict(lama_items(shared_data, 30), 3)))
    keys = [c["key"] for c in data["columns"]]
    assert keys == ["id", "relation", "subject", "prompt", "prediction", "answers", "object", "correct", "exact",
                    "gold_rank", "frequency_bin", "gold_logprob"]
    assert len(data["rows"]) == 30 and data["bins"] == ["head", "torso", "tail"]
    assert data["relations"]["P101"] == "field of work"


def test_kee_items_side_by_side_with_question_and_gold_from_the_dataset(tmp_path):
    data = _data(_kee_run_with_dataset(tmp_path))
    keys = [c["key"] for c in data["columns"]]
    assert keys == ["id", "relation", "subject", "question", "answers", "frequency_bin", "baseline", "temp0.7", "decore",
                    "partition@0.7", "partition@1.2"]
    assert data["techniques"] == ["baseline", "temp0.7", "decore"] and len(data["rows"]) == 7
    row = dict(zip(keys, data["rows"][0]))
    assert row["question"] == "question f0?" and row["answers"] == ["gold f0", "alias f0"]
    answer, correct, rank = row["baseline"]
    assert isinstance(answer, str) and correct is False and rank > 1
    assert re.fullmatch(r"\d/4 correct", row["partition@0.7"])   # sweep_max = 4 samples
    assert data["relations"] == {"P36": "capital"} and "the dataset split" in data["labels_source"]


def test_other_tasks_show_their_columns_generically():
    data = _data(GOLDEN / "truefalse")
    keys = [c["key"] for c in data["columns"]]
    assert keys[:4] == ["id", "statement", "prompt", "label"] and "margin" in keys and "pair_id" in keys
    qa = _data(GOLDEN / "qa")
    assert [c["key"] for c in qa["columns"]][-1] == "correct"   # derived from the EM that counts


def _chromium() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


needs_chromium = pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install -y chromium)")


def _chromium_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'chromium-profile'}", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=180, check=False)


def _open(tmp_path: Path, page: Path, hash_: str = "") -> tuple[dict, str, list[str]]:
    """(status counts, the table body's HTML, console lines) of `page` after its script ran."""
    done = _chromium_run(tmp_path, "--dump-dom", page.as_uri() + hash_)
    status = re.search(r'<p id="status" data-total="(\d+)" data-shown="(\d+)" data-page-rows="(\d+)"', done.stdout)
    assert status, f"no #status in the DOM; stderr: {done.stderr[-2000:]}"
    body = re.search(r"<tbody>(.*?)</tbody>", done.stdout, re.S)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return dict(zip(("total", "shown", "page_rows"), map(int, status.groups()))), body.group(1) if body else "", console


@needs_chromium
def test_console_errors_are_seen(tmp_path):
    """The check below is not vacuous: a page with an error does print CONSOLE lines."""
    page = tmp_path / "broken.html"
    page.write_text("<html><body><p id='status' data-total='0' data-shown='0' data-page-rows='0'></p>"
                    "<script>console.error('boom'); missing();</script></body></html>")
    _, _, console = _open(tmp_path, page)
    assert any("boom" in line for line in console) and any("missing is not defined" in line for line in console)


@needs_chromium
def test_explorer_of_a_300_item_run_in_headless_chromium(shared_data, tmp_path):
    items = predict(lama_items(shared_data, 300), 4)
    items[1]["prediction"] = "</script><img src=x onerror=\"console.error('injected')\">"  # item text is only text
    run = extraction_run(tmp_path / "run", "model-a", items)
    index = build_report([run], tmp_path / "report")
    explorer = index.parent / "explorer-1.html"
    labels = relation_labels(shared_data)

    counts, body, console = _open(tmp_path, explorer)
    assert counts == {"total": 300, "shown": 300, "page_rows": 50}   # 300 listed, 50 per page
    assert body.count("<tr>") == 50 and console == []
    assert f'<span class="rel-label"> · {labels["P101"]}</span>' in body
    assert "&lt;/script&gt;&lt;img src=x" in body and "<img" not in body

    counts, body, console = _open(tmp_path, explorer, "#relation=P106")
    expected = sum(i["relation"] == "P106" for i in items)
    assert counts["shown"] == expected == 50 and "P108" not in body and console == []
    counts, _, _ = _open(tmp_path, explorer, "#relation=P106&correct=no")
    assert counts["shown"] == sum(i["relation"] == "P106" and not i["correct"] for i in items) < expected
    counts, body, _ = _open(tmp_path, explorer, "#q=" + items[7]["subject"].replace(" ", "%20"))
    assert 1 <= counts["shown"] < 300 and items[7]["subject"] in body
    counts, _, _ = _open(tmp_path, explorer, "#bin=tail&page=2")
    assert counts == {"total": 300, "shown": 100, "page_rows": 50}

    shot = tmp_path / "explorer.png"
    _chromium_run(tmp_path, "--window-size=1400,1000", f"--screenshot={shot}", explorer.as_uri() + "#relation=P101")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (1400, 1000)
    assert len(data) > 30_000   # a blank page compresses to a few KB; a table of items does not
    index_shot = tmp_path / "index.png"
    _chromium_run(tmp_path, "--window-size=1200,2400", f"--screenshot={index_shot}", index.as_uri())
    assert index_shot.stat().st_size > 30_000


@needs_chromium
def test_kee_explorer_and_10000_items_stay_one_page_of_rows(shared_data, tmp_path):
    kee = _kee_run_with_dataset(tmp_path)
    index = build_report([kee], tmp_path / "kee-report")
    counts, body, console = _open(tmp_path, index.parent / "explorer-1.html", "#technique=temp0.7&correct=fixed")
    assert counts["total"] == 7 and counts["shown"] == 1 and console == []   # temp0.7 fixes one baseline failure
    assert "question f" in body and "rank" in body

    big = extraction_run(tmp_path / "big", "model-a", predict(lama_items(shared_data, 10_000, relations=28), 3))
    index = build_report([big], tmp_path / "big-report")
    counts, body, console = _open(tmp_path, index.parent / "explorer-1.html", "#page=200")
    assert counts == {"total": 10_000, "shown": 10_000, "page_rows": 50} and console == []
    assert "test-9950" in body and "test-9949" not in body
