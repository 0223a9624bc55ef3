"""The Ray executor on an in-process local Ray (`ray.init(num_cpus=2)`): the same tables as the
local executor for any shard size, resume at shard granularity, a stage's errors as themselves,
and the model stage (extract_rebel, a tiny real BART) in an actor pool.

The recipes are test_stream_chunks' MAPLE tail on an inline triplet table (7-row chunks) and
clean_documents -> extract_rebel. The two-node cluster, node death and the real recipes are in
tests/integration/test_build_ray.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

ray = pytest.importorskip("ray")

from tests.fixtures_models import REBEL_SENTENCE  # noqa: E402
from test_stream_chunks import outputs, stats, write_inputs  # noqa: E402

from kbench.construct import runner  # noqa: E402
from kbench.construct.executors.ray import RayExecutor  # noqa: E402
from kbench.construct.recipe import load_recipe  # noqa: E402
from kbench.construct.runner import run_recipe  # noqa: E402
from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage  # noqa: E402
from kbench.errors import InputError, UserError  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One in-process Ray for the module: RayExecutor(workers=2) runs ray.init(num_cpus=2)."""
    owner = RayExecutor(workers=2)
    yield
    owner.close()


def build(recipe: Path, out: Path, executor=None, cache: str = "cache"):
    return run_recipe(load_recipe(recipe), out, cache_dir=recipe.parent / cache, executor=executor)


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / ".kbench" / "events.jsonl").read_text().splitlines()]


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def assert_same_build(got: Path, want: Path) -> None:
    assert stats(got) == stats(want)
    got_tables, want_tables = outputs(got), outputs(want)
    assert got_tables.keys() == want_tables.keys()
    for name in want_tables:
        assert got_tables[name].equals(want_tables[name]), name  # same rows, same order, same types
    assert manifest(got)["executor"] == "ray" and manifest(want)["executor"] == "local"
    assert {**manifest(got), "executor": None} == {**manifest(want), "executor": None}
    assert manifest(got)["protocol"]["schema"] == "kbench.protocol.v2"  # the construction protocol too


