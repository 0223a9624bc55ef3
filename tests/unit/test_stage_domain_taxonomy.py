"""domain_taxonomy against a real embedded store built from an inline N-Triples file."""

from __future__ import annotations

import polars as pl
import pytest

from kbench.construct.context import StageContext
from kbench.construct.stage import stage_registry
from kbench.errors import InputError

WD, WDT = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
FACTS = [
    ("Q10", "P31", "Q8502"),      # doc A: a mountain -> geography
    ("Q11", "P31", "Q35666"),     # a glacier -> geography
    ("Q12", "P31", "Q7187"),      # a gene -> science
    ("Q13", "P31", "Q999"),       # class 999 is a subclass of glacier -> geography only via P279*
    ("Q999", "P279", "Q35666"),
    ("Q14", "P31", "Q7187"), ("Q14", "P31", "Q8502"),   # two domains: the mapping's order decides
]
MAPPING = '[domains]\nscience = ["Q7187"]\ngeography = ["Q8502", "Q35666"]\n'


def _run(tmp_path, rows, **params):
    (tmp_path / "w.nt").write_text("".join(f"<{WD}{s}> <{WDT}{p}> <{WD}{o}> .\n" for s, p, o in FACTS), encoding="utf-8")
    (tmp_path / "domains.toml").write_text(MAPPING, encoding="utf-8")
    cls = stage_registry()["domain_taxonomy"]
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "cache")
    stage = cls(cls.Params(store="w.nt", mapping="domains.toml", **params), ctx)
    out = stage.run(pl.DataFrame(rows, schema=["doc_uri", "subject_id"], orient="row").lazy())
    return out.kept.collect(), out.rejected.collect()


ROWS = [("Q10", "Q11"), ("Q10", "Q12"), ("Q10", "Q13"), (None, "Q12"), ("Q77", "Q78"), ("Q10", "Q14"), ("Q12", "Q14")]


def test_document_domain_subject_domain_and_drops(tmp_path):
    kept, rejected = _run(tmp_path, ROWS)
    assert kept.select("doc_uri", "subject_id", "domain", "subject_domain").rows() == [
        ("Q10", "Q11", "geography", "geography"),
        ("Q10", "Q13", "geography", "geography"),   # via subclass of
        (None, "Q12", "science", "science"),         # no document domain: the subject's
        ("Q12", "Q14", "science", "science"),        # Q14 is science first (file order)
    ]
    assert rejected.select("subject_id", "reason").rows() == [
        ("Q12", "domain_mismatch"), ("Q78", "no_domain"), ("Q14", "domain_mismatch")]


def test_without_subclasses_and_optional_domain(tmp_path):
    kept, rejected = _run(tmp_path, ROWS, follow_subclass=False, require_domain=False)
    assert ("Q10", "Q13", "geography", None) in kept.select("doc_uri", "subject_id", "domain", "subject_domain").rows()
    assert ("Q77", "Q78", None) in kept.select("doc_uri", "subject_id", "domain").rows()
    assert rejected["reason"].to_list() == ["domain_mismatch", "domain_mismatch"]


def test_bad_mapping_names_file_and_key(tmp_path):
    from kbench.construct.stages.domain_taxonomy import load_domain_mapping

    bad = tmp_path / "d.toml"
    bad.write_text('[domains]\nscience = ["Q1"]\nlaw = ["Q1"]\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"d.toml \[domains.law\].*both"):
        load_domain_mapping(bad, 10)
    bad.write_text('[domains]\nscience = ["wd:Q1"]\n', encoding="utf-8")
    with pytest.raises(InputError, match="not a Wikidata item id"):
        load_domain_mapping(bad, 10)


def test_shipped_mapping_has_ten_domains(tmp_path):
    from pathlib import Path

    from kbench.construct.stages.domain_taxonomy import load_domain_mapping

    shipped = Path(__file__).resolve().parents[2] / "pipelines" / "mappings" / "maple-domains.toml"
    domains = load_domain_mapping(shipped, 10)
    assert len(domains) == 10 and {"science", "history", "law"} <= set(domains)
