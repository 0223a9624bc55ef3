"""The MAPLE recipe on the REBEL sample through the CLI: builds, loads, inspects, resumes after kill -9."""

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

from conftest import REPO_ROOT, run_kbench

RECIPE = "pipelines/maple-wiki.toml"


@pytest.fixture(scope="module")
def built(tmp_path_factory, shared_data) -> Path:
    out = tmp_path_factory.mktemp("maple") / "run"
    done = run_kbench("build", RECIPE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / ".kbench" / "events.jsonl").read_text().splitlines()]


def test_builds_a_loadable_binned_domain_checked_dataset(built):
    import datasets

    stats = json.loads((built / "stats.json").read_text())
    data = datasets.load_dataset(str(built))
    assert list(data) == ["test"] and data["test"].num_rows == stats["final_rows"] > 20
    frame = pl.read_parquet(built / "data" / "default" / "test.parquet")
    assert set(frame["frequency_bin"]) <= {"head", "torso", "tail"} and frame["frequency_bin"].null_count() == 0
    assert frame["domain"].null_count() == 0 and frame["domain"].n_unique() >= 3
    assert (frame["subject_corpus_count"] > 0).all() and (frame["object_corpus_count"] > 0).all()
    assert frame["id"].n_unique() == frame.height
    assert all(row["object"] == row["answers"][0] for row in frame.select("object", "answers").to_dicts())
    drops = {s["id"]: s["dropped"] for s in stats["stages"]}
    assert drops["clean"]["too_short"] > 0 and drops["link"]["object_is_literal"] > 0
    assert drops["domains"]["no_domain"] > 0 and drops["frequency"]["frequency_buffer"] > 0
    # the rejected rows are on disk with their reasons
    assert set(pl.read_parquet(built / "rejected" / "quality.parquet")["reason"]) == set(drops["quality"])


def test_card_says_checked_against_the_inputs_only_and_judges_off(built):
    done = run_kbench("card", str(built))
    assert done.returncode == 0, done.stderr
    body = (built / "README.md").read_text(encoding="utf-8").split("---\n", 2)[2].lstrip()
    first = body.splitlines()[2]
    assert first.startswith("**Checked against the inputs only.**")
    assert "not run (off by default)" in body and "verified against wikidata" not in body.lower()
    manifest = json.loads((built / "manifest.json").read_text())
    assert {s["kind"] for s in manifest["knowledge_sources"].values()} == {"inputs"} and manifest["judges"] == {}


def test_inspect_shows_bins_domains_and_drops(built):
    done = run_kbench("inspect", str(built), env={"COLUMNS": "200"})  # wide enough not to elide names
    assert done.returncode == 0, done.stderr
    for word in ("frequency_bin", "domain", "geography", "too_short", "no_domain", "frequency_buffer"):
        assert word in done.stdout


def test_rerun_reuses_every_stage(built):
    before = len(_events(built))
    done = run_kbench("build", RECIPE, "--out", str(built))
    assert done.returncode == 0, done.stderr
    assert {e["action"] for e in _events(built)[before:]} == {"reused"}


def test_resumes_after_kill_and_matches_an_uninterrupted_build(built, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "kbench", "build", RECIPE, "--out", str(out)], cwd=REPO_ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    marker = out / ".kbench" / "stages" / "02_link" / "done.json"
    deadline = time.monotonic() + 300
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = run_kbench("build", RECIPE, "--out", str(out))
    assert done.returncode == 0, done.stderr
    reused = [e["stage"] for e in _events(out) if e["action"] == "reused"]
    assert {"clean", "triplets", "link"} <= set(reused)
    expected = pl.read_parquet(built / "data" / "default" / "test.parquet")
    assert pl.read_parquet(out / "data" / "default" / "test.parquet").equals(expected)


@pytest.mark.parametrize("override, message", [
    ("clean.path=../nowhere", "nowhere"),
    ("domains.mapping=mappings/missing.toml", "missing.toml"),
    ("quality.max_object_word=3", "max_object_word"),
])
def test_bad_settings_exit_2_with_a_located_message(tmp_path, override, message):
    done = run_kbench("build", RECIPE, "--out", str(tmp_path / "run"), "--set", override)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
