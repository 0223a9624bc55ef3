"""Row-wise stages run chunk by chunk by the build runner: same tables and stats as one shot.

The recipe is the MAPLE tail on an inline triplet table (load_triplets -> link_wikidata ->
quality_filters -> triplets_to_facts -> attach_aliases -> to_questions), with 7-row chunks so
every stage sees several chunks and a partial last one.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from kbench.construct import runner
from kbench.construct.recipe import load_recipe
from kbench.construct.runner import run_recipe
from kbench.construct.stage import Stage, StageOutput, register_stage, stage_registry
from kbench.errors import InputError

ROW_WISE = ["link_wikidata", "quality_filters", "triplets_to_facts", "attach_aliases", "to_questions"]
DOCS = [{"title": "Graham Land", "uri": "Q618370", "text": "...",
         "entities": [{"uri": "Q51", "surfaceform": "Antarctica"}, {"uri": "Q142", "surfaceform": "France"},
                      {"uri": "Q90", "surfaceform": "Paris"}, {"uri": "Q2", "surfaceform": "Springfield"},
                      {"uri": "Q3", "surfaceform": "springfield"}],
         "triples": [{"predicate": {"uri": "P30", "surfaceform": "continent"}},
                     {"predicate": {"uri": "P17", "surfaceform": "country"}},
                     {"predicate": {"uri": "P461", "surfaceform": "opposite of"}}]},
        {"title": "Paris", "uri": "Q90", "text": "..."}]
# (subject, relation label, object, object kind): kept rows and every kind of drop, repeated below
PATTERNS = [("Graham Land", "continent", "Antarctica", "entity"), ("Paris", "country", "France", "entity"),
            ("Graham Land", "point in time", "1913", "literal"), ("Graham Land", "continent", "Atlantis", "entity"),
            ("Springfield", "continent", "Antarctica", "entity"), ("Paris", "opposite of", "Antarctica", "entity"),
            ("Paris", "continent", "Paris", "entity"), ("Graham Land", "country", "", "entity")]


def write_inputs(folder: Path, rows: int) -> Path:
    (folder / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    (folder / "templates.jsonl").write_text(json.dumps({"relation": "P30", "template": "[X] is in [Y] ."}) + "\n")
    (folder / "aliases.tsv").write_text("Q51\tAntarctica\tthe Antarctic\nQ90\tParis\tCity of Light\n")
    picked = [PATTERNS[i % len(PATTERNS)] for i in range(rows)]
    pl.DataFrame({"triplet_id": [f"t{i:03d}" for i in range(rows)], "subject": [p[0] for p in picked],
                  "relation_label": [p[1] for p in picked], "object": [p[2] for p in picked],
                  "object_kind": [p[3] for p in picked], "sentence_index": pl.Series(range(rows), dtype=pl.Int32)},
                 schema_overrides={c: pl.String for c in ("triplet_id", "subject", "relation_label", "object", "object_kind")},
                 ).write_parquet(folder / "triplets.parquet")
    recipe = folder / "tail.toml"
    recipe.write_text("""
[pipeline]
name = "tail"

[[stages]]
stage = "load_triplets"
path = "triplets.parquet"

[[stages]]
stage = "link_wikidata"
documents = "docs.jsonl"

[[stages]]
stage = "quality_filters"

[[stages]]
stage = "triplets_to_facts"
templates = "templates.jsonl"

[[stages]]
stage = "attach_aliases"
aliases_file = "aliases.tsv"

