"""The item explorer: its rows and columns for every task, and the page itself in a real headless
Chromium (Debian's `chromium`; the browser tests skip only when it is not installed), driven
through the DevTools protocol over a pipe (tests/cdp.py, no extra dependency): the tests pick
filters and type searches as a reader would, read the counts the page keeps on `#status`, collect
every console message and uncaught exception, and take screenshots into the test's tmp folder."""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import pytest

from kbench.report.build import build_report
from kbench.report.explorer import explorer_data
from kbench.report.items import attach_relation_labels, dataset_rows, read_items
from kbench.report.runs import load_runs
from tests.cdp import Browser
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


@pytest.fixture()
def browser(tmp_path):
    with Browser(_chromium(), tmp_path / "chromium-profile") as b:
        yield b


def _counts(page) -> dict:
    return page.evaluate("Object.assign({}, document.getElementById('status').dataset)")


def _choose(page, control: str, value: str) -> None:
    """What a reader does: pick a value in a filter (or type into the search box)."""
    event = "input" if control == "q" else "change"
    page.evaluate(f"(() => {{ const box = document.getElementById('f-{control}'); box.value = {json.dumps(value)};"
                  f" box.dispatchEvent(new Event('{event}')); }})()")


def _body(page) -> str:
    return page.evaluate("document.querySelector('#items tbody').innerHTML")


@needs_chromium
def test_console_errors_are_seen(browser, tmp_path):
    """The console checks below are not vacuous: a page with an error is caught."""
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>console.error('boom'); missing();</script></body></html>")
    browser.open(page.as_uri())
    assert browser.console[0] == "error: boom" and "missing is not defined" in browser.console[1]


@needs_chromium
def test_explorer_of_a_300_item_run_in_headless_chromium(shared_data, tmp_path, browser):
    items = predict(lama_items(shared_data, 300), 4)
    items[1]["prediction"] = "</script><img src=x onerror=\"console.error('injected')\">"  # item text is only text
    run = extraction_run(tmp_path / "run", "model-a", items)
    index = build_report([run], tmp_path / "report")
    explorer = index.parent / "explorer-1.html"
    labels = relation_labels(shared_data)

    page = browser.open(explorer.as_uri())
    assert _counts(page) == {"total": "300", "shown": "300", "pageRows": "50"}   # 300 listed, 50 per page
    body = _body(page)
    assert body.count("<tr>") == 50 and f'<span class="rel-label"> · {labels["P101"]}</span>' in body
    assert "&lt;/script&gt;&lt;img src=x" in body and "<img" not in body

    _choose(page, "relation", "P106")
    expected = sum(i["relation"] == "P106" for i in items)
    assert _counts(page)["shown"] == str(expected) == "50" and "P108" not in _body(page)
    _choose(page, "correct", "no")
    assert int(_counts(page)["shown"]) == sum(i["relation"] == "P106" and not i["correct"] for i in items) < expected
    assert page.evaluate("location.hash") == "#relation=P106&correct=no"   # the view can be linked
    _choose(page, "relation", "")
    _choose(page, "correct", "")
    _choose(page, "q", items[7]["subject"])
    assert 1 <= int(_counts(page)["shown"]) < 300 and items[7]["subject"] in _body(page)
    page.screenshot(tmp_path / "explorer-search.png")

    linked = browser.open(explorer.as_uri() + "#bin=tail&page=2")   # a link opens the same view
    assert _counts(linked) == {"total": "300", "shown": "100", "pageRows": "50"}
    assert linked.evaluate("document.getElementById('f-bin').value") == "tail"
    linked.evaluate("document.querySelectorAll('#pager button')[1].click()")   # '‹ prev'
    assert "page 1 of 2" in linked.evaluate("document.getElementById('pager').textContent")
    _choose(linked, "relation", "P106")   # every P106 item of this run is in the tail bin
    assert _counts(linked)["shown"] == "50"
    shot = tmp_path / "explorer.png"
    linked.screenshot(shot)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24])[0] == 1400
    assert len(data) > 30_000   # a blank page compresses to a few KB; a table of items does not
    report = browser.open(index.as_uri())
    assert report.evaluate("document.images.length") == 2 and report.evaluate(
        "Array.from(document.images).every(i => i.complete && i.naturalWidth > 300)")   # the charts load from disk
    report.screenshot(tmp_path / "index.png")
    assert browser.console == []


@needs_chromium
def test_kee_explorer_and_10000_items_stay_one_page_of_rows(shared_data, tmp_path, browser):
    kee = _kee_run_with_dataset(tmp_path)
    index = build_report([kee], tmp_path / "kee-report")
    page = browser.open((index.parent / "explorer-1.html").as_uri())
    _choose(page, "technique", "temp0.7")
    _choose(page, "correct", "fixed")
    assert _counts(page) == {"total": "7", "shown": "1", "pageRows": "1"}   # temp0.7 fixes one baseline failure
    assert "question f" in _body(page) and "rank" in _body(page)

    big = extraction_run(tmp_path / "big", "model-a", predict(lama_items(shared_data, 10_000, relations=28), 3))
    index = build_report([big], tmp_path / "big-report")
    page = browser.open((index.parent / "explorer-1.html").as_uri() + "#page=200")
    assert _counts(page) == {"total": "10000", "shown": "10000", "pageRows": "50"}
    assert "test-9950" in _body(page) and "test-9949" not in _body(page)
    assert page.evaluate("document.querySelectorAll('#items tbody tr').length") == 50
    assert browser.console == []
