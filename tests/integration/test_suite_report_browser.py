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
