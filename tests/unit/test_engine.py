"""The pipeline engine on toy stages: validation, stats, rejected rows, resume keys, locking."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.recipe import load_recipe
from kbench.construct.runner import run_recipe
from kbench.dataset import run_lock
from kbench.construct.stage import Stage, StageOutput, StageParams, filter_with_reason, register_stage
from kbench.errors import InputError, UserError
from kbench.io import iter_jsonl


@register_stage
class ToyNumbers(Stage):
    name = "test_toy_numbers"
    source = True

    class Params(StageParams):
        path: str

    def input_files(self):
        return [self.ctx.resolve(self.params.path)]

    def run(self, table):
        rows = [obj for _, obj in iter_jsonl(self.ctx.resolve(self.params.path), required=("n",))]
        return StageOutput(kept=pl.DataFrame(rows))


@register_stage
class ToyMinimum(Stage):
    name = "test_toy_minimum"

    class Params(StageParams):
        minimum: int = 0

    def run(self, table):
        return filter_with_reason(table, pl.when(pl.col("n") < self.params.minimum).then(pl.lit("too_small")))


@register_stage
class ToyDouble(Stage):
    name = "test_toy_double"

    def run(self, table):
        return StageOutput(kept=table.with_columns(pl.col("n") * 2))


def write_recipe(tmp_path: Path, minimum: str = "3", extra: str = "") -> Path:
    (tmp_path / "numbers.jsonl").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(10)))
    recipe = tmp_path / "toy.toml"
    recipe.write_text(f"""
[pipeline]
name = "toy"
seed = 1

[[stages]]
stage = "test_toy_numbers"
path = "numbers.jsonl"

[[stages]]
stage = "test_toy_minimum"
minimum = {minimum}
{extra}

[[stages]]
stage = "test_toy_double"
""")
    return recipe


def events(run_dir: Path) -> list[tuple[str, str]]:
    lines = (run_dir / ".kbench" / "events.jsonl").read_text().splitlines()
    return [(e["stage"], e["action"]) for e in map(json.loads, lines)]


def test_run_writes_stats_rejected_and_manifest(tmp_path):
    out = tmp_path / "out"
    result = run_recipe(load_recipe(write_recipe(tmp_path)), out)
    assert [s.rows_out for s in result.stages] == [10, 7, 7]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["stages"][1]["dropped"] == {"too_small": 3}
    rejected = pl.read_parquet(out / "rejected" / "test_toy_minimum.parquet")
    assert rejected["n"].to_list() == [0, 1, 2] and set(rejected["reason"]) == {"too_small"}
    final = pl.read_parquet(out / ".kbench" / "stages" / "02_test_toy_double" / "output.parquet")
    assert final["n"].to_list() == [6, 8, 10, 12, 14, 16, 18]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"][0]["path"] == "numbers.jsonl" and len(manifest["inputs"][0]["sha256"]) == 64
    assert manifest["resolved"]["stages"][1]["params"] == {"minimum": 3}
    assert manifest["config_hash"] == stats["config_hash"]


def test_rerun_reuses_and_changed_param_invalidates_from_that_stage(tmp_path):
    out = tmp_path / "out"
    run_recipe(load_recipe(write_recipe(tmp_path)), out)
    stats_before = (out / "stats.json").read_bytes()
    run_recipe(load_recipe(write_recipe(tmp_path)), out)
    assert events(out)[3:] == [("test_toy_numbers", "reused"), ("test_toy_minimum", "reused"), ("test_toy_double", "reused")]
    assert (out / "stats.json").read_bytes() == stats_before
    run_recipe(load_recipe(write_recipe(tmp_path), ["test_toy_minimum.minimum=5"]), out)
    assert events(out)[6:] == [("test_toy_numbers", "reused"), ("test_toy_minimum", "computed"), ("test_toy_double", "computed")]


def test_changed_input_file_invalidates_source_stage(tmp_path):
    out = tmp_path / "out"
    recipe = write_recipe(tmp_path)
    run_recipe(load_recipe(recipe), out)
    (tmp_path / "numbers.jsonl").write_text(json.dumps({"n": 100}) + "\n")
    result = run_recipe(load_recipe(recipe), out)
    assert events(out)[3] == ("test_toy_numbers", "computed")
    assert result.stages[-1].rows_out == 1


@pytest.mark.parametrize(
    ("minimum", "extra", "expected"),
    [
        ("3", "bogus = 1", "unknown key 'bogus'; valid keys: minimum"),
        ('"many"', "", "stages[1] (test_toy_minimum).minimum"),
    ],
)
def test_bad_stage_params_name_file_and_key(tmp_path, minimum, extra, expected):
    recipe = write_recipe(tmp_path, minimum=minimum, extra=extra)
    with pytest.raises(InputError) as info:
        load_recipe(recipe)
    assert str(recipe) in str(info.value) and expected in str(info.value)


def test_unknown_stage_lists_known_ones(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('[pipeline]\nname = "x"\n[[stages]]\nstage = "no_such_stage"\n')
    with pytest.raises(InputError, match=r"unknown stage 'no_such_stage'; known stages: .*test_toy_double"):
        load_recipe(recipe)


def test_invalid_toml_names_line(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('[pipeline]\nname = "x"\nseed = = 3\n')
    with pytest.raises(InputError, match=r"r\.toml:3"):
        load_recipe(recipe)


def test_set_override_unknown_stage(tmp_path):
    with pytest.raises(InputError, match="unknown stage id 'nope'"):
        load_recipe(write_recipe(tmp_path), ["nope.x=1"])


def test_malformed_input_line_is_located(tmp_path):
    recipe = write_recipe(tmp_path)
    with open(tmp_path / "numbers.jsonl", "a") as fh:
        fh.write("{not json\n")
    with pytest.raises(InputError, match=r"numbers\.jsonl:11: malformed JSON"):
        run_recipe(load_recipe(recipe), tmp_path / "out")
    assert not (tmp_path / "out" / ".kbench" / "stages" / "00_test_toy_numbers" / "done.json").exists()


def test_second_writer_is_refused(tmp_path):
    with run_lock(tmp_path):
        with pytest.raises(UserError, match="another kbench process"):
            with run_lock(tmp_path):
                pass


def test_output_path_cannot_escape_run_dir(tmp_path):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "out", seed=0)
    assert ctx.output_path("data/x.parquet") == (tmp_path / "out" / "data" / "x.parquet").resolve()
    for bad in ("../escape.parquet", "/etc/passwd", "data/../../x"):
        with pytest.raises(UserError, match="outside the run directory"):
            ctx.output_path(bad)