@pytest.mark.parametrize("shard_rows", [10, 14, 1000])  # not a multiple of the chunk, a multiple, one shard
def test_ray_build_equals_local_for_any_shard_size(tmp_path, monkeypatch, shard_rows):
    recipe = write_inputs(tmp_path, 45)
    monkeypatch.setattr(runner, "CHUNK_ROWS", 7)
    build(recipe, tmp_path / "local")
    build(recipe, tmp_path / "ray", RayExecutor(shard_rows=shard_rows))
    assert_same_build(tmp_path / "ray", tmp_path / "local")
    computed = [e for e in events(tmp_path / "ray") if "shard" in e]
    assert {e["action"] for e in computed} == {"computed"}
    # 45 source rows -> ceil(45 / shard_rows) shards for load_triplets; the shard folders are gone
    assert sum(e["stage"] == "load_triplets" for e in computed) == -(-45 // shard_rows)
    assert not list((tmp_path / "ray" / ".kbench" / "stages").glob("*/shards"))


def test_empty_input_gives_the_same_empty_tables(tmp_path, monkeypatch):
    recipe = write_inputs(tmp_path, 0)
    monkeypatch.setattr(runner, "CHUNK_ROWS", 7)
    build(recipe, tmp_path / "local")
    build(recipe, tmp_path / "ray", RayExecutor(shard_rows=10))
    assert_same_build(tmp_path / "ray", tmp_path / "local")


@register_stage
class FailsOnFlaggedRow(Stage):
    """Passes rows through, but raises while `flag` exists and the chunk holds triplet `row`."""

    name = "test_fails_on_flagged_row"
    row_wise = True

    class Params(StageParams):
        flag: str
        row: str
        error: str = "input"  # "input": an InputError (bad data), else a RuntimeError (a bug)

    def run(self, table):
        frame = table.collect()
        if Path(self.params.flag).exists() and self.params.row in frame["triplet_id"].to_list():
            if self.params.error == "input":
                raise InputError(Path(self.params.flag), f"bad row {self.params.row}", line=13)
            raise RuntimeError("boom")
        return StageOutput(kept=frame)


# Ray workers cannot import this test module: ship the test stage's class by value
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def with_failing_stage(recipe: Path, flag: Path, row: str, error: str = "input") -> None:
    recipe.write_text(recipe.read_text() + f'\n[[stages]]\nstage = "test_fails_on_flagged_row"\nid = "flaky"\n'
                      f'flag = "{flag}"\nrow = "{row}"\nerror = "{error}"\n')


def test_rerun_after_a_failed_shard_reuses_the_finished_shards(tmp_path, monkeypatch):
    recipe, flag = write_inputs(tmp_path, 45), tmp_path / "flag"
    with_failing_stage(recipe, flag, row="t025")  # to_questions keeps t000, t001, t008, ...: t025 is its 7th row
    monkeypatch.setattr(runner, "CHUNK_ROWS", 7)
    build(recipe, tmp_path / "local")
    flag.touch()
    with pytest.raises(InputError, match=r"flag:13: bad row t025") as raised:  # the stage's own error, not Ray's
        build(recipe, tmp_path / "ray", RayExecutor(workers=1, shard_rows=3))  # one at a time: shards 0, 1 finish
    assert type(raised.value) is InputError
    flag.unlink()
    build(recipe, tmp_path / "ray", RayExecutor(workers=1, shard_rows=3))
    assert_same_build(tmp_path / "ray", tmp_path / "local")
    flaky = [(e["shard"], e["action"]) for e in events(tmp_path / "ray") if e["stage"] == "flaky" and "shard" in e]
    # first run: shards 0, 1 computed, 2 failed (no marker); the rerun reuses 0, 1 and computes 2, 3 only
    assert flaky == [(0, "computed"), (1, "computed"), (0, "reused"), (1, "reused"), (2, "computed"), (3, "computed")]


def test_a_bug_in_a_stage_fails_the_build_at_once(tmp_path, monkeypatch):
    recipe, flag = write_inputs(tmp_path, 20), tmp_path / "flag"
    with_failing_stage(recipe, flag, row="t000", error="bug")
    flag.touch()
    with pytest.raises(RuntimeError, match="boom"):  # not retried: retries are for dead workers
        build(recipe, tmp_path / "ray", RayExecutor(shard_rows=5))
    assert not (tmp_path / "ray" / ".kbench" / "stages" / "06_flaky" / "done.json").exists()


def test_options_are_checked(tmp_path):
    from kbench.construct.executors import make_executor

    with pytest.raises(UserError, match="--workers must be at least 1"):
        RayExecutor(workers=0)
    with pytest.raises(UserError, match="no Ray cluster answers at 127.0.0.1:1"):  # at once, not after Ray's minutes
        RayExecutor(address="127.0.0.1:1")
    with pytest.raises(UserError, match="need --executor ray"):
        make_executor("local", workers=2)
    with pytest.raises(UserError, match="unknown executor 'slurm'"):
        make_executor("slurm")


def rebel_recipe(folder: Path, model: Path, device: str = "cpu") -> Path:
    docs = [{"docid": str(i), "title": f"Doc {i}", "text": f"{REBEL_SENTENCE} It is cold ." if i % 2 else "It is cold ."}
            for i in range(5)]
    (folder / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    recipe = folder / "rebel.toml"
    recipe.write_text(f"""
[pipeline]
name = "rebel"

[[stages]]
stage = "clean_documents"
path = "docs.jsonl"
min_words = 1

[[stages]]
stage = "extract_rebel"
model = "{model}"
batch_size = 2
num_beams = 1
max_new_tokens = 24
docs_per_part = 1
device = "{device}"
""")
    return recipe


def test_model_stage_runs_in_an_actor_pool_with_the_same_triplets(tmp_path, tiny_rebel):
    recipe = rebel_recipe(tmp_path, tiny_rebel)
    build(recipe, tmp_path / "local", cache="cache-local")  # own caches: the ray build must not read the parts
    build(recipe, tmp_path / "ray", RayExecutor(workers=2, shard_rows=2), cache="cache-ray")
    assert_same_build(tmp_path / "ray", tmp_path / "local")
    triplets = pl.read_parquet(tmp_path / "ray/.kbench/stages/01_extract_rebel/output.parquet")
    # the tiny model says its one triplet string for every sentence; only docs 1 and 3 contain the names
    assert set(triplets.filter(pl.col("object_start").is_not_null())["doc_id"]) == {"1", "3"}
    shards = [e for e in events(tmp_path / "ray") if e["stage"] == "extract_rebel" and "shard" in e]
    assert sorted(e["shard"] for e in shards) == [0, 1, 2]  # 5 documents, 2 per shard


def test_model_stage_on_cuda_asks_ray_for_a_gpu(tmp_path, tiny_rebel):
    recipe = rebel_recipe(tmp_path, tiny_rebel, device="cuda")
    with pytest.raises(UserError, match="runs on cuda but the Ray cluster has no GPU"):
        build(recipe, tmp_path / "ray", RayExecutor(shard_rows=2))


def test_the_local_executor_never_imports_ray(tmp_path):
    import subprocess

    recipe = write_inputs(tmp_path, 10)
    code = ("import sys; from pathlib import Path; from kbench.construct.recipe import load_recipe; "
            "from kbench.construct.executors import make_executor; from kbench.construct.runner import run_recipe; "
            f"run_recipe(load_recipe(Path({str(recipe)!r})), Path({str(tmp_path / 'run')!r}), "
            f"cache_dir=Path({str(tmp_path / 'cache')!r}), executor=make_executor('local')); "
            "print('ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
