"""The card's first lines say what the Wikidata checks ran against; an inputs-only build is never "verified"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from card_folders import make_lama_folder

from kbench.cards.render import write_card
from kbench.errors import InputError

INPUTS = {"kind": "inputs", "description": "embedded store built from the inputs",
          "files": [{"file": "data:lama_trex/TREx/P19.jsonl", "sha256": "1" * 64}]}
IMPORT = {"kind": "import", "description": "imported Wikidata dump or subset", "store": "stores/wd",
          "files": [{"file": "slice.nt", "sha256": "2" * 64}]}
ENDPOINT = {"kind": "endpoint", "description": "live endpoint", "url": "https://query.wikidata.org/sparql"}
JUDGE = {"model": "smollm2-135m", "identity": "abc" * 10, "backend": "transformers", "prompt_form": "chat",
         "cue": "after the turn"}


def _folder(tmp_path: Path, shared_data: Path, sources: dict, judges: tuple = ()) -> Path:
    root = make_lama_folder(tmp_path / "ds", shared_data)
    stats = json.loads((root / "stats.json").read_text())
    checks = [{"id": sid, "stage": stage, "rows_in": 27, "rows_out": 27, "dropped": {}, "dropped_total": 0,
               "details": {"knowledge_source": source}} for sid, (stage, source) in sources.items()]
    checks += [{"id": stage, "stage": stage, "rows_in": 27, "rows_out": 27, "dropped": {}, "dropped_total": 0,
                "details": {"judge": JUDGE}} for stage in judges]
    stats["stages"][1:1] = checks
    (root / "stats.json").write_text(json.dumps(stats))
    return root


def _body(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8").split("---\n", 2)[2]
    return [line for line in text.splitlines() if line.strip()]


def test_an_inputs_only_build_says_so_in_its_first_lines(tmp_path, shared_data):
    root = _folder(tmp_path, shared_data, {"verify": ("verify_wikidata", INPUTS), "single": ("single_answer", INPUTS)})
    lines = _body(write_card(root, family="lama-binned"))
    assert lines[0].startswith("# ") and lines[1].startswith("**Checked against the inputs only.**")
    assert "- `verify` (existence): embedded store built from the inputs: `data:lama_trex/TREx/P19.jsonl`" in lines[2]
    assert "not run (off by default)" in lines[4]
    assert "verified against wikidata" not in " ".join(lines).lower()


def test_imported_dump_and_live_endpoint_are_named_with_file_hash_and_url(tmp_path, shared_data):
    root = _folder(tmp_path, shared_data, {"verify": ("verify_wikidata", ENDPOINT), "single": ("single_answer", IMPORT)},
                   judges=("judge_domain",))
    lines = _body(write_card(root, family="lama-binned"))
    assert lines[1].startswith("**Verified against Wikidata**")
    assert lines[2] == "- `verify` (existence): live endpoint `https://query.wikidata.org/sparql`"
    assert lines[3] == "- `single` (single answer): imported Wikidata dump or subset: `slice.nt` (sha256 `222222222222…`)"
    assert lines[4].startswith("- `judge_domain` (domain-mismatch judge): ran with model `smollm2-135m`")
    assert "backend transformers, chat prompt, cue after the turn, greedy decoding" in lines[4]  # which judge, which form


def test_a_card_that_calls_an_inputs_only_build_verified_is_refused(tmp_path, shared_data, monkeypatch):
    root = _folder(tmp_path, shared_data, {"single": ("single_answer", INPUTS)})
    templates = tmp_path / "templates"
    templates.mkdir()
    from kbench.cards.render import template_dir

    text = (template_dir() / "lama-binned.md").read_text(encoding="utf-8")
    (templates / "lama-binned.md").write_text(text.replace("{{overview}}", "Every fact is verified against\nWikidata.\n\n{{overview}}"))
    monkeypatch.setenv("KBENCH_CARD_TEMPLATES", str(templates))
    with pytest.raises(InputError, match="verified against Wikidata"):
        write_card(root, family="lama-binned")
    monkeypatch.delenv("KBENCH_CARD_TEMPLATES")
    root_ok = _folder(tmp_path / "b", shared_data, {"single": ("single_answer", IMPORT)})
    monkeypatch.setenv("KBENCH_CARD_TEMPLATES", str(templates))
    assert write_card(root_ok, family="lama-binned").is_file()


def test_an_endpoint_is_recorded_without_credentials(tmp_path):
    from kbench.construct.context import StageContext
    from kbench.construct.stages._wikidata_common import WikidataParams, knowledge_source

    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0,
                       options={"sparql_endpoint": "https://me:s3cret@wd.example.org:8890/sparql?api_key=abc#x"})
    source = knowledge_source(WikidataParams(store="x.nt"), ctx)
    assert source == {"kind": "endpoint", "description": "live endpoint", "url": "https://wd.example.org:8890/sparql"}
