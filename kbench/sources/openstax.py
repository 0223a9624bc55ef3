"""OpenStax book source (CNXML) -> `review_mcq.jsonl` and `paragraphs.jsonl`, the LEFT inputs.

Input: a folder with the book repository's `collections/<slug>.collection.xml` and
`modules/m*/index.cnxml`. The rules are those the ../shared/data copies were made with (their
SOURCE.md):

  * chapters are the collection's subcollections that hold modules directly, numbered 1..N in
    order (a subcollection of chapters is a unit); modules outside chapters are skipped. A module
    whose `<document class>` contains "introduction" is section "<ch>", the others "<ch>.<k>".
  * review_mcq: each `<exercise>` in a `<section class="review-questions">` whose `<problem>` has a
    `<list>`; question = the problem's paragraphs without the list, options = the list items;
    answer_letter only when the solution is a single letter A-E (optionally with a period).
  * paragraphs: every non-empty `<para>` of `<content>`, in document order, except inside review /
    critical-thinking / suggested-reading / learning-objectives / contrib-auth sections, notes of
    class "reference", exercises, figures, tables, footnotes and titles. Whitespace is collapsed;
    footnote text is dropped (cross-reference links are empty in CNXML, so "()" stays).
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from kbench.errors import InputError
from kbench.io import write_text

CNXML = "{http://cnx.rice.edu/cnxml}"
COL = "{http://cnx.rice.edu/collxml}"
MD = "{http://cnx.rice.edu/mdml}"
LICENSE = "CC BY 4.0"
_SKIPPED_SECTIONS = {"review-questions", "critical-thinking", "suggested-reading", "learning-objectives", "contrib-auth"}
_SKIPPED_ELEMENTS = {f"{CNXML}{name}" for name in ("exercise", "figure", "table", "footnote", "title")}
_LETTER = re.compile(r"^([A-E])\.?$")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _text(element: ET.Element, *, skip: set[str] = frozenset()) -> str:
    """The element's inner text, footnotes (and `skip` tags) left out, whitespace collapsed."""
    parts: list[str] = []

    def walk(node: ET.Element) -> None:
        if node.text:
            parts.append(node.text)
        for child in node:
            if child.tag != f"{CNXML}footnote" and child.tag not in skip:
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(element)
    return _collapse("".join(parts))


def _title(element: ET.Element | None) -> str | None:
    """The text of an element's own `<title>` (emphasis inside it included), None without one."""
    title = element.find(f"{CNXML}title") if element is not None else None
    return (_text(title) or None) if title is not None else None


def _classes(element: ET.Element) -> set[str]:
    return set((element.get("class") or "").split())


def _chapters(collection: ET.Element) -> Iterator[tuple[int, str, str | None, list[str]]]:
    """(number, title, unit title, module ids) per chapter, in collection order."""
    number = 0

    def visit(content: ET.Element, unit: str | None) -> Iterator[tuple[int, str, str | None, list[str]]]:
        nonlocal number
        for sub in content.findall(f"{COL}subcollection"):
            title = sub.findtext(f"{MD}title", "").strip()
            inner = sub.find(f"{COL}content")
            if inner is None:
                continue
            modules = [m.get("document") for m in inner.findall(f"{COL}module")]
            if modules:
                number += 1
                yield number, title, unit, modules
            else:
                yield from visit(inner, title)

    yield from visit(collection.find(f"{COL}content"), None)


def _book(collection: ET.Element) -> tuple[str, str | None]:
    title = collection.findtext(f"{COL}metadata/{MD}title") or collection.findtext(f".//{MD}title", "")
    edition = re.search(r"\s(\d+e)$", title)
    return title, edition.group(1) if edition else None


def _paragraphs(content: ET.Element) -> Iterator[tuple[ET.Element, ET.Element | None, ET.Element | None]]:
    """(para, nearest section, nearest note) for every paragraph that counts, in document order."""

    def walk(node, section, note):
        for child in node:
            if child.tag in _SKIPPED_ELEMENTS:
                continue
            if child.tag == f"{CNXML}section":
                if _classes(child) & _SKIPPED_SECTIONS:
                    continue
                yield from walk(child, child, note)
            elif child.tag == f"{CNXML}note":
                if "reference" in _classes(child):
                    continue
                yield from walk(child, section, child)
            elif child.tag == f"{CNXML}para":
                yield child, section, note
                yield from walk(child, section, note)
            else:
                yield from walk(child, section, note)

    yield from walk(content, None, None)


