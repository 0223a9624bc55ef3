"""A miniature of ../shared/data's LAMA inputs (T-REx, AutoPrompt, Google-RE, relations, aliases), for the
subset writer and the SPARQL stages. tests/conftest.py registers this module as a plugin: a test asks for `lama`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbench.sources.wikidata_store import SubsetInputs


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def lama_fact(sub, sub_label, obj, obj_label, **extra):
    return {"sub_uri": sub, "sub_label": sub_label, "obj_uri": obj, "obj_label": obj_label, **extra}


@pytest.fixture
def lama(tmp_path) -> SubsetInputs:
    """A miniature of ../shared/data: Q10 has one birthplace, Q11 two (test + train files)."""
    root = tmp_path / "lama"
    _jsonl(root / "TREx" / "P19.jsonl", [
        lama_fact("Q10", "Ada", "Q20", "Paris", predicate_id="P19"),
        lama_fact("Q11", 'Bob "the \\ builder"', "Q21", "Rome", predicate_id="P19"),
        lama_fact("Q12 }", "Evil", "Q20", "Paris", predicate_id="P19"),  # invalid id: never written
    ])
    _jsonl(root / "auto" / "P19" / "train.jsonl", [lama_fact("Q11", "Bob (train)", "Q22", "Oslo")])
    _jsonl(root / "auto" / "P19" / "dev.jsonl", [lama_fact("Q13", "Cy", "Q20", "Paris")])
    _jsonl(root / "google" / "date_of_birth_test.jsonl", [
        {"pred": "/people/person/date_of_birth", "sub_w": "Q10", "sub_label": "Ada", "obj": "1815",
         "obj_w": None, "obj_label": "1815"},
        {"pred": "/people/person/date_of_birth", "sub_w": "Q11", "sub_label": "Bob", "obj": "1816-12-10",
         "obj_w": None, "obj_label": "1816"}])
    _jsonl(root / "relations.jsonl", [{"relation": "P19", "label": "place of birth", "description": "where\nborn"}])
    (root / "aliases.txt").write_text("Q20\tParis\tCity of Light\tParis 😀\nQ99\tOnly alias\n", encoding="utf-8")
    return SubsetInputs(trex_dir=root / "TREx", relations=root / "relations.jsonl", google_re_dir=root / "google",
                        autoprompt_dir=root / "auto", aliases=root / "aliases.txt")
