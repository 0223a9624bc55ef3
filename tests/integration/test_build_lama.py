"""The binned LAMA T-REx recipe end to end through the CLI, on the real data in ../shared/data.

(The original LAMA probe, pipelines/lama.toml, has its own test: test_build_lama_probe.py.)
Covers: `kbench build pipelines/lama-trex.toml` -> datasets.load_dataset with counts that match
stats.json and rejected/; `kbench inspect`; resume after `kill -9`; `--set` invalidation; and
bad inputs giving exit code 2 with file and line/key and no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO_ROOT, run_kbench

RECIPE = REPO_ROOT / "pipelines" / "lama-trex.toml"
STAGE_IDS = ["load", "aliases", "verify", "single", "frequency", "cap", "questions", "split", "write"]


def events(run_dir: Path) -> list[tuple[str, str]]:
    lines = (run_dir / ".kbench" / "events.jsonl").read_text().splitlines()
    return [(e["stage"], e["action"]) for e in map(json.loads, lines)]


def split_frames(run_dir: Path) -> dict[str, pl.DataFrame]:
    return {p.stem: pl.read_parquet(p) for p in sorted((run_dir / "data" / "default").glob("*.parquet"))}


@pytest.fixture(scope="module")
def built(tmp_path_factory, shared_data) -> Path:
    out = tmp_path_factory.mktemp("lama") / "lama"
    result = run_kbench("build", str(RECIPE), "--out", str(out))  # wall time: see bench/build_lama.py
    assert result.returncode == 0, result.stderr
    return out


def test_dataset_loads_and_counts_match_stats(built, tmp_path):
    import datasets

    stats = json.loads((built / "stats.json").read_text())
    assert [s["id"] for s in stats["stages"]] == STAGE_IDS
    loaded = datasets.load_dataset(str(built), cache_dir=str(tmp_path / "hf"))
    assert set(loaded) == {"train", "dev", "test"}
    assert sum(len(loaded[s]) for s in loaded) == stats["final_rows"] == stats["stages"][-1]["rows_out"]
    for split, frame in split_frames(built).items():
        assert len(loaded[split]) == frame.height and set(frame["split"]) == {split}
    # the chain adds up, and every drop is in rejected/ with its reason
    for before, after in zip(stats["stages"], stats["stages"][1:]):
        assert after["rows_in"] == before["rows_out"]
        assert after["rows_in"] - after["rows_out"] == after["dropped_total"]
        rejected = built / "rejected" / f"{after['id']}.parquet"
        if after["dropped_total"]:
            counts = pl.read_parquet(rejected)["reason"].value_counts()
            assert dict(counts.iter_rows()) == after["dropped"]
    assert stats["stages"][0]["rows_out"] == 22881 + 38892  # every T-REx and AutoPrompt fact (no Google-RE)
    test = loaded["test"].to_polars()
    assert set(test["source"]) == {"trex"}
    assert test.group_by("relation").len()["len"].max() <= 300
    assert set(test["frequency_bin"]) == {"head", "torso", "tail"}
    # ties never split: every evidence count lands in exactly one bin
    assert test.group_by("frequency").agg(pl.col("frequency_bin").n_unique())["frequency_bin"].max() == 1
    frequency = next(s for s in stats["stages"] if s["id"] == "frequency")
    dropped_before = sum(pl.read_parquet(built / "rejected" / f"{step}.parquet").filter(pl.col("source") == "trex").height
                         for step in ("verify", "single") if (built / "rejected" / f"{step}.parquet").exists())
    assert frequency["details"]["unit"] == "row" and frequency["details"]["rows_ranked"] == 22881 - dropped_before
    assert frequency["dropped"]["frequency_buffer"] == sum(
        frequency["details"]["units_per_segment"][k] for k in ("buffer_upper", "buffer_lower"))
    assert set(loaded["train"]["source"]) == {"autoprompt_train"}
    manifest = json.loads((built / "manifest.json").read_text())
    loaded_files = [i for i in manifest["inputs"] if i["stage"] == "load"]
    assert len(loaded_files) == 28 + 1 + 82  # T-REx files, relations.jsonl, AutoPrompt train/dev



def test_inspect_prints_stages_relations_and_bins(built):
    result = run_kbench("inspect", str(built), env={"COLUMNS": "160"})
    assert result.returncode == 0, result.stderr
    for text in ("frequency_buffer", "rows per relation", "place of birth", "P19", "rows per frequency bin", "torso"):
        assert text in result.stdout


def test_inspect_refuses_a_folder_that_is_not_a_dataset(tmp_path):
    result = run_kbench("inspect", str(tmp_path))
    assert result.returncode == 2 and "no stats.json" in result.stderr and "Traceback" not in result.stderr


def test_resume_after_kill_9_reuses_finished_stages_and_matches(built, tmp_path):
    out = tmp_path / "lama"
    proc = subprocess.Popen([sys.executable, "-m", "kbench", "build", str(RECIPE), "--out", str(out)],
                            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first_marker = out / ".kbench" / "stages" / "00_load" / "done.json"
    deadline = time.monotonic() + 120
    while not first_marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    still_running = proc.poll() is None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert still_running, "the build finished before it could be killed"
    finished = {p.parent.name.split("_", 1)[1] for p in (out / ".kbench" / "stages").glob("*/done.json")}
    assert "load" in finished and "write" not in finished

    result = run_kbench("build", str(RECIPE), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert [s for s, a in events(out) if a == "reused"] == [s for s in STAGE_IDS if s in finished]
    resumed, reference = split_frames(out), split_frames(built)
    assert list(resumed) == list(reference)
    for split in reference:
        assert resumed[split].equals(reference[split]), split
    assert (out / "stats.json").read_text() == (built / "stats.json").read_text()


def test_changed_param_invalidates_that_stage_and_later_only(built, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(built, out)
    (out / ".kbench" / "events.jsonl").unlink()
    result = run_kbench("build", str(RECIPE), "--out", str(out), "--set", "cap.max_per_relation=100")
    assert result.returncode == 0, result.stderr
    assert events(out) == [("load", "reused"), ("aliases", "reused"), ("verify", "reused"), ("single", "reused"),
                           ("frequency", "reused"), ("cap", "computed"),
                           ("questions", "computed"), ("split", "computed"), ("write", "computed")]
    assert pl.read_parquet(out / "data" / "default" / "test.parquet").group_by("source", "relation").len()["len"].max() == 100


# ---- bad inputs: exit 2, a located message, no traceback --------------------------------------

TINY_RELATIONS = '{"relation": "P19", "template": "[X] was born in [Y] .", "label": "place of birth"}\n'
TINY_FACT = '{"uuid": "u1", "sub_uri": "Q1", "sub_label": "Ann", "obj_uri": "Q2", "obj_label": "Paris", "evidences": []}\n'


def tiny_recipe(tmp_path: Path, relations: str = TINY_RELATIONS, facts: str = TINY_FACT, extra: str = "",
                stage: str = "load_lama") -> Path:
    (tmp_path / "trex").mkdir(exist_ok=True)
    (tmp_path / "trex" / "relations.jsonl").write_text(relations)
    (tmp_path / "trex" / "P19.jsonl").write_text(facts)
    recipe = tmp_path / "broken.toml"
    recipe.write_text(f'[pipeline]\nname = "tiny"\n\n[[stages]]\nstage = "{stage}"\ntrex = "trex"\n{extra}'
                      '\n[[stages]]\nstage = "to_questions"\n\n[[stages]]\nstage = "split"\n'
                      '\n[[stages]]\nstage = "write_dataset"\n')
    return recipe


@pytest.mark.parametrize("case, where, message", [
    ({"facts": TINY_FACT + '{"uuid": "u2", "sub_uri": \n'}, "P19.jsonl:2", "malformed JSON"),
    ({"facts": '{"uuid": "u2", "sub_uri": "Q1", "sub_label": "A", "obj_uri": "Q2"}\n'}, "P19.jsonl:1", "obj_label"),
    ({"relations": '{"relation": "P19", "template": "born in [Y] ."}\n'}, "relations.jsonl:1", "[X]"),
    ({"facts": ""}, "P19.jsonl", "file is empty"),
    ({"stage": "load_lamma"}, "broken.toml [stages[0].stage]", "known stages:"),
    ({"extra": 'max_per_relaton = 3\n'}, "broken.toml [stages[0] (load_lama).max_per_relaton]", "valid keys:"),
])
def test_bad_input_exits_2_with_location(tmp_path, case, where, message):
    recipe = tiny_recipe(tmp_path, **case)
    result = run_kbench("build", str(recipe), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert where in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


def test_tiny_recipe_builds(tmp_path):
    result = run_kbench("build", str(tiny_recipe(tmp_path)), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    (row,) = pl.read_parquet(tmp_path / "out" / "data" / "default" / "test.parquet").to_dicts()
    assert (row["prompt_cloze"], row["question"], row["answers"]) == ("Ann was born in", "Where was Ann born?", ["Paris"])
