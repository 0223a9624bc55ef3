"""OpenStax CNXML -> LEFT JSONL (kbench/sources/openstax.py), and `kbench data fetch` converting a book.

The book here is written by hand in the CNXML of the OpenStax repositories; the real books at the
catalog's commits convert to files byte-identical to ../shared/data/openstax_* (checked when the
converter was written, against the repositories' git history; not reachable from the tests).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import pytest

from kbench.errors import InputError
from kbench.sources.catalog import Download, Source, source
from kbench.sources.fetch_data import fetch_folders
from kbench.sources.openstax import convert_book, extract_book

COMMIT = "0" * 40
COLLECTION = """<?xml version="1.0"?>
<col:collection xmlns="http://cnx.rice.edu/collxml" xmlns:md="http://cnx.rice.edu/mdml" xmlns:col="http://cnx.rice.edu/collxml">
  <metadata xmlns:md="http://cnx.rice.edu/mdml"><md:title>Civics 2e</md:title></metadata>
  <col:content>
    <col:module document="m1"/>
    <col:subcollection><md:title>Students and the System</md:title><col:content>
      <col:subcollection><md:title>Government Basics</md:title><col:content>
        <col:module document="m2"/>
        <col:module document="m3"/>
      </col:content></col:subcollection>
    </col:content></col:subcollection>
  </col:content>
</col:collection>
"""
PREFACE = '<document xmlns="http://cnx.rice.edu/cnxml"><title>Preface</title><content><para id="p0">Skipped: not in a chapter.</para></content></document>'
INTRO = """<document xmlns="http://cnx.rice.edu/cnxml" class="introduction"><title>Introduction</title><content>
<figure id="f1"><caption><para id="pf">A caption paragraph.</para></caption></figure>
<para id="p1">Democracy   needs
 citizens<footnote id="fn1">A footnote.</footnote> (<link target-id="f1"/>).</para>
<para id="empty">  </para>
</content></document>"""
SECTION = """<document xmlns="http://cnx.rice.edu/cnxml"><title>What Is <emphasis>Government</emphasis>?</title><content>
<section id="s1" class="summary"><title>Types of <emphasis>Rule</emphasis></title>
  <para id="p2">A monarchy has one ruler.</para>
  <note id="n1" class="civics feature"><para id="p3">A feature box.</para></note>
  <note id="n2"><para id="p4">A note without a class.</para></note>
  <note id="n3" class="reference"><para id="p5">Skipped: a reference note.</para></note>
</section>
<section id="s2" class="review-questions"><title>Review Questions</title>
  <exercise id="e1"><problem><para id="q1">Which is a form of government?</para>
    <list id="l1" list-type="enumerated"><item>Monarchy</item><item>A river</item></list></problem>
    <solution><para>A.</para></solution></exercise>
  <exercise id="e2"><problem><para id="q2">Explain democracy.</para></problem></exercise>
  <exercise id="e3"><problem><para id="q3">Which came first?</para>
    <list id="l3"><item>Oligarchy</item><item>Republic</item><item>Both</item></list></problem></exercise>
  <exercise id="e4"><problem><para id="q4">Pick one.</para><list id="l4"><item>X</item></list></problem>
    <solution><para>The answer is X</para></solution></exercise>
