"""Every packaged recipe, built small on the real data in ../shared/data: the card `kbench card`
writes lists its construction entries (the manifest's protocol block), and a binned dataset's card
says its head / tail differences rest on stand-in bins. The faithful LAMA probe is checked in
test_build_lama_probe.py (it builds the whole probe anyway)."""

from __future__ import annotations

import json

import pytest

from conftest import REPO_ROOT
from kbench.cards.render import write_card
from kbench.construct.recipe import load_recipe
from kbench.construct.runner import run_recipe
from tests.dataset_folders import SMALL_LAMA_OVERRIDES

CASES = {
    "lama-trex.toml": (SMALL_LAMA_OVERRIDES, "lama-derived", [
        "google-re-not-loaded", "existence-store-from-inputs", "single-answer-store-from-inputs",
        "frequency-source-evidence-count", "frequency-bins-over-facts", "frequency-percentages", "relation-cap"]),
    "maple-wiki.toml": ([], "maple-benchmark", [
        "min-words", "triplets-from-annotations", "linking-own-index", "existence-store-from-inputs",
        "domain-taxonomy-kbench-mapping", "domain-classes-store-from-inputs", "domain-judge-not-run",
        "single-answer-store-from-inputs", "single-answer-judge-not-run", "frequency-source-document-mentions",
        "corpus-presence-own-corpus"]),
    "left-textbook.toml": ([], "left-textbook", ["american-government-3e", "gold-paragraphs-section", "statements-by-rule"]),
    "evolving.toml": ([], "evolvingqa", ["snapshots-as-fact-tables", "synthetic-snapshot-edits"]),
}


@pytest.mark.parametrize("recipe_file", sorted(CASES))
def test_packaged_recipe_card_lists_its_construction_entries(recipe_file, tmp_path, shared_data):
    overrides, name, must = CASES[recipe_file]
    out = tmp_path / "run"
    run_recipe(load_recipe(REPO_ROOT / "pipelines" / recipe_file, overrides), out, data_dir=shared_data)
    block = json.loads((out / "manifest.json").read_text())["protocol"]
    ids = [d["id"] for d in block["deviations"]]
    assert block["name"] == name and block["faithful"] is False and set(must) <= set(ids)
    built_card = (out / "README.md").read_text()
    card = write_card(out).read_text()
    for text in (built_card, card):
        assert f"deviations from {name}**" in text
        assert all(f"`{i}`" in text for i in ids)
    binned = any(i.startswith("frequency-") for i in ids)
    assert ("Head / tail differences" in card) == binned
