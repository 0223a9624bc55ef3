"""The LAMA subset writer and the verify_wikidata / single_answer stages on small inline inputs."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from pydantic import ValidationError

from kbench.construct.context import StageContext
from kbench.construct.stages.single_answer import SingleAnswer
from kbench.construct.stages.verify_wikidata import VerifyWikidata
from kbench.errors import InputError
from kbench.sources import sparql_client
from kbench.sources.wikidata_store import SubsetInputs, write_lama_subset
from tests.lama_miniature import lama_fact


def test_subset_is_wikidata_shaped_and_deterministic(lama, tmp_path):
    counts = write_lama_subset(lama, tmp_path / "a.nt")
    text = (tmp_path / "a.nt").read_text(encoding="utf-8")
    wd, wdt = "<http://www.wikidata.org/entity/", "<http://www.wikidata.org/prop/direct/"
    assert f"{wd}Q10> {wdt}P19> {wd}Q20> ." in text
    assert f"{wd}Q11> {wdt}P19> {wd}Q22> ." in text  # AutoPrompt facts are facts too
    assert f'{wd}Q10> {wdt}P569> "1815-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .' in text
    assert f'{wd}Q11> {wdt}P569> "1816-12-10T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .' in text
    assert f'{wd}Q11> <http://www.w3.org/2000/01/rdf-schema#label> "Bob \\"the \\\\ builder\\""@en .' in text
    assert f'{wd}Q20> <http://www.w3.org/2004/02/skos/core#altLabel> "City of Light"@en .' in text
    assert f'{wd}Q20> <http://www.w3.org/2004/02/skos/core#altLabel> "Paris 😀"@en .' in text
    assert f'{wd}Q20> <http://www.w3.org/2004/02/skos/core#altLabel> "Paris"@en .' not in text  # the label
    assert f'{wd}P19> <http://schema.org/description> "where\\nborn"@en .' in text
    assert f"{wd}P19> <http://wikiba.se/ontology#directClaim> {wdt}P19> ." in text
    assert "Q12" not in text and "Evil" not in text
    assert counts["triples"] == len(text.splitlines())
    write_lama_subset(lama, tmp_path / "b.nt")
    assert (tmp_path / "b.nt").read_bytes() == (tmp_path / "a.nt").read_bytes()


def test_subset_input_errors_name_the_file(lama, tmp_path):
    (lama.aliases).write_text("not-an-id\tx\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"aliases.txt:1"):
        write_lama_subset(lama, tmp_path / "x.nt")
    with pytest.raises(InputError, match="folder not found"):
        SubsetInputs(trex_dir=tmp_path / "nope").files()


@pytest.fixture
def ctx(tmp_path) -> StageContext:
    return StageContext(recipe_path=tmp_path / "recipe.toml", run_dir=tmp_path / "run", seed=0,
                        cache_dir=tmp_path / "cache")


@pytest.fixture
def store_file(lama, tmp_path) -> Path:
    write_lama_subset(lama, tmp_path / "subset.nt")
    return tmp_path / "subset.nt"


FACTS = pl.DataFrame({
    "id": [f"f{i}" for i in range(9)],
    "relation": ["P19", "P19", "P19", "P19", "P19", "P19", "P999", "P569", "Q19"],
    "relation_label": [None, "born in", "", None, None, None, None, "date of birth", None],
    "subject": ["", "Bob", "x", "x", "x", "Cy", "x", "Ada", "x"],
    "subject_id": ["Q10", "Q11", "Q404", None, "Q1 } #", "Q13", "Q10", "Q10", "Q10"],
    "object": ["Paris", "Rome", "x", "x", "x", "", "x", "1815", "x"],
    "object_id": ["Q20", "Q21", "Q20", "Q20", "Q20", "Q405", "Q20", None, "Q20"],
})


def _reasons(out) -> dict[str, str]:
    rejected = out.rejected.collect()
    return dict(zip(rejected["id"].to_list(), rejected["reason"].to_list()))


def test_verify_wikidata_keeps_existing_ids_and_fills_labels(ctx, store_file):
    stage = VerifyWikidata(VerifyWikidata.Params(store=str(store_file)), ctx)
    assert stage.input_files() == [store_file]
    out = stage.run(FACTS.lazy())
    kept = out.kept.collect()
    assert kept["id"].to_list() == ["f0", "f1", "f7"]
    assert _reasons(out) == {"f2": "subject_not_in_wikidata", "f3": "missing_id", "f4": "invalid_id",
                             "f5": "object_not_in_wikidata", "f6": "relation_not_in_wikidata", "f8": "invalid_id"}
    row0 = kept.row(0, named=True)
    assert row0["subject"] == "Ada" and row0["relation_label"] == "place of birth"  # filled where empty
    assert kept.row(1, named=True)["relation_label"] == "born in"  # kept where present
    assert kept.columns == FACTS.columns and out.rejected.collect().columns == FACTS.columns + ["reason"]


def test_single_answer_counts_distinct_objects(ctx, store_file):
    facts = pl.DataFrame({"id": ["a", "b", "c", "d"], "relation": ["P19", "P19", "P20", "P19"],
                          "subject_id": ["Q10", "Q11", "Q10", "Q1\n"]})
    out = SingleAnswer(SingleAnswer.Params(store=str(store_file)), ctx).run(facts.lazy())
    assert out.kept.collect()["id"].to_list() == ["a"]
    assert _reasons(out) == {"b": "multiple_answers", "c": "no_answer_in_store", "d": "invalid_id"}


def test_google_re_rows_are_checked_by_their_wikidata_property(ctx, store_file):
    # relation ids of Google-RE (google_re:...) are not Wikidata's: the stages query `wikidata_property`
    facts = pl.DataFrame({"id": ["g1", "g2", "t1"], "relation": ["google_re:date_of_birth", "google_re:place_of_birth", "P19"],
                          "wikidata_property": ["P569", "P19", "P19"], "relation_label": ["", "place of birth", ""],
                          "subject": ["Ada", "Bob", "Ada"], "subject_id": ["Q10", "Q11", "Q10"],
                          "object": ["1815", "Rome", "Paris"], "object_id": [None, "Q21", "Q20"]})
    verified = VerifyWikidata(VerifyWikidata.Params(store=str(store_file)), ctx).run(facts.lazy()).kept.collect()
    assert verified["id"].to_list() == ["g1", "g2", "t1"]
    assert verified["relation"].to_list() == facts["relation"].to_list()  # ids stay as they were
    assert verified["relation_label"].to_list()[0] == "date of birth"  # filled from the property P569
    out = SingleAnswer(SingleAnswer.Params(store=str(store_file)), ctx).run(verified.lazy())
    assert out.kept.collect()["id"].to_list() == ["g1", "t1"]
    assert _reasons(out) == {"g2": "multiple_answers"}  # Q11 has two birthplaces in the store


def test_subset_from_builds_the_store_once(ctx, lama):
    settings = {"trex_dir": str(lama.trex_dir), "relations": str(lama.relations), "aliases": str(lama.aliases),
                "autoprompt_dir": str(lama.autoprompt_dir), "google_re_dir": str(lama.google_re_dir)}
    params = VerifyWikidata.Params(subset_from=settings)
    stage = VerifyWikidata(params, ctx)
    assert set(stage.input_files()) == set(lama.files()) and len(lama.files()) == 6
    before = sparql_client.SESSION_STATS.queries_sent
    first = stage.run(FACTS.lazy()).kept.collect()
    sent = sparql_client.SESSION_STATS.queries_sent - before
    assert sent == 1  # 9 distinct ids, one VALUES query
    assert len(list((ctx.cache_dir / "wikidata" / "stores").iterdir())) == 1
    again = VerifyWikidata(params, ctx).run(FACTS.lazy()).kept.collect()
    assert again.equals(first)
    assert len(list((ctx.cache_dir / "wikidata" / "stores").iterdir())) == 1  # the same store, reused
    assert len(list((ctx.cache_dir / "wikidata" / "subsets").iterdir())) == 1


def test_params_need_exactly_one_source_and_forbid_typos():
    with pytest.raises(ValidationError, match="exactly one"):
        VerifyWikidata.Params()
    with pytest.raises(ValidationError, match="exactly one"):
        SingleAnswer.Params(store="a.nt", subset_from={"trex_dir": "x"})
    with pytest.raises(ValidationError):
        VerifyWikidata.Params(store="a.nt", batch_sise=10)
    with pytest.raises(ValidationError):
        VerifyWikidata.Params(subset_from={"trex": "x"})
    with pytest.raises(ValidationError):
        VerifyWikidata.Params(store="a.nt", batch_size=0)


def test_import_is_all_or_nothing(store_file, tmp_path):
    from kbench.sources.wikidata_store import import_rdf

    bad = tmp_path / "bad.nt"
    bad.write_text(store_file.read_text(encoding="utf-8") + "<http://a> <http://b> .\n", encoding="utf-8")
    with pytest.raises(InputError, match="invalid RDF"):
        import_rdf(bad, tmp_path / "new-store")
    assert not (tmp_path / "new-store").exists()  # no half-built store left behind

    count = import_rdf(store_file, tmp_path / "store")
    assert count == len(store_file.read_text(encoding="utf-8").splitlines())
    with pytest.raises(InputError, match="invalid RDF"):
        import_rdf(bad, tmp_path / "store")  # into an existing store: one transaction
    extra = tmp_path / "extra.ttl"
    extra.write_text('<http://www.wikidata.org/entity/Q77> <http://www.w3.org/2000/01/rdf-schema#label> "x"@en .\n')
    assert import_rdf(extra, tmp_path / "store") == count + 1


def test_subset_skips_unusable_rows_instead_of_crashing(lama, tmp_path):
    (lama.trex_dir / "P19.jsonl").write_text(
        json.dumps(lama_fact("Q30", None, "Q31", 7)) + "\n"
        + json.dumps(lama_fact("Q32", "lone \ud800 surrogate", "Q33", ["list"])) + "\n"
        + json.dumps(lama_fact(["Q34"], "x", {"id": "Q35"}, "y")) + "\n", encoding="utf-8")
    (lama.google_re_dir / "date_of_birth_test.jsonl").write_text(json.dumps(
        {"pred": ["/people/person/date_of_birth"], "sub_w": "Q30", "sub_label": "a", "obj_label": "b"}) + "\n")
    with pytest.raises(InputError, match=r"date_of_birth_test.jsonl:1.*unknown Google-RE predicate"):
        write_lama_subset(lama, tmp_path / "x.nt")
    lama.google_re_dir = None
    write_lama_subset(lama, tmp_path / "x.nt")
    text = (tmp_path / "x.nt").read_text(encoding="utf-8")
    assert "entity/Q30> <http://www.wikidata.org/prop/direct/P19> <http://www.wikidata.org/entity/Q31>" in text
    assert "Q30> <http://www.w3.org/2000/01/rdf-schema#label>" not in text and "surrogate" not in text
    assert "Q34" not in text and "Q35" not in text
