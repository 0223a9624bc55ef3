"""`kbench suite status` reads at any terminal width: the grid where it fits, one line per cell where it does not."""

from __future__ import annotations

from tests.conftest import run_kbench
from tests.suite_folders import finished_suite_json

MODELS = ["smollm2-135m", "gemma3-270m"]
COLUMNS = [(f"extraction-{form}", "lama") for form in ("cloze", "question", "fewshot", "choice", "mask", "qa")]


def test_a_grid_wider_than_80_columns_prints_one_full_line_per_cell(tmp_path):
    folder = finished_suite_json(tmp_path / "suite", MODELS, COLUMNS)
    result = run_kbench("suite", "status", str(folder), env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert "…" not in result.stdout  # no cell cut short
    assert "smollm2-135m  extraction-cloze / lama     accuracy 0.100 [0.050, 0.150] n=200" in lines
    assert "gemma3-270m   extraction-qa / lama        failed" in lines
    assert "failed gemma3-270m__extraction-qa__lama (2 attempts): out of memory" in result.stdout
    assert lines[-1] == "11 done, 1 failed"


def test_a_grid_that_fits_prints_as_a_grid(tmp_path):
    folder = finished_suite_json(tmp_path / "suite", MODELS, COLUMNS[:2])
    result = run_kbench("suite", "status", str(folder), env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if "extraction-cloze / lama" in line)
    assert "extraction-question / lama" in header  # both columns on one line: the grid
    assert "accuracy 0.100 [0.050, 0.150] n=200" in result.stdout and "…" not in result.stdout
