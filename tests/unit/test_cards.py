"""Data cards: license ordering, rendering from manifest/stats/splits, validation, file checksums."""

from __future__ import annotations

import json

import pytest
from card_folders import front_matter

from kbench.cards import licenses
from kbench.cards.folder import publishable_files
from kbench.cards.publish import plan_upload
from kbench.cards.render import write_card
from kbench.errors import InputError, UserError


# --- license ordering --------------------------------------------------------------------------

def test_inherited_license_keeps_every_source_condition():
    assert licenses.inherited_license(["cc-by-nc-4.0"]) == "cc-by-nc-4.0"
    assert licenses.inherited_license(["cc-by-nc-4.0", "cc-by-nc-sa-4.0"]) == "cc-by-nc-sa-4.0"
    assert licenses.inherited_license(["cc-by-4.0", "cc0-1.0"]) == "cc-by-4.0"
    assert licenses.inherited_license(["cc-by-nc-4.0", "cc-by-sa-4.0"]) == "cc-by-nc-sa-4.0"
    assert licenses.inherited_license([]) == "cc0-1.0"


@pytest.mark.parametrize("chosen", ["cc-by-4.0", "mit", "cc0-1.0", "cc-by-sa-4.0", "apache-2.0"])
def test_less_restrictive_license_is_refused(chosen):
    with pytest.raises(UserError, match="less restrictive"):
        licenses.check_license_choice(chosen, ["cc-by-nc-4.0"], force=False)
    licenses.check_license_choice(chosen, ["cc-by-nc-4.0"], force=True)  # forced: accepted


@pytest.mark.parametrize("chosen", ["cc-by-nc-4.0", "cc-by-nc-sa-4.0", "cc-by-nc-nd-4.0"])
def test_equal_or_stricter_license_is_accepted(chosen):
    licenses.check_license_choice(chosen, ["cc-by-nc-4.0"], force=False)


def test_unknown_license_cannot_be_compared_unless_forced():
    with pytest.raises(UserError, match="cannot be compared"):
        licenses.check_license_choice("wtfpl", ["cc-by-4.0"], force=False)


# --- rendering ---------------------------------------------------------------------------------

def test_card_metadata_and_body_come_from_manifest_stats_and_splits(lama_dir):
    readme = write_card(lama_dir)
    meta = front_matter(readme)
    assert meta["license"] == "cc-by-nc-4.0"
    assert meta["size_categories"] == ["n<1K"]
    assert meta["source_datasets"] == ["extended|facebook/lama"]
    assert meta["task_categories"] and meta["language"] == ["en"] and meta["pretty_name"]
    assert "kbench" not in meta  # the template's own block never reaches the Hub
    assert meta["configs"] == [{"config_name": "default", "data_files": [
        {"split": "dev", "path": "data/default/dev.parquet"}, {"split": "test", "path": "data/default/test.parquet"}]}]
    text = readme.read_text()
    assert "Non-commercial use only" in text
    assert "| `frequency_bin` | frequency_bin | 27 | 24 | buffer: 3 |" in text   # stage rows and drops by reason
    assert "| P19 | place of birth | 4 | 8 | 12 |" in text                     # relation distribution per split
    assert "| head | 0 | 8 | 8 |" in text                                        # frequency-bin distribution
    assert "**Protocol not recorded**" in text and "faithful" not in text  # a manifest without a block
    assert "@inproceedings{petroni2019language" in text and "@inproceedings{elsahar2018trex" in text
    assert "kbench build pipelines/lama-trex.toml --out lama" in text                    # the rebuild command
    assert "{{" not in text


def test_card_records_file_checksums_and_refuses_changed_data(lama_dir):
    write_card(lama_dir)
    manifest = json.loads((lama_dir / "manifest.json").read_text())
    assert sorted(manifest["files"]) == ["data/default/dev.parquet", "data/default/test.parquet",
                                         "rejected/frequency_bin.parquet", "stats.json"]
    write_card(lama_dir)  # a second run verifies the recorded hashes and succeeds
    dev = lama_dir / "data" / "default" / "dev.parquet"
    (lama_dir / "data" / "default" / "test.parquet").write_bytes(dev.read_bytes())  # valid parquet, other rows
    with pytest.raises(InputError, match="sha256 differs"):
        write_card(lama_dir)