def _exercises(content: ET.Element) -> Iterator[tuple[int, ET.Element]]:
    """(position among the section's review exercises, exercise) for every review exercise."""
    for section in content.iter(f"{CNXML}section"):
        if "review-questions" not in _classes(section):
            continue
        yield from enumerate(section.iter(f"{CNXML}exercise"), 1)


def extract_book(source: Path, commit: str) -> tuple[list[dict], list[dict]]:
    """(review questions, paragraphs) of the book whose repository files lie in `source`."""
    collections = sorted((source / "collections").glob("*.collection.xml"))
    if len(collections) != 1:
        raise InputError(source / "collections", f"expected one *.collection.xml, found {len(collections)}")
    try:
        collection = ET.parse(collections[0]).getroot()
    except ET.ParseError as exc:
        raise InputError(collections[0], f"not XML: {exc}") from exc
    book, version = _book(collection)
    questions: list[dict] = []
    paragraphs: list[dict] = []
    for chapter, chapter_title, unit, modules in _chapters(collection):
        k = 0
        for module_id in modules:
            path = source / "modules" / module_id / "index.cnxml"
            try:
                document = ET.parse(path).getroot()
            except (OSError, ET.ParseError) as exc:
                raise InputError(path, f"cannot read the module: {exc}") from exc
            if "introduction" in _classes(document):
                section = str(chapter)
            else:
                k += 1
                section = f"{chapter}.{k}"
            head = {
                "book": book,
                "book_version": version,
                "source_commit": commit,
                "license": LICENSE,
                "module_id": module_id,
                "chapter": chapter,
                "chapter_title": chapter_title,
                "unit_title": unit,
                "section": section,
                "section_title": _title(document),
            }
            content = document.find(f"{CNXML}content")
            if content is None:
                continue
            for number, exercise in _exercises(content):
                row = _question(exercise, number)
                if row is not None:
                    questions.append({**head, **row})
            for para, sub, note in _paragraphs(content):
                text = _text(para)
                if text:
                    paragraphs.append(
                        {
                            **head,
                            "para_id": para.get("id"),
                            "subsection_title": _title(sub),
                            "section_class": sub.get("class") if sub is not None else None,
                            # a note without a class is still a note (one in U.S. History)
                            "note_class": (note.get("class") or "note") if note is not None else None,
                            "text": text,
                        }
                    )
    return questions, paragraphs


def _question(exercise: ET.Element, number: int) -> dict | None:
    problem = exercise.find(f"{CNXML}problem")
    if problem is None:
        return None
    options_list = problem.find(f".//{CNXML}list")
    if options_list is None:
        return None
    options = [_text(item) for item in options_list.findall(f"{CNXML}item")]
    labels = [chr(ord("A") + i) for i in range(len(options))]
    question = " ".join(t for t in (_text(p, skip={f"{CNXML}list"}) for p in problem.iter(f"{CNXML}para")) if t)
    solution = exercise.find(f"{CNXML}solution")
    raw = _text(solution) if solution is not None else None
    letter = _LETTER.match(raw or "")
    answer = letter.group(1) if letter else None
    index = labels.index(answer) if answer in labels else None
    return {
        "exercise_id": exercise.get("id"),
        "question_number_in_section": number,
        "question": question,
        "options": options,
        "option_labels": labels,
        "answer_letter": answer if index is not None else None,
        "answer_index": index,
        "answer_text": options[index] if index is not None else None,
        "raw_solution": raw,
    }


#: Where `kbench data fetch` puts the downloaded book files inside the folder before converting.
SOURCE_DIR = "cnxml"


def _jsonl(rows: list[dict]) -> str:
    # Field order as written above (not sorted): the bytes equal the ../shared/data copies.
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def convert_book(folder: Path, commit: str) -> None:
    """Turn `folder/cnxml/` (the book files of `commit`) into review_mcq.jsonl and paragraphs.jsonl."""
    questions, paragraphs = extract_book(folder / SOURCE_DIR, commit)
    if not questions or not paragraphs:
        raise InputError(
            folder / SOURCE_DIR,
            f"found {len(questions)} review questions and {len(paragraphs)} "
            "paragraphs; the book layout is not the one kbench reads",
        )
    write_text(folder / "review_mcq.jsonl", _jsonl(questions))
    write_text(folder / "paragraphs.jsonl", _jsonl(paragraphs))
    shutil.rmtree(folder / SOURCE_DIR)
