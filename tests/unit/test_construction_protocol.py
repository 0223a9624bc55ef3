"""The construction protocol: `[pipeline] protocol` is validated, each stage that stands in for a
step of the paper's procedure returns exactly its entries from its params, the run options and
what it found (`details`), and paper defaults return none. The runner joins them into the
manifest and the card `kbench build` writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbench.construct.protocol_section import render_protocol
from kbench.construct.context import StageContext
from kbench.construct.protocols import construction_protocol, frequency_stand_in
from kbench.construct.recipe import load_recipe
from kbench.construct.runner import run_recipe
from kbench.construct.stage import stage_registry
from kbench.errors import InputError
from kbench.protocol import ProtocolRecord, read_protocol

EVOLVING_ROWS = [{"subject": "Ada", "subject_id": "Q1", "relation": "P108", "object": "Acme", "object_id": "Q100"}]


def _ctx(tmp_path: Path, **options) -> StageContext:
    return StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, options=options)


def _ids(stage_name: str, params: dict, tmp_path: Path, details: dict | None = None, **options) -> list[str]:
    cls = stage_registry()[stage_name]
    stage = cls(cls.Params.model_validate(params), _ctx(tmp_path, **options))
    return [d.id for d in stage.deviations(details or {})]


def test_unknown_protocol_names_the_file_and_key(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('[pipeline]\nname = "x"\nprotocol = "maple"\n\n[[stages]]\nstage = "split"\n')
    with pytest.raises(InputError) as err:
        load_recipe(recipe)
    assert "r.toml" in str(err.value) and "pipeline.protocol" in str(err.value) and "maple-benchmark" in str(err.value)


def test_packaged_recipes_name_their_protocol():
    pipelines = Path(__file__).resolve().parents[2] / "pipelines"
    names = {p.name: load_recipe(p).header.protocol for p in sorted(pipelines.glob("*.toml"))}
    assert names == {"evolving.toml": "evolvingqa", "lama-trex.toml": "lama-derived", "lama.toml": "lama-probe",
                     "left-textbook.toml": "left-textbook", "maple-wiki.toml": "maple-benchmark"}


MAPLE_DEFAULTS = {"source": "pageviews", "unit": "entity", "percentages": [10, 20, 40, 20, 10]}


@pytest.mark.parametrize("params, details, expected", [
    (MAPLE_DEFAULTS, {"units_moved_by_ties": 0}, []),
    ({**MAPLE_DEFAULTS, "options": {"months": 6}}, {}, ["frequency-pageview-window"]),
    (MAPLE_DEFAULTS, {"source": {"entities": 5, "titles_from_labels": 2}}, ["frequency-titles-from-labels"]),
    ({}, {}, ["frequency-source-evidence-count", "frequency-bins-over-facts"]),
    ({**MAPLE_DEFAULTS, "source": "document_mentions", "options": {"documents": "docs"}}, {},
     ["frequency-source-document-mentions"]),
    ({**MAPLE_DEFAULTS, "percentages": [10, 20, 40, 10, 20]}, {"units_moved_by_ties": 3, "units_ranked": 9},
     ["frequency-percentages", "bin-ties-kept-whole"]),
])
def test_frequency_bin_entries(params, details, expected, tmp_path):
    assert _ids("frequency_bin", params, tmp_path, details) == expected


SUBSET = {"subset_from": {"rebel_documents": "docs.jsonl"}}


@pytest.mark.parametrize("stage, prefix", [("verify_wikidata", "existence"), ("single_answer", "single-answer")])
def test_wikidata_checks_say_what_they_ran_against(stage, prefix, tmp_path):
    inputs = {"knowledge_source": {"kind": "inputs"}}
    assert _ids(stage, SUBSET, tmp_path, inputs) == [f"{prefix}-store-from-inputs"]
    assert _ids(stage, {"store": "wd.nt"}, tmp_path, {"knowledge_source": {"kind": "import"}}) == []
    live = {"knowledge_source": {"kind": "endpoint", "url": "https://query.wikidata.org/sparql"}}
    assert _ids(stage, SUBSET, tmp_path, live) == []
    other = {"knowledge_source": {"kind": "endpoint", "url": "http://127.0.0.1:9/sparql"}}
    assert _ids(stage, SUBSET, tmp_path, other) == [f"{prefix}-endpoint-not-wikidata"]
    # a stage reused from a marker without details still knows its source from its params and options
    assert _ids(stage, SUBSET, tmp_path, {}, sparql_endpoint="http://127.0.0.1:9/sparql") == [f"{prefix}-endpoint-not-wikidata"]


def test_domain_taxonomy_names_the_domains_kbench_chose(tmp_path):
    (tmp_path / "map.toml").write_text('[domains]\nscience = ["Q7187"]\nsports = ["Q349"]\n')
    cls = stage_registry()["domain_taxonomy"]
    stage = cls(cls.Params(mapping="map.toml", store="wd.nt"), _ctx(tmp_path))
    [mapping] = stage.deviations({"knowledge_source": {"kind": "import"}})
    assert mapping.id == "domain-taxonomy-kbench-mapping" and "kbench chose: sports" in mapping.kbench
    ids = [d.id for d in stage.deviations({"knowledge_source": {"kind": "inputs"}})]
    assert ids == ["domain-taxonomy-kbench-mapping", "domain-classes-store-from-inputs"]


@pytest.mark.parametrize("stage, params, expected", [
    ("load_lama", {"trex": "t", "google_re": "g"}, []),
    ("load_lama", {"trex": "t", "relations": ["P19"], "max_per_relation": 5},
     ["google-re-not-loaded", "lama-relations-subset", "lama-rows-limited"]),
    ("relation_cap", {}, []),
    ("relation_cap", {"max_per_relation": 100}, ["relation-cap"]),
    ("clean_documents", {"path": "d"}, []),
    ("clean_documents", {"path": "d", "min_words": 50, "limit": 10}, ["min-words", "documents-limited"]),
    ("load_annotated_triplets", {}, ["triplets-from-annotations"]),
    ("link_wikidata", {"documents": "d"}, ["linking-own-index"]),
    ("corpus_presence", {"corpus": "c"}, ["corpus-presence-own-corpus"]),
    ("load_textbook", {"books": ["data:openstax_us_history"]}, ["gold-paragraphs-section"]),
    ("load_textbook", {"books": ["data:openstax_american_government_3e"], "dev_max_chapter": 5},
     ["american-government-3e", "gold-paragraphs-section", "dev-chapters"]),
    ("textbook_statements", {}, ["statements-by-rule"]),
    ("evolving_snapshots", {"old": "a.jsonl", "new": "b.jsonl"}, ["snapshots-as-fact-tables"]),
    ("evolving_snapshots", {"derive": {"trex": "t", "autoprompt": "a"}}, ["snapshots-as-fact-tables", "synthetic-snapshot-edits"]),
    ("to_questions", {}, []),
    ("split", {"train": 0.0, "dev": 0.0, "test": 1.0}, []),
])
def test_stage_entries_follow_their_params(stage, params, expected, tmp_path):
    assert _ids(stage, params, tmp_path) == expected


def test_frequency_stand_in_note():
    protocol = construction_protocol("maple-benchmark")
    assert frequency_stand_in(protocol) is None
    assert "unknown provenance" in frequency_stand_in(None)
    block = {**protocol.block(), "faithful": False, "deviations": [
        {"id": "frequency-source-evidence-count", "paper": "pageviews", "kbench": "evidence", "effect": "bins"}]}
    note = frequency_stand_in(ProtocolRecord.from_block(block, "manifest.json"))
    assert "stand-in for MAPLE's pageview bins (frequency-source-evidence-count)" in note
    assert "Head / tail differences" in render_protocol(ProtocolRecord.from_block(block, "manifest.json"))
    assert "Protocol not recorded" in render_protocol(None)


def test_the_build_writes_the_block_to_the_manifest_and_its_own_card(tmp_path):
    for name, rows in (("old", EVOLVING_ROWS), ("new", EVOLVING_ROWS)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = tmp_path / "evo.toml"
    recipe.write_text('[pipeline]\nname = "evo"\nconfig = "evolving"\nprotocol = "evolvingqa"\n\n'
                      '[[stages]]\nstage = "evolving_snapshots"\nold = "old.jsonl"\nnew = "new.jsonl"\n\n'
                      '[[stages]]\nstage = "write_dataset"\nschema_name = "qa_item.v1.json"\n')
    run_recipe(load_recipe(recipe), tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    protocol = read_protocol(manifest, "manifest.json")
    assert protocol.name == "evolvingqa" and [d.id for d in protocol.deviations] == ["snapshots-as-fact-tables"]
    card = (tmp_path / "run" / "README.md").read_text()
    assert "**1 deviation from evolvingqa**" in card and "`snapshots-as-fact-tables`" in card

    # a recipe that names no paper says so, and its card never calls it faithful to one
    recipe.write_text(recipe.read_text().replace('protocol = "evolvingqa"\n', ""))
    run_recipe(load_recipe(recipe), tmp_path / "custom")
    block = json.loads((tmp_path / "custom" / "manifest.json").read_text())["protocol"]
    assert block["name"] == "custom" and block["reference"].startswith("none:")
    card = (tmp_path / "custom" / "README.md").read_text()
    assert "**No paper's construction procedure named**" in card and "faithful" not in card


def test_a_kee_report_says_beside_head_minus_tail_whether_the_bins_are_a_stand_in(tmp_path):
    from kbench.construct.protocols import results_bin_note
    from kbench.tasks.kee.report import comparison_sections

    stand_in = {**construction_protocol("lama-derived").block(), "faithful": False, "deviations": [
        {"id": "frequency-source-evidence-count", "paper": "pageviews", "kbench": "evidence", "effect": "bins"}]}
    metrics = {"frequency_bin_differences": {"head - tail": {"baseline": {"accuracy": None, "gain": None}}}}
    note = results_bin_note({"dataset": {"path": "d", "sha256": "0", "construction_protocol": stand_in}})
    assert "**Bins:** frequency bins are a stand-in" in "\n".join(comparison_sections(metrics, note))
    faithful = construction_protocol("maple-benchmark").block()
    assert results_bin_note({"dataset": {"construction_protocol": faithful}}) is None
    assert "unknown provenance" in results_bin_note({"dataset": {"path": "d"}})  # an older run or dataset


def test_an_evaluation_records_the_datasets_construction_protocol(tmp_path):
    from kbench.dataset import construction_block, open_split

    for name, rows in (("old", EVOLVING_ROWS), ("new", EVOLVING_ROWS)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = tmp_path / "evo.toml"
    recipe.write_text('[pipeline]\nname = "evo"\nconfig = "evolving"\nprotocol = "evolvingqa"\n\n'
                      '[[stages]]\nstage = "evolving_snapshots"\nold = "old.jsonl"\nnew = "new.jsonl"\n\n'
                      '[[stages]]\nstage = "write_dataset"\nschema_name = "qa_item.v1.json"\n')
    run_recipe(load_recipe(recipe), tmp_path / "run")
    described = open_split(tmp_path / "run", "unchanged").describe()  # the `dataset` block of results.json
    assert described["construction_protocol"]["name"] == "evolvingqa"
    assert construction_block(tmp_path) is None  # no manifest: nothing recorded


def test_a_stage_repeated_in_a_recipe_keeps_both_entries():
    from kbench.construct.protocols import add_stage_deviations
    from kbench.protocol import Deviation

    cap = Deviation(id="relation-cap", paper="300", kbench="100", effect="rows")
    protocol = add_stage_deviations(construction_protocol("custom"), [cap], "cap")
    protocol = add_stage_deviations(protocol, [cap], "second_cap")
    assert [d.id for d in protocol.deviations] == ["relation-cap", "relation-cap@second-cap"]
