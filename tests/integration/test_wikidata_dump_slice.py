"""A slice of Wikidata's truthy dump, imported with `kbench wikidata import`, against the inputs' own store.

The slice is written here in `latest-truthy.nt`'s exact line format from real LAMA T-REx P19 facts:
a direct claim per fact, an `rdfs:label` per entity, `P31 Q5` per person. Unlike the inputs, the
slice holds a second birthplace for some people (so single_answer must drop them) and lacks some
people altogether (so verify_wikidata must drop them). Against the store built from the inputs the
same rows pass: that is what "checked against the inputs only" means.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO_ROOT, run_kbench
from sparql_servers import lama_check_recipe
from kbench.construct.context import StageContext
from kbench.construct.stages.domain_taxonomy import DomainTaxonomy
from kbench.construct.stages.single_answer import SingleAnswer
from kbench.construct.stages.verify_wikidata import VerifyWikidata
from kbench.io import sha256_file

ENTITY, DIRECT = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
FACTS, TWO_BIRTHPLACES, ABSENT = 80, range(0, 30, 3), range(40, 45)


def _label(text: str) -> str:
    return json.dumps(text, ensure_ascii=False) + "@en"  # N-Triples escapes are JSON's for these labels


@pytest.fixture(scope="module")
def facts(shared_data) -> pl.DataFrame:
    rows = []
    with open(shared_data / "lama_trex" / "TREx" / "P19.jsonl", encoding="utf-8") as fh:
        for line in fh:
            fact = json.loads(line)
            if fact["sub_uri"] not in {r["subject_id"] for r in rows}:
                rows.append({"relation": "P19", "subject_id": fact["sub_uri"], "object_id": fact["obj_uri"],
                             "subject": fact["sub_label"], "object": fact["obj_label"], "doc_uri": None})
            if len(rows) == FACTS:
                break
    return pl.DataFrame(rows, schema_overrides={"doc_uri": pl.Utf8})


@pytest.fixture(scope="module")
def slice_store(facts, tmp_path_factory) -> tuple[Path, Path]:
    """(slice.nt, the store folder `kbench wikidata import` made from it)."""
    work = tmp_path_factory.mktemp("truthy")
    rows = facts.to_dicts()
    cities = [r["object_id"] for r in rows]
    lines = {f"<{ENTITY}P19> <{LABEL}> {_label('place of birth')} ."}
    for i, r in enumerate(rows):
        if i in ABSENT:
            continue
        s, o = f"<{ENTITY}{r['subject_id']}>", f"<{ENTITY}{r['object_id']}>"
        lines |= {f"{s} <{DIRECT}P19> {o} .", f"{s} <{DIRECT}P31> <{ENTITY}Q5> .", f"{s} <{LABEL}> {_label(r['subject'])} .",
                  f"{o} <{LABEL}> {_label(r['object'])} ."}
        if i in TWO_BIRTHPLACES:  # Wikidata holds another birthplace the inputs never mention
            other = next(c for c in cities if c != r["object_id"])
            lines.add(f"{s} <{DIRECT}P19> <{ENTITY}{other}> .")
    for r in rows:  # every birthplace exists in the slice, also those of absent people
        lines.add(f"<{ENTITY}{r['object_id']}> <{LABEL}> {_label(r['object'])} .")
    nt = work / "slice.nt"
    nt.write_text("".join(line + "\n" for line in sorted(lines)), encoding="utf-8")
    assert 200 <= len(lines) <= 500
    store = work / "wikidata"
    done = run_kbench("wikidata", "import", str(nt), "--store", str(store))
    assert done.returncode == 0, done.stderr
    return nt, store


def _ctx(tmp_path: Path) -> StageContext:
    return StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "cache")


def test_the_slice_drops_what_wikidata_contradicts(facts, slice_store, tmp_path):
    nt, store = slice_store
    ctx = _ctx(tmp_path)
    verified = VerifyWikidata(VerifyWikidata.Params(store=str(store)), ctx).run(facts.lazy())
    rejected = verified.rejected.collect()
    absent = {facts["subject_id"][i] for i in ABSENT}
    assert set(rejected["subject_id"]) == absent and set(rejected["reason"]) == {"subject_not_in_wikidata"}
    source = verified.details["knowledge_source"]
    assert source["kind"] == "import" and source["description"] == "imported Wikidata dump or subset"
    assert source["files"] == [{"file": "slice.nt", "sha256": sha256_file(nt)}]

    single = SingleAnswer(SingleAnswer.Params(store=str(store)), ctx).run(verified.kept)
    dropped = single.rejected.collect()
    assert set(dropped["subject_id"]) == {facts["subject_id"][i] for i in TWO_BIRTHPLACES}
    assert set(dropped["reason"]) == {"multiple_answers"}
    assert single.kept.collect().height == FACTS - len(ABSENT) - len(TWO_BIRTHPLACES)


def test_the_inputs_own_store_passes_the_same_rows(facts, tmp_path):
    own = tmp_path / "own.nt"  # what a store written from the inputs holds: exactly their facts and labels
    own.write_text("".join(f"<{ENTITY}{r['subject_id']}> <{DIRECT}P19> <{ENTITY}{r['object_id']}> .\n"
                           f"<{ENTITY}{r['subject_id']}> <{LABEL}> {_label(r['subject'])} .\n"
                           f"<{ENTITY}{r['object_id']}> <{LABEL}> {_label(r['object'])} .\n"
                           for r in facts.to_dicts()) + f"<{ENTITY}P19> <{LABEL}> {_label('place of birth')} .\n",
                   encoding="utf-8")
    single = SingleAnswer(SingleAnswer.Params(store=str(own)), _ctx(tmp_path)).run(facts.lazy())
    assert single.rejected.collect().height == 0


def test_people_get_a_domain_from_the_maple_mapping(facts, slice_store, tmp_path):
    """Q5 (human) is in MAPLE's mapping: biography triplets are not dropped as `no_domain`."""
    mapping = REPO_ROOT / "pipelines" / "mappings" / "maple-domains.toml"
    stage = DomainTaxonomy(DomainTaxonomy.Params(store=str(slice_store[1]), mapping=str(mapping)), _ctx(tmp_path))
    out = stage.run(facts.lazy())
    kept, rejected = out.kept.collect(), out.rejected.collect()
    assert set(rejected["subject_id"]) == {facts["subject_id"][i] for i in ABSENT}  # no P31 at all in the slice
    assert set(kept["domain"]) == {"history"} and kept.height == FACTS - len(ABSENT)
    assert out.details["knowledge_source"]["kind"] == "import"


