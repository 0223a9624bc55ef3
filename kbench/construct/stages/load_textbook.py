"""Source stage `load_textbook`: OpenStax review questions with their section's paragraphs.

Input: `books` = folders, each holding `review_mcq.jsonl` and `paragraphs.jsonl` in the layout of
`data:openstax_*` (see its SOURCE.md). Every review question becomes one row:

    book, license, chapter, chapter_title, section, section_title, exercise_id, question,
    options (list[str]), answer_index (int | null), answer_text (str | null),
    split ("dev" for chapters 1..dev_max_chapter, else "test" -- LEFT's split),
    paragraphs, paragraph_ids (list[str]): the body paragraphs of the question's section,
      in book order, the candidates for gold IR.

Side output (the retrieval corpus and the text `kbench read` learns from): the run directory's
`corpus/paragraphs.jsonl`, one line per body paragraph of every book with
`para_id, book, chapter, section, section_title, split, text`. It is written every time the
stage runs; a reused stage leaves the file of the run that computed it, which has the same content.
"""

from __future__ import annotations

from pathlib import Path

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.errors import InputError
from kbench.io import iter_jsonl, write_jsonl

QUESTION_FIELDS = ("book", "chapter", "section", "exercise_id", "question", "options")
PARAGRAPH_FIELDS = ("book", "chapter", "section", "para_id", "text")
CORPUS_FILE = "corpus/paragraphs.jsonl"


def left_split(chapter: int, dev_max_chapter: int) -> str:
    return "dev" if chapter <= dev_max_chapter else "test"


@register_stage
class LoadTextbook(Stage):
    name = "load_textbook"
    source = True

    class Params(StageParams):
        books: list[str]
        dev_max_chapter: int = 8  # LEFT: Dev = chapters 1-8, Test = the rest

    def _files(self, book: str) -> tuple[Path, Path]:
        folder = self.ctx.resolve(book)
        return folder / "review_mcq.jsonl", folder / "paragraphs.jsonl"

    def input_files(self) -> list[Path]:
        return [f for book in self.params.books for f in self._files(book)]

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        found = []
        if any("american_government_3e" in book for book in self.params.books):
            found.append(
                Deviation(
                    id="american-government-3e",
                    paper="LEFT uses American Government 2e",
                    kbench="American Government 3e (the OpenStax edition available)",
                    effect="the American Government statements and paragraphs",
                )
            )
        found.append(
            Deviation(
                id="gold-paragraphs-section",
                paper="LEFT's goldIR is one natural paragraph, identified by hand, per statement",
                kbench="each statement keeps all paragraphs of its question's section",
                effect="open-book (goldIR) results",
            )
        )
        if self.params.dev_max_chapter != 8:
            found.append(
                Deviation(
                    id="dev-chapters",
                    paper="LEFT's Dev set is the first eight chapters, Test the rest",
                    kbench=f"Dev = chapters 1-{self.params.dev_max_chapter}",
                    effect="the dev / test split",
                )
            )
        return found

    def run(self, table) -> StageOutput:
        import polars as pl

        rows: list[dict] = []
        corpus: list[dict] = []
        for book in self.params.books:
            questions_path, paragraphs_path = self._files(book)
            by_section: dict[tuple[str, str], list[dict]] = {}
            for lineno, para in iter_jsonl(paragraphs_path, PARAGRAPH_FIELDS):
                if not isinstance(para["text"], str) or not isinstance(para["chapter"], int):
                    raise InputError(paragraphs_path, "`text` must be a string and `chapter` an integer", line=lineno)
                by_section.setdefault((para["book"], str(para["section"])), []).append(para)
                corpus.append(
                    {
                        "para_id": f"{para['book']}/{para['para_id']}",
                        "book": para["book"],
                        "chapter": para["chapter"],
                        "section": str(para["section"]),
                        "section_title": para.get("section_title") or "",
                        "split": left_split(para["chapter"], self.params.dev_max_chapter),
                        "text": para["text"],
                    }
                )
            for lineno, q in iter_jsonl(questions_path, QUESTION_FIELDS):
                rows.append(self._question_row(questions_path, lineno, q, by_section))
        write_jsonl(self.ctx.output_path(CORPUS_FILE), corpus)
        return StageOutput(kept=pl.DataFrame(rows, schema=_SCHEMA(pl)))

    def _question_row(self, path: Path, lineno: int, q: dict, by_section: dict) -> dict:
        options = q["options"]
        if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) for o in options):
            raise InputError(path, "`options` must be a list of at least two strings", line=lineno)
        if not isinstance(q["chapter"], int):
            raise InputError(path, "`chapter` must be an integer", line=lineno)
        index = q.get("answer_index")
        if index is not None and not (isinstance(index, int) and 0 <= index < len(options)):
            raise InputError(path, f"`answer_index` {index!r} is not an index into the {len(options)} options", line=lineno)
        section_paragraphs = by_section.get((q["book"], str(q["section"])), [])
        return {
            "book": q["book"],
            "license": q.get("license") or "",
            "chapter": q["chapter"],
            "chapter_title": q.get("chapter_title") or "",
            "section": str(q["section"]),
            "section_title": q.get("section_title") or "",
            "exercise_id": str(q["exercise_id"]),
            "question": q["question"],
            "options": options,
            "answer_index": index,
            "answer_text": None if index is None else options[index],
            "split": left_split(q["chapter"], self.params.dev_max_chapter),
            "paragraphs": [p["text"] for p in section_paragraphs],
            "paragraph_ids": [f"{p['book']}/{p['para_id']}" for p in section_paragraphs],
        }


def _SCHEMA(pl):  # explicit types: an all-null column (no answer keys at all) must still be typed
    return {
        "book": pl.String,
        "license": pl.String,
        "chapter": pl.Int64,
        "chapter_title": pl.String,
        "section": pl.String,
        "section_title": pl.String,
        "exercise_id": pl.String,
        "question": pl.String,
        "options": pl.List(pl.String),
        "answer_index": pl.Int64,
        "answer_text": pl.String,
        "split": pl.String,
        "paragraphs": pl.List(pl.String),
        "paragraph_ids": pl.List(pl.String),
    }
