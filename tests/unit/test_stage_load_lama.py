"""load_lama on small inline LAMA-shaped folders (T-REx, Google-RE, AutoPrompt) and on bad inputs."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from kbench.construct.context import StageContext
from kbench.construct.stages.load_lama import LoadLama
from kbench.errors import InputError, UserError

RELATIONS = [
    {"relation": "P19", "template": "[X] was born in [Y] .", "label": "place of birth"},
    {"relation": "P36", "template": "The capital of [X] is [Y] .", "label": "capital"},
]
TREX_P19 = [
    {"uuid": "u1", "sub_uri": "Q1", "sub_label": "Ann", "obj_uri": "Q90", "obj_label": "Paris", "predicate_id": "P19",
     "evidences": [{"masked_sentence": "Ann was born in [MASK]."}, {"masked_sentence": "x"}]},
    {"uuid": "u2", "sub_uri": "Q2", "sub_label": "Bob", "obj_uri": "Q64", "obj_label": "Berlin", "predicate_id": "P19", "evidences": []},
]
GOOGLE_RE = [
    {"uuid": "g1", "sub_w": None, "sub_label": "Carl", "sub_aliases": [], "obj_w": None, "obj_label": "1941",
     "obj_aliases": [], "evidences": [{"snippet": "..."}], "pred": "/people/person/date_of_birth"},
]
GOOGLE_RE_POB = [
    {"uuid": "g2", "sub_w": "Q7", "sub_label": "Dora", "sub_aliases": ["D.", "Dora"], "obj_w": "Q822",
     "obj_label": "Lebanon", "obj_aliases": ["Lebanese Republic"], "evidences": []},
]
AUTOPROMPT = {"train": [{"sub_uri": "Q3", "obj_uri": "Q4", "sub_label": "France", "obj_label": "Paris"}],
              "dev": [{"sub_uri": "Q5", "obj_uri": "Q6", "sub_label": "Peru", "obj_label": "Lima"}]}


def write_jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def lama(tmp_path) -> Path:
    root = tmp_path / "data"
    write_jsonl(root / "lama_trex" / "relations.jsonl", RELATIONS)
    write_jsonl(root / "lama_trex" / "TREx" / "P19.jsonl", TREX_P19)
    write_jsonl(root / "google_re" / "date_of_birth_test.jsonl", GOOGLE_RE)
    write_jsonl(root / "google_re" / "place_of_birth_test.jsonl", GOOGLE_RE_POB)
    for split, rows in AUTOPROMPT.items():
        write_jsonl(root / "autoprompt" / "P36" / f"{split}.jsonl", rows)
    return root


def run(tmp_path: Path, **params):
    ctx = StageContext(recipe_path=tmp_path / "recipe.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "cache")
    stage = LoadLama(LoadLama.Params(**params), ctx)
    files = stage.input_files()
    return stage.run(None).kept, files


def test_loads_all_three_sources(tmp_path, lama):
    table, files = run(tmp_path, trex="data/lama_trex", google_re="data/google_re", autoprompt="data/autoprompt")
    rows = {r["id"]: r for r in table.to_dicts()}
    assert table.height == 6
    assert rows["u1"] == {"id": "u1", "relation": "P19", "wikidata_property": "P19", "relation_label": "place of birth", "template": "[X] was born in [Y] .",
                          "subject": "Ann", "subject_id": "Q1", "object": "Paris", "object_id": "Q90", "source": "trex",
                          "evidence_count": 2, "subject_aliases": [], "object_aliases": [], "split": None}
    assert rows["g1"]["relation"] == "google_re:date_of_birth" and rows["g1"]["wikidata_property"] == "P569"
    assert rows["g1"]["subject_id"] is None and rows["g1"]["object"] == "1941"
    # Google-RE's place of birth is its own relation, never merged into T-REx's P19
    assert (rows["g2"]["relation"], rows["g2"]["wikidata_property"], rows["g2"]["source"]) == (
        "google_re:place_of_birth", "P19", "google_re")
    assert rows["g2"]["subject_aliases"] == ["D."]  # the label itself is not an alias
    assert rows["g2"]["object_aliases"] == ["Lebanese Republic"]
    auto = table.filter(table["source"].str.starts_with("autoprompt")).sort("split").to_dicts()
    assert [(r["source"], r["split"], r["relation"], r["template"]) for r in auto] == [
        ("autoprompt_dev", "dev", "P36", "The capital of [X] is [Y] ."),
        ("autoprompt_train", "train", "P36", "The capital of [X] is [Y] .")]
    assert all(r["evidence_count"] is None and r["id"].startswith("autoprompt-") for r in auto)
    assert sorted(p.name for p in files) == ["P19.jsonl", "date_of_birth_test.jsonl", "dev.jsonl",
                                             "place_of_birth_test.jsonl", "relations.jsonl", "train.jsonl"]


def test_relation_filter_and_row_limit(tmp_path, lama):
    table, files = run(tmp_path, trex="data/lama_trex", google_re="data/google_re", autoprompt="data/autoprompt",
                       relations=["P19"], max_per_relation=1)
    assert sorted(table["id"].to_list()) == ["g2", "u1"]  # P19 selects T-REx P19 and google_re:place_of_birth
    assert "train.jsonl" not in [p.name for p in files]
    table, _ = run(tmp_path, trex="data/lama_trex", google_re="data/google_re", relations=["google_re:place_of_birth"])
    assert table["id"].to_list() == ["g2"]


def test_a_requested_relation_without_facts_is_an_error(tmp_path, lama):
    with pytest.raises(UserError, match="no facts found for P27"):
        run(tmp_path, trex="data/lama_trex", relations=["P19", "P27"])


def test_google_re_alone_needs_no_relations_file(tmp_path, lama):
    table, files = run(tmp_path, google_re="data/google_re")
    assert sorted(table["relation"].to_list()) == ["google_re:date_of_birth", "google_re:place_of_birth"]
    assert all(p.parent.name == "google_re" for p in files)


def test_source_from_a_zip_url(tmp_path, lama, httpserver):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:  # laid out like LAMA's data.zip
        zf.writestr("data/relations.jsonl", (lama / "lama_trex" / "relations.jsonl").read_text())
        zf.writestr("data/TREx/P19.jsonl", (lama / "lama_trex" / "TREx" / "P19.jsonl").read_text())
    data = buf.getvalue()
    httpserver.expect_oneshot_request("/data.zip").respond_with_data(data)
    table, files = run(tmp_path, trex=httpserver.url_for("/data.zip"), trex_sha256=hashlib.sha256(data).hexdigest())
    assert table["id"].to_list() == ["u1", "u2"]
    assert all("downloads" in str(p) for p in files)


def test_url_without_sha256_is_refused(tmp_path):
    with pytest.raises(UserError, match="trex_sha256"):
        run(tmp_path, trex="https://example.org/data.zip")


@pytest.mark.parametrize("bad_line, message", [
    ('{"uuid": "u9", "sub_uri": "Q1"', "malformed JSON"),
    ({"uuid": "u9", "sub_uri": "Q1", "sub_label": "A", "obj_uri": "Q2"}, r"missing field\(s\) obj_label"),
    ({"uuid": "u9", "sub_uri": "X1", "sub_label": "A", "obj_uri": "Q2", "obj_label": "B"}, "not a Wikidata item id"),
    ({"uuid": "u9", "sub_uri": "Q1", "sub_label": "A", "obj_uri": "Q2", "obj_label": "B", "predicate_id": "P20"}, "does not match"),
    ({"uuid": "u9", "sub_uri": "Q1", "sub_label": "", "obj_uri": "Q2", "obj_label": "B"}, "non-empty string"),
])
def test_bad_fact_line_names_file_and_line(tmp_path, lama, bad_line, message):
    write_jsonl(lama / "lama_trex" / "TREx" / "P19.jsonl", [TREX_P19[0], bad_line])
    with pytest.raises(InputError, match=message) as info:
        run(tmp_path, trex="data/lama_trex")
    assert info.value.path.endswith("P19.jsonl") and info.value.line == 2


def test_template_without_slot_names_file_and_line(tmp_path, lama):
    write_jsonl(lama / "lama_trex" / "relations.jsonl", [RELATIONS[0], {"relation": "P36", "template": "The capital is [Y] ."}])
    with pytest.raises(InputError, match=r"\[X\] exactly once") as info:
        run(tmp_path, trex="data/lama_trex")
    assert info.value.path.endswith("relations.jsonl") and info.value.line == 2


def test_empty_file_and_missing_template(tmp_path, lama):
    (lama / "lama_trex" / "TREx" / "P19.jsonl").write_text("")
    with pytest.raises(InputError, match="file is empty"):
        run(tmp_path, trex="data/lama_trex")
    write_jsonl(lama / "lama_trex" / "relations.jsonl", [RELATIONS[0]])
    with pytest.raises(InputError, match="no template for relation P36"):
        run(tmp_path, autoprompt="data/autoprompt", relations_file="data/lama_trex/relations.jsonl")


def test_params_are_validated():
    with pytest.raises(ValueError, match="at least one"):
        LoadLama.Params()
    with pytest.raises(ValueError, match="property id"):
        LoadLama.Params(trex="x", relations=["19"])
    with pytest.raises(ValueError, match=r"\[Y\] exactly once"):
        LoadLama.Params(google_re="x", google_re_relations={"dob": {"wikidata_property": "P569", "label": "d", "template": "[X] born"}})
    with pytest.raises(ValueError, match="a-z, 0-9"):
        LoadLama.Params(google_re="x", google_re_relations={"Date Of Birth": {"wikidata_property": "P569", "label": "d",
                                                                               "template": "[X] born in [Y]"}})
    with pytest.raises(ValueError, match="google_re:place_of_birth"):
        LoadLama.Params(trex="x", relations=["trex:P19"])