</section>
<section id="s3" class="critical-thinking"><para id="p6">Skipped: critical thinking.</para></section>
</content></document>"""
FILES = {"collections/civics-2e.collection.xml": COLLECTION, "modules/m1/index.cnxml": PREFACE,
         "modules/m2/index.cnxml": INTRO, "modules/m3/index.cnxml": SECTION}


def write_book(folder: Path) -> Path:
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_questions_follow_the_extraction_rules(tmp_path):
    questions, _ = extract_book(write_book(tmp_path), COMMIT)
    head = {"book": "Civics 2e", "book_version": "2e", "source_commit": COMMIT, "license": "CC BY 4.0",
            "module_id": "m3", "chapter": 1, "chapter_title": "Government Basics", "unit_title": "Students and the System",
            "section": "1.1", "section_title": "What Is Government?"}
    assert questions == [
        {**head, "exercise_id": "e1", "question_number_in_section": 1, "question": "Which is a form of government?",
         "options": ["Monarchy", "A river"], "option_labels": ["A", "B"], "answer_letter": "A", "answer_index": 0,
         "answer_text": "Monarchy", "raw_solution": "A."},
        {**head, "exercise_id": "e3", "question_number_in_section": 3, "question": "Which came first?",
         "options": ["Oligarchy", "Republic", "Both"], "option_labels": ["A", "B", "C"], "answer_letter": None,
         "answer_index": None, "answer_text": None, "raw_solution": None},
        {**head, "exercise_id": "e4", "question_number_in_section": 4, "question": "Pick one.", "options": ["X"],
         "option_labels": ["A"], "answer_letter": None, "answer_index": None, "answer_text": None,
         "raw_solution": "The answer is X"},
    ]


def test_paragraphs_follow_the_extraction_rules(tmp_path):
    _, paragraphs = extract_book(write_book(tmp_path), COMMIT)
    got = [(p["module_id"], p["section"], p["para_id"], p["subsection_title"], p["section_class"], p["note_class"], p["text"])
           for p in paragraphs]
    assert got == [
        ("m2", "1", "p1", None, None, None, "Democracy needs citizens ()."),
        ("m3", "1.1", "p2", "Types of Rule", "summary", None, "A monarchy has one ruler."),
        ("m3", "1.1", "p3", "Types of Rule", "summary", "civics feature", "A feature box."),
        ("m3", "1.1", "p4", "Types of Rule", "summary", "note", "A note without a class."),
    ]
    assert list(paragraphs[0])[:11] == ["book", "book_version", "source_commit", "license", "module_id", "chapter",
                                        "chapter_title", "unit_title", "section", "section_title", "para_id"]


def test_broken_module_is_a_located_error(tmp_path):
    write_book(tmp_path)
    (tmp_path / "modules" / "m3" / "index.cnxml").write_text("<document><content>", encoding="utf-8")
    with pytest.raises(InputError, match=r"m3/index.cnxml: cannot read the module"):
        extract_book(tmp_path, COMMIT)


def test_fetch_converts_a_book_into_the_recipe_layout(httpserver, tmp_path):
    base = f"https://raw.githubusercontent.com/openstax/civics/{COMMIT}/"
    downloads = []
    for name, text in FILES.items():
        body = text.encode("utf-8")
        httpserver.expect_request(f"/raw.githubusercontent.com/openstax/civics/{COMMIT}/{name}").respond_with_data(body)
        downloads.append(Download(base + name, hashlib.sha256(body).hexdigest(), dest=f"cnxml/{name}"))
    book = Source("openstax_civics", "a test book", "openstax", "https://example.org", tuple(downloads),
                  convert=functools.partial(convert_book, commit=COMMIT))
    root = tmp_path / "data"
    fetch_folders([book], root, mirror=httpserver.url_for("/"))
    folder = root / "openstax_civics"
    assert sorted(p.name for p in folder.iterdir()) == ["SOURCE.md", "paragraphs.jsonl", "review_mcq.jsonl"]
    lines = (folder / "review_mcq.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["exercise_id"] for line in lines] == ["e1", "e3", "e4"]
    assert lines[0].startswith('{"book": "Civics 2e", "book_version": "2e"')   # field order kept, as in ../shared/data


def test_catalog_books_pin_every_module_they_convert():
    for name, modules in (("openstax_us_history", 177), ("openstax_american_government_3e", 100)):
        downloads = source(name).downloads
        assert sum(d.dest.endswith("index.cnxml") for d in downloads) == modules
        assert sum(d.dest.endswith(".collection.xml") for d in downloads) == 1
        assert all(d.sha256 and d.dest.startswith("cnxml/") for d in downloads)