[[stages]]
stage = "to_questions"
""")
    return recipe


def build(recipe: Path, out: Path):
    return run_recipe(load_recipe(recipe), out, cache_dir=recipe.parent / "cache")


def outputs(run_dir: Path) -> dict[str, pl.DataFrame]:
    tables = {p.parent.name: pl.read_parquet(p) for p in sorted((run_dir / ".kbench" / "stages").glob("*/output.parquet"))}
    tables.update({f"rejected/{p.stem}": pl.read_parquet(p) for p in sorted((run_dir / "rejected").glob("*.parquet"))})
    return tables


def stats(run_dir: Path) -> dict:
    return json.loads((run_dir / "stats.json").read_text())


def test_stages_marked_row_wise_honestly():
    registry = stage_registry()
    assert all(registry[name].row_wise for name in ROW_WISE + ["load_triplets", "clean_documents",
                                                                "load_annotated_triplets", "extract_rebel"])
    for name in ("frequency_bin", "relation_cap", "single_answer", "split", "write_dataset"):
        assert not registry[name].row_wise, name  # they rank, cap, dedup or group across rows


def test_chunked_equals_single_shot(tmp_path, monkeypatch):
    recipe = write_inputs(tmp_path, 45)
    monkeypatch.setattr(runner, "CHUNK_ROWS", 7)
    chunked = build(recipe, tmp_path / "chunked")
    for name in ROW_WISE:  # the same stages through the whole-table (lazy plan) path
        monkeypatch.setattr(stage_registry()[name], "row_wise", False)
    single = build(recipe, tmp_path / "single")

    assert stats(tmp_path / "chunked") == stats(tmp_path / "single")
    got, want = outputs(tmp_path / "chunked"), outputs(tmp_path / "single")
    assert got.keys() == want.keys() and len(got) == 6 + 3  # load, link and quality reject rows
    for name in want:
        assert got[name].equals(want[name]), name  # same rows, same order, same types
    final = got["05_to_questions"]  # patterns 0 and 1 of every 8 rows survive
    assert final["triplet_id"].to_list() == [f"t{i:03d}" for k in range(0, 45, 8) for i in (k, k + 1)]
    assert final.row(0, named=True)["answers"] == ["Antarctica", "the Antarctic"]
    assert {r.id: r.dropped for r in chunked.stages[:3]} == {
        "load_triplets": {"missing_value": 5},
        "link_wikidata": {"object_is_literal": 6, "object_unlinked": 6, "subject_ambiguous": 6, "self_loop": 5},
        "quality_filters": {"uninformative_relation": 5}}
    # several chunks really ran (one row group each): 45 rows -> six of 7 and a partial one, minus the drops
    groups = pq.ParquetFile(tmp_path / "chunked/.kbench/stages/00_load_triplets/output.parquet").metadata
    assert [groups.row_group(i).num_rows for i in range(groups.num_row_groups)] == [7, 6, 6, 6, 6, 6, 3]
    assert single.stages[-1].rows_out == chunked.stages[-1].rows_out == 12


def test_empty_input_gives_empty_tables_with_schema(tmp_path, monkeypatch):
    recipe = write_inputs(tmp_path, 0)
    monkeypatch.setattr(runner, "CHUNK_ROWS", 7)
    result = build(recipe, tmp_path / "run")
    assert [s.rows_out for s in result.stages] == [0] * 6
    final = pl.read_parquet(tmp_path / "run/.kbench/stages/05_to_questions/output.parquet")
    (tmp_path / "full").mkdir()
    build(write_inputs(tmp_path / "full", 8), tmp_path / "full_run")
    want = pl.read_parquet(tmp_path / "full_run/.kbench/stages/05_to_questions/output.parquet")
    assert final.height == 0 and final.schema == want.schema


def test_resume_reuses_chunked_stages_and_a_changed_param_recomputes_from_there(tmp_path, monkeypatch):
    recipe = write_inputs(tmp_path, 20)
    monkeypatch.setattr(runner, "CHUNK_ROWS", 7)
    first = build(recipe, tmp_path / "run")
    again = build(recipe, tmp_path / "run")
    assert all(s.reused for s in again.stages)
    assert [s.stats() for s in again.stages] == [s.stats() for s in first.stages]
    recipe.write_text(recipe.read_text().replace('stage = "quality_filters"', 'stage = "quality_filters"\nmax_object_chars = 5'))
    changed = build(recipe, tmp_path / "run")
    assert [s.reused for s in changed.stages] == [True, True, False, False, False, False]
    assert changed.stages[2].dropped["object_too_long"] > 0


@register_stage
class FailsOnSecondChunk(Stage):
    name = "test_fails_on_second_chunk"
    row_wise = True

    def run(self, table):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == 2:
            raise RuntimeError("boom")
        return StageOutput(kept=table)


def test_a_failing_chunk_leaves_no_output_and_no_marker(tmp_path, monkeypatch):
    recipe = write_inputs(tmp_path, 20)
    recipe.write_text(recipe.read_text().split("[[stages]]\nstage = \"link_wikidata\"")[0]
                      + '[[stages]]\nstage = "test_fails_on_second_chunk"\n')
    monkeypatch.setattr(runner, "CHUNK_ROWS", 7)
    with pytest.raises(RuntimeError, match="boom"):
        build(recipe, tmp_path / "run")
    stage_dir = tmp_path / "run/.kbench/stages/01_test_fails_on_second_chunk"
    assert not stage_dir.exists() or list(stage_dir.iterdir()) == []


def test_load_triplets_names_file_and_missing_columns(tmp_path):
    recipe = write_inputs(tmp_path, 3)
    pl.DataFrame({"subject": ["a"], "object": ["b"]}).write_parquet(tmp_path / "triplets.parquet")
    with pytest.raises(InputError, match=r"triplets.parquet.*triplet_id, relation_label"):
        build(recipe, tmp_path / "run")
