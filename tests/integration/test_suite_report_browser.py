"""The suite report in headless Chromium (tests/cdp.py, as the run report's browser tests): the
leaderboard sorts on a click, both charts load as images, and the pairwise table is there, with no
console error."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cdp import Browser
from tests.conftest import run_kbench
from tests.integration.test_claims_cli import constructed_suite


def _chromium() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install -y chromium)")
def test_the_suite_report_in_a_headless_browser(tmp_path):
    folder = constructed_suite(tmp_path / "suite", models=3, tasks=("extraction",))
    document = json.loads((folder / "suite.json").read_text())
    document["models"] = {f"m{i}": {"model": f"org/m{i}", "parameters": 10 ** (6 + i), "family": "llama"} for i in range(3)}
    for key, cell in document["cells"].items():
        cell["headline"] = json.loads((folder / cell["run_dir"] / "results.json").read_text())["headline"]
    (folder / "suite.json").write_text(json.dumps(document))
    done = run_kbench("report", str(folder), "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr

    with Browser(_chromium(), tmp_path / "chromium-profile") as browser:
        page = browser.open((tmp_path / "report" / "index.html").as_uri())
        rows = "[...document.querySelectorAll('#leaderboard tbody tr')].map(r => r.cells[0].textContent)"
        assert page.evaluate(rows) == ["m0", "m1", "m2"]
        first_value = "document.querySelectorAll('#leaderboard thead th')[1]"
        page.evaluate(f"{first_value}.click()")  # sort by the column's headline, ascending
        assert page.evaluate(rows) == ["m2", "m1", "m0"]  # head accuracy 0.70, 0.75, 0.80
        images = page.evaluate(
            "[...document.images].map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])"
        )
        assert sorted(images) == [["popularity.png", True], ["scaling.png", True]]
        assert page.evaluate("document.querySelectorAll('table.pairs tbody tr').length") == 3  # 3 pairs of 3 models
        heading = "[...document.querySelectorAll('h2')].map(h => h.textContent)"
        assert "Paired comparisons on shared items" in page.evaluate(heading)
        assert browser.console == []


def _wide_suite(root):
    """2 models x 12 (task, dataset) columns, each cell a finished run with bins (the scaling and popularity
    charts get 12 panels), and a third model that did not open, its cells failed."""
    folder = constructed_suite(root, models=2, tasks=("extraction",))
    document = json.loads((folder / "suite.json").read_text())
    cells = {}
    for key, cell in document["cells"].items():
        headline = json.loads((folder / cell["run_dir"] / "results.json").read_text())["headline"]
        for n in range(12):
            task = f"extraction-form-{n:02d}"
            cells[f"{key}-{n}"] = {**cell, "task": task, "headline": headline}
            cells[f"broken__{task}"] = {"model": "broken", "task": task, "dataset": "lama", "status": "failed",
                                        "error": "model broken did not open", "attempts": 2}
    error = "OSError: org/broken-model-7b is not a local folder and is not a valid model identifier on the Hub"
    document["cells"] = cells
    document["models"] = {"m0": {"model": "org/m0", "parameters": 135_000_000, "family": "llama", "sha256": "ab" * 32},
                          "m1": {"model": "org/m1", "parameters": 270_000_000, "family": "gemma", "sha256": "cd" * 32},
                          "broken": {"model": "org/broken-model-7b", "error": error}}
    (folder / "suite.json").write_text(json.dumps(document))
    return folder, error


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install -y chromium)")
def test_a_wide_suite_page_reads_at_1300_px(tmp_path):
    folder, error = _wide_suite(tmp_path / "suite")
    done = run_kbench("report", str(folder), "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr

    with Browser(_chromium(), tmp_path / "chromium-profile", size=(1300, 1000)) as browser:
        page = browser.open((tmp_path / "report" / "index.html").as_uri())
        # every chart at its natural size, or at least 600 px wide (12 panels in one strip were ~100 px each)
        images = page.evaluate("[...document.images].map(i => [i.getAttribute('src'), i.naturalWidth, i.width])")
        assert {src for src, _, _ in images} >= {"scaling.png", "popularity.png"}
        assert not [(src, natural, shown) for src, natural, shown in images if shown < min(natural, 600)], images
        # and no chart's labels shrink below 60% of their drawn size (the strip was shown at 26%)
        assert not [(src, natural, shown) for src, natural, shown in images if shown < 0.6 * natural], images
        # the model table and the leaderboard fit the page: nothing scrolls sideways
        wide = "[...document.querySelectorAll('.scroll')].filter(d => d.scrollWidth > d.clientWidth + 1).length"
        assert page.evaluate(wide) == 0
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        # the model that did not open says why, in full, in the model table
        models = page.evaluate("[...document.querySelectorAll('h2')].find(h => h.textContent === 'Models')"
                               ".nextElementSibling.textContent")
        assert error in models
        assert browser.console == []
