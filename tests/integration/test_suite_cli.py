"""`kbench suite run` / `kbench suite status` on a 2-model x 2-task suite of tiny real models:
killed with SIGKILL after its first cell and rerun, it writes the same bytes as an uninterrupted
run without recomputing the finished cell; a broken model fails its own cells only; bad suite
files exit 2 naming file, line and key, and run nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO_ROOT, run_kbench
from tests.suite_folders import cell_outputs, suite_text, tiny_suite


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory) -> Path:
    return tiny_suite(tmp_path_factory.mktemp("suite"))


@pytest.fixture(scope="module")
def reference(suite_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "suite"
    done = run_kbench("suite", "run", str(suite_dir / "suite.toml"), "--out", str(out),
                      env={"KBENCH_CACHE": str(out.parent / "cache")})
    assert done.returncode == 0, done.stderr
    return out


def done_cells(out: Path) -> int:
    try:
        return sum(c["status"] == "done" for c in json.loads((out / "suite.json").read_text())["cells"].values())
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


def test_the_grid_and_its_model_table(reference):
    document = json.loads((reference / "suite.json").read_text())
    assert [c["status"] for c in document["cells"].values()] == ["done"] * 4
    assert list(document["cells"]) == ["tiny-a__cloze__facts", "tiny-a__question__facts", "tiny-b__cloze__facts",
                                       "tiny-b__question__facts"]
    for key, cell in document["cells"].items():
        results = json.loads((reference / cell["run_dir"] / "results.json").read_text())
        assert results["schema"] == "kbench.results.v2" and cell["headline"] == results["headline"]
        assert results["items"]["count"] == (8 if "cloze" in key else 15)
    a, b = document["models"]["tiny-a"], document["models"]["tiny-b"]
    assert a["parameters_from"] == "weights"
    # the tiny Llamas: 2 x (400 x 64) embeddings and head, a 64 norm, 41,088 per block (4 in a, 2 in b)
    assert (a["parameters"], b["parameters"]) == (51_264 + 4 * 41_088, 51_264 + 2 * 41_088)
    assert a["family"] == "llama" and a["context_length"] == 256 and a["chat_template"] is False
    assert a["release_date"] == "2024-11-01" and a["training_tokens"] == 1e6 and b["release_date"] is None
    assert a["sha256"] != b["sha256"] and len(a["sha256"]) == 64
    assert a["read"] is None  # not a `kbench read` checkpoint
    status = run_kbench("suite", "status", str(reference))
    assert status.returncode == 0 and "4 done" in status.stdout and "exact_accuracy" in status.stdout


def test_killed_after_its_first_cell_resumes_to_identical_outputs(suite_dir, reference, tmp_path):
    out = tmp_path / "suite"
    env = {**os.environ, "KBENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "kbench", "suite", "run", str(suite_dir / "suite.toml"), "--out",
                             str(out)], cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    give_up = time.monotonic() + 300
    while done_cells(out) == 0:
        assert proc.poll() is None and time.monotonic() < give_up, "the suite ended (or stalled) before its first cell"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = done_cells(out)
    assert 0 < finished < 4, finished
    first = out / "cells" / "tiny-a__cloze__facts" / "results.json"
    before = first.read_bytes()
    again = run_kbench("suite", "run", str(suite_dir / "suite.toml"), "--out", str(out), env={"KBENCH_CACHE": env["KBENCH_CACHE"]})
    assert again.returncode == 0, again.stderr
    assert f"{finished} cells done before" in again.stderr
    assert first.read_bytes() == before  # a finished cell is skipped, not recomputed
    assert (out / "suite.json").read_bytes() == (reference / "suite.json").read_bytes()
    assert cell_outputs(out) == cell_outputs(reference)
    items = pl.read_parquet(out / "cells" / "tiny-b__question__facts" / "items.parquet")
    assert items.height == 15


def test_a_broken_model_fails_its_own_cells_and_the_others_finish(suite_dir, reference, tmp_path):
    suite = tmp_path / "suite.toml"
    suite.write_text(suite_text(suite_dir / "model-a", tmp_path / "no-such-model"))
    (tmp_path / "facts").symlink_to(suite_dir / "facts")
    out = tmp_path / "out"
    done = run_kbench("suite", "run", str(suite), "--out", str(out), env={"KBENCH_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 1, done.stderr
    assert "2 of 4 cells failed" in done.stderr and "Traceback" not in done.stderr
    cells = json.loads((out / "suite.json").read_text())["cells"]
    assert {k: c["status"] for k, c in cells.items()} == {
        "tiny-a__cloze__facts": "done", "tiny-a__question__facts": "done",
        "tiny-b__cloze__facts": "failed", "tiny-b__question__facts": "failed"}
    broken = cells["tiny-b__cloze__facts"]
    assert broken["attempts"] == 2 and "no-such-model" in broken["error"] and "did not open" in broken["error"]
    ok = out / "cells" / "tiny-a__question__facts" / "items.parquet"
    assert ok.read_bytes() == (reference / "cells" / "tiny-a__question__facts" / "items.parquet").read_bytes()
    status = run_kbench("suite", "status", str(out))
    assert "2 done, 2 failed" in status.stdout and "failed tiny-b__cloze__facts (2 attempts)" in status.stdout
    report = run_kbench("report", str(out), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "report" / "index.html").read_text()
    assert page.count("<td class='failed'") == 2 and "no-such-model" in page  # the error is the cell's tooltip
    assert "No task and dataset has two finished models" in page


def test_the_suite_report(reference, tmp_path):
    out = tmp_path / "report"
    done = run_kbench("report", str(reference), "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = (out / "index.html").read_text()
    for part in ("<h2>Models</h2>", "id='leaderboard'", "<h2>Protocol of every cell</h2>", "Paired comparisons on shared items",
                 "<script>", "scaling.png", "popularity.png"):
        assert part in page, part
    document = json.loads((reference / "suite.json").read_text())
    first = document["cells"]["tiny-a__cloze__facts"]["headline"]["maple_accuracy"]
    assert f"n={first['n']}" in page and "maple_accuracy" in page
    assert "215,616" in page and "133,440" in page  # the model table's parameter counts
    pairs = (out / "pairs.md").read_text()
    assert "| tiny-a | tiny-b | 8 |" in pairs and "| tiny-a | tiny-b | 15 |" in pairs
    for png in ("scaling.png", "popularity.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("old, new, where, message", [
    ('name = "tiny-b"', 'name = "tiny-a"', ':16 [models[1].name]', "duplicate cell"),
    ('task = "extraction"\nname = "cloze"', 'task = "extractoin"\nname = "cloze"', ":23 [tasks[0].task]",
     "unknown task 'extractoin'"),
    ("max_new_tokens = 2\nlimit", "max_new_tokens = 0\nlimit", ":26 [tasks[0].settings.max_new_tokens]",
     "greater than or equal to 1"),
    ('prompt = "question"', 'promt = "question"', ":33 [tasks[1].settings.promt]", "Extra inputs are not permitted"),
    ('model = "MODEL_B"', 'model = "openai:ftp://gpu1/v1"', ":15 [models[1].model]", "malformed model spec"),
    ('path = "facts"', 'path = "nowhere"', ":20 [datasets[0].path]", "no such folder"),
    ('[[models]]\nmodel = "MODEL_B"', '[[models]]\ndtype = "float8"\nmodel = "MODEL_B"', ":15 [models[1].dtype]",
     "'float32', 'bfloat16' or 'float16'"),
])
def test_a_bad_suite_file_names_file_line_and_key(suite_dir, tmp_path, old, new, where, message):
    from kbench.errors import UserError
    from kbench.suite.spec import load_suite

    text = suite_text(suite_dir / "model-a", "MODEL_B")
    assert old in text
    suite = tmp_path / "bad.toml"
    suite.write_text(text.replace(old, new).replace("MODEL_B", str(suite_dir / "model-b")))
    (tmp_path / "facts").symlink_to(suite_dir / "facts")
    with pytest.raises(UserError) as caught:
        load_suite(suite)
    assert f"{suite}{where}" in str(caught.value) and message in str(caught.value), str(caught.value)


def test_a_bad_suite_file_exits_2_and_runs_nothing(suite_dir, tmp_path):
    suite = tmp_path / "bad.toml"
    suite.write_text(suite_text(suite_dir / "model-a", suite_dir / "model-b").replace('name = "tiny-b"', 'name = "tiny-a"'))
    (tmp_path / "facts").symlink_to(suite_dir / "facts")
    done = run_kbench("suite", "run", str(suite), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and f"{suite}:16 [models[1].name]: duplicate cell" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()  # nothing ran


def test_a_recipe_dataset_is_built_first_and_limit_caps_every_cell(suite_dir, tmp_path):
    from tests.dataset_folders import SNAPSHOT_NEW, SNAPSHOT_OLD

    for name, rows in (("old", SNAPSHOT_OLD), ("new", SNAPSHOT_NEW)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "evo.toml").write_text(
        '[pipeline]\nname = "evo"\nconfig = "evolving"\n\n[[stages]]\nstage = "evolving_snapshots"\n'
        f'old = "{tmp_path / "old.jsonl"}"\nnew = "{tmp_path / "new.jsonl"}"\n\n'
        '[[stages]]\nstage = "write_dataset"\nschema_name = "qa_item.v1.json"\n')
    (tmp_path / "suite.toml").write_text(
        f'[suite]\nname = "evo"\n\n[[models]]\nmodel = "{suite_dir / "model-a"}"\n\n'
        '[[datasets]]\nname = "evo"\nrecipe = "evo.toml"\n\n'
        '[[tasks]]\ntask = "qa"\n[tasks.settings]\nmax_new_tokens = 3\n')
    out = tmp_path / "out"
    done = run_kbench("suite", "run", str(tmp_path / "suite.toml"), "--out", str(out), "--limit", "3",
                      env={"KBENCH_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert (out / "datasets" / "evo" / "stats.json").is_file()
    document = json.loads((out / "suite.json").read_text())
    assert document["datasets"]["evo"] == {"path": "datasets/evo", "recipe": "evo.toml", "error": None}
    assert document["limit"] == 3
    results = json.loads((out / "cells" / "model-a__qa__evo" / "results.json").read_text())
    assert results["task"] == "qa" and results["items"]["count"] == 3 and results["settings"]["limit"] == 3


def test_a_cell_whose_settings_changed_starts_over(suite_dir, reference, tmp_path):
    import shutil

    out = tmp_path / "suite"
    shutil.copytree(reference, out)
    suite = tmp_path / "suite.toml"
    text = suite_text(suite_dir / "model-a", suite_dir / "model-b")
    assert "max_new_tokens = 2\nlimit = 8" in text
    suite.write_text(text.replace("max_new_tokens = 2\nlimit = 8", "max_new_tokens = 2\nlimit = 6"))
    (tmp_path / "facts").symlink_to(suite_dir / "facts")
    done = run_kbench("suite", "run", str(suite), "--out", str(out), env={"KBENCH_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr  # not "holds a different run": the old cloze folders were replaced
    assert "2 cells done before" in done.stderr  # the question cells kept
    for model in ("tiny-a", "tiny-b"):
        assert json.loads((out / "cells" / f"{model}__cloze__facts" / "results.json").read_text())["items"]["count"] == 6