def test_a_store_folder_without_an_import_record_is_refused(tmp_path):
    from kbench.errors import UserError

    (tmp_path / "store").mkdir()
    with pytest.raises(UserError, match="kbench wikidata import"):
        VerifyWikidata(VerifyWikidata.Params(store=str(tmp_path / "store")), _ctx(tmp_path)).input_files()


def test_a_build_pointed_at_the_imported_slice_records_it_and_drops_what_it_contradicts(
        facts, slice_store, shared_data, tmp_path):
    nt, store = slice_store
    recipe = lama_check_recipe(tmp_path / "mini.toml", shared_data, ["P19"], 60, f'store = "{store.as_posix()}"',
                               stage_ids=True)
    out = tmp_path / "out"
    done = run_kbench("build", str(recipe), "--out", str(out))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    recorded = manifest["knowledge_sources"]
    assert set(recorded) == {"verify", "single"} and manifest["judges"] == {}
    assert recorded["single"]["kind"] == "import" and recorded["single"]["files"] == [{"file": "slice.nt", "sha256": sha256_file(nt)}]
    stats = {s["id"]: s for s in json.loads((out / "stats.json").read_text())["stages"]}
    assert stats["verify"]["details"]["knowledge_source"] == recorded["verify"]
    unverified = pl.read_parquet(out / "rejected" / "verify.parquet")
    assert {facts["subject_id"][i] for i in ABSENT} <= set(unverified["subject_id"])
    ambiguous = pl.read_parquet(out / "rejected" / "single.parquet")
    assert set(ambiguous["reason"]) == {"multiple_answers"} and ambiguous.height > 0
    assert set(ambiguous["subject_id"]) <= {facts["subject_id"][i] for i in TWO_BIRTHPLACES}


def test_each_import_into_a_store_is_recorded(slice_store, tmp_path):
    import shutil

    nt, store = slice_store
    copy = tmp_path / "wikidata"
    shutil.copytree(store, copy)
    more = tmp_path / "more.nt"
    more.write_text(f"<{ENTITY}Q42> <{LABEL}> {_label('Douglas Adams')} .\n", encoding="utf-8")
    done = run_kbench("wikidata", "import", str(more), "--store", str(copy))
    assert done.returncode == 0, done.stderr
    record = json.loads((copy / "kbench-import.json").read_text())
    assert [entry["file"] for entry in record["imports"]] == ["slice.nt", "more.nt"]
    assert record["imports"][1]["sha256"] == sha256_file(more)