def test_folder_still_opens_with_datasets_load_dataset(lama_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    write_card(lama_dir)
    loaded = datasets.load_dataset(str(lama_dir), cache_dir=str(tmp_path / "hf-cache"))
    assert sorted(loaded) == ["dev", "test"]
    assert loaded["test"].num_rows == 16 and loaded["dev"].num_rows == 8
    assert loaded["test"][0]["relation"] == "P19"


def test_family_and_license_follow_the_detected_sources(lama_dir):
    manifest = json.loads((lama_dir / "manifest.json").read_text())
    manifest["dataset"], manifest["recipe_file"] = "probe", "probe.toml"
    manifest["inputs"] = [{"stage": "load", "path": "data/rebel_sample/sample.jsonl", "sha256": "0" * 64}]
    (lama_dir / "manifest.json").write_text(json.dumps(manifest))
    meta = front_matter(write_card(lama_dir))
    assert meta["license"] == "cc-by-nc-sa-4.0"          # REBEL's share-alike is inherited
    assert meta["pretty_name"].startswith("MAPLE")
    manifest["inputs"] = [{"stage": "load", "path": "openstax_us_history/review_mcq.jsonl", "sha256": "0" * 64}]
    (lama_dir / "manifest.json").write_text(json.dumps(manifest))
    meta = front_matter(write_card(lama_dir))
    assert (meta["license"], meta["task_categories"][0]) == ("cc-by-4.0", "text-classification")


def test_declared_family_wins_and_unknown_family_is_an_error(lama_dir):
    meta = front_matter(write_card(lama_dir, family="evolving"))
    assert meta["pretty_name"].startswith("EvolvingQA")
    assert meta["license"] == "cc-by-nc-4.0"  # the LAMA input still decides the license
    with pytest.raises(UserError, match="no card template for family"):
        write_card(lama_dir, family="nope")


def test_a_lama_build_that_dropped_rows_gets_the_derived_card_with_its_drops(lama_dir):
    import polars as pl

    rejected = lama_dir / "rejected" / "frequency_bin.parquet"
    pl.read_parquet(rejected).with_columns(pl.Series("source", ["trex", "trex", "google_re"])).write_parquet(rejected)
    text = write_card(lama_dir).read_text()
    assert front_matter(lama_dir / "README.md")["pretty_name"].startswith("LAMA T-REx facts, single-answer and frequency-binned")
    assert "- **`frequency_bin`** (`frequency_bin`): dropped 3 of 27 (11.1%) rows (`buffer` 3)" in text
    assert "| reason | google_re | trex |\n|---|---|---|\n| `buffer` | 1 | 2 |" in text  # by source
    # with the step's input still in .kbench/ (a work file), each count is also a share of its source
    (lama_dir / ".kbench" / "stages" / "00_load_lama").mkdir(parents=True)
    pl.DataFrame({"source": ["trex"] * 20 + ["google_re"] * 7}).write_parquet(
        lama_dir / ".kbench" / "stages" / "00_load_lama" / "output.parquet")
    text = write_card(lama_dir).read_text()
    assert "| `buffer` | 1 of 7 (14.3%) | 2 of 20 (10.0%) |" in text


def test_a_lama_build_without_drops_gets_the_probe_card(lama_dir):
    stats = json.loads((lama_dir / "stats.json").read_text())
    stats["stages"] = [dict(s, dropped={}, dropped_total=0) for s in stats["stages"]]
    (lama_dir / "stats.json").write_text(json.dumps(stats))
    (lama_dir / "rejected" / "frequency_bin.parquet").unlink()
    text = write_card(lama_dir).read_text()
    assert front_matter(lama_dir / "README.md")["pretty_name"] == "LAMA probe (T-REx and Google-RE)"
    assert "**No row was dropped.**" in text


def test_work_files_are_never_published(lama_dir):
    (lama_dir / "data" / "default" / ".test.parquet.abc.tmp").write_text("partial")
    write_card(lama_dir)
    files = publishable_files(lama_dir)
    assert not any(f.startswith(".kbench") or f.endswith(".tmp") for f in files)
    assert "README.md" in files and "manifest.json" in files


def test_publish_refuses_a_card_that_fails_validation(lama_dir):
    write_card(lama_dir)
    readme = lama_dir / "README.md"
    readme.write_text(readme.read_text().replace("license: cc-by-nc-4.0\n", ""))
    with pytest.raises(UserError, match="lacks license.*kbench card"):
        plan_upload(lama_dir)
