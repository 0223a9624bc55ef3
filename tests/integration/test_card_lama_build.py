"""The issue's acceptance path on real data: build LAMA (a few relations), `kbench card`, load the
folder with `datasets.load_dataset`, `kbench publish --dry-run`."""

from __future__ import annotations

import json

from conftest import REPO_ROOT, run_kbench


def test_build_card_load_and_dry_run_on_real_lama(tmp_path, monkeypatch):
    out = tmp_path / "lama"
    built = run_kbench("build", str(REPO_ROOT / "pipelines" / "lama-trex.toml"), "--out", str(out),
                       "--set", 'load.relations=["P19", "P20", "P106"]', "--set", "load.max_per_relation=60")
    assert built.returncode == 0, built.stderr

    carded = run_kbench("card", str(out))
    assert carded.returncode == 0, carded.stderr
    readme = (out / "README.md").read_text()
    assert "license: cc-by-nc-4.0" in readme and "Non-commercial use only" in readme
    stats = json.loads((out / "stats.json").read_text())
    for stage in stats["stages"]:  # every stage of the real build appears with its counts
        assert f"| `{stage['id']}` | {stage['stage']} | {stage['rows_in']:,} | {stage['rows_out']:,} |" in readme
    assert "| P19 | place of birth |" in readme
    # the binned recipe gets the card of a derived benchmark, which says what each step dropped
    assert "pretty_name: LAMA T-REx facts, single-answer and frequency-binned" in readme
    assert "It is **not the LAMA\nprobe**" in readme and "## What was dropped" in readme
    frequency = next(s for s in stats["stages"] if s["id"] == "frequency")
    assert f"dropped {frequency['dropped_total']:,} of {frequency['rows_in']:,}" in readme
    assert "| `frequency_buffer` | 0 of " in readme  # AutoPrompt rows are never binned, so never buffered
    assert "units_moved_by_ties" in readme
    assert "kbench build pipelines/lama-trex.toml --out lama" in readme

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    loaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    assert sum(split.num_rows for split in loaded.values()) == stats["final_rows"]

    dry = run_kbench("publish", str(out), "--repo-id", "someone/lama-probe", "--dry-run", env={"HF_TOKEN": "hf_secretvalue999"})
    assert dry.returncode == 0, dry.stderr
    files = dry.stdout.split()
    assert "README.md" in files and "manifest.json" in files and any(f.startswith("data/default/") for f in files)
    assert not any(f.startswith(".kbench") for f in files)
    assert "hf_secretvalue999" not in dry.stdout + dry.stderr
