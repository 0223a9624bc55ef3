"""write_dataset: Hub layout that datasets.load_dataset opens, schema validation, stale splits."""

from __future__ import annotations

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages.write_dataset import WriteDataset, front_matter
from kbench.dataset import dataset_configs
from kbench.errors import UserError


def question(i: int, split: str) -> dict:
    return {"id": f"q{i}", "relation": "P19", "relation_label": "place of birth", "template": "[X] was born in [Y] .",
            "subject": f"Person {i}", "subject_id": f"Q{i + 1}", "object": "Paris", "object_id": "Q90", "source": "trex",
            "evidence_count": i, "subject_aliases": [], "object_aliases": ["City of Light"],
            "answers": ["Paris", "City of Light"], "prompt_cloze": f"Person {i} was born in",
            "prompt_masked": f"Person {i} was born in [MASK] .", "question": f"Where was Person {i} born?",
            "frequency": float(i), "frequency_bin": "head", "split": split}


def run(tmp_path, rows, config_name="default", **params):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0,
                       dataset_name="toy", dataset_version="1.2.3", config_name=config_name)
    out = WriteDataset(WriteDataset.Params(**params), ctx).run(pl.LazyFrame(rows))
    return ctx.run_dir, out.kept.collect()


def test_load_dataset_opens_the_declared_splits(tmp_path):
    import datasets

    rows = [question(0, "train"), question(1, "test"), question(2, "train"), question(3, "dev")]
    run_dir, kept = run(tmp_path, rows)
    assert kept.height == 4
    # decoys that must not be picked up as data
    (run_dir / "rejected").mkdir()
    pl.DataFrame({"id": ["x"]}).write_parquet(run_dir / "rejected" / "cap.parquet")
    loaded = datasets.load_dataset(str(run_dir), cache_dir=str(tmp_path / "hf"))
    assert list(loaded) == ["train", "dev", "test"]
    assert loaded["train"]["id"] == ["q0", "q2"] and loaded["test"]["answers"] == [["Paris", "City of Light"]]
    text = (run_dir / "README.md").read_text()
    assert text.startswith("---\nconfigs:\n") and "toy 1.2.3" in text


def test_rebuild_into_the_same_folder_is_not_served_from_a_stale_cache(tmp_path):
    import datasets

    cache = str(tmp_path / "hf")
    run_dir, _ = run(tmp_path, [question(0, "test"), question(1, "test")])
    assert datasets.load_dataset(str(run_dir), cache_dir=cache)["test"]["id"] == ["q0", "q1"]
    run(tmp_path, [question(2, "test"), question(3, "test")])  # same row count, other rows
    assert datasets.load_dataset(str(run_dir), cache_dir=cache)["test"]["id"] == ["q2", "q3"]
    assert "dataset_info:\n- config_name: \"default\"\n  splits:\n  - name: \"test\"\n" in (run_dir / "README.md").read_text()


def test_named_config_is_the_default_and_stale_splits_are_removed(tmp_path):
    run_dir, _ = run(tmp_path, [question(0, "train"), question(1, "test")], config_name="lama")
    run(tmp_path, [question(0, "test")], config_name="lama")
    assert sorted(p.name for p in (run_dir / "data" / "lama").iterdir()) == ["test.parquet"]
    configs = dataset_configs(run_dir)
    assert configs == [{"config_name": "lama", "default": True,
                        "data_files": [{"split": "test", "path": "data/lama/test.parquet"}]}]
    assert "  default: true\n" in front_matter(configs)


def test_a_row_breaking_the_schema_is_named(tmp_path):
    bad = question(1, "test") | {"subject_id": "London"}
    with pytest.raises(UserError, match=r"row 'q1' does not match schemas/question.v1.json at subject_id"):
        run(tmp_path, [question(0, "test"), bad])
    assert not (tmp_path / "run" / "data").exists()  # validated before anything is written
    with pytest.raises(UserError, match="no column.*answers"):
        run(tmp_path, [{k: v for k, v in question(0, "test").items() if k != "answers"}])
    with pytest.raises(UserError, match="no `split` column"):
        run(tmp_path, [{k: v for k, v in question(0, "test").items() if k != "split"}])


def test_bad_config_name_is_refused(tmp_path):
    with pytest.raises(UserError, match="config name"):
        run(tmp_path, [question(0, "test")], config="../escape")
