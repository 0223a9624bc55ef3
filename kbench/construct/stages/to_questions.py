"""Stage `to_questions`: turn facts into benchmark items (rows of `schemas/question.v1.json`).

Per row (needs template, subject, object, relation, relation_label):
  * `prompt_masked`: the template with [X] = subject and [Y] = "[MASK]" (for masked LMs).
  * `question`: the relation's short-answer form from `kbench/construct/question_templates.json`
    (or `question_templates`, a JSON object file of relation -> "... [X] ...?"), else the generic
    "What is the <relation label> of <subject>?".
  * `prompt_cloze`: the text before [Y] with [X] filled in, stripped; a causal LM continues it
    with the object. When [X] does not come before [Y] (e.g. P1923 "[Y] participated in the
    [X] ."), that text would not mention the subject at all (or be empty), so the row uses its
    `question` as the prompt instead: a question is the natural prompt a causal LM continues
    with the answer, and it names the subject.
  * `answers`: the object label first, then `object_aliases` (deduplicated, order kept).
Missing optional Question columns (aliases, frequency, frequency_bin) are added with empty
values, so every output row satisfies `schemas/question.v1.json`. Rows are never dropped.
Row-wise (the question templates are read once per run).
"""

from __future__ import annotations

import json
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Optional

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.errors import InputError
from kbench.io import read_json


def load_question_templates(path: Path | None = None) -> dict[str, str]:
    """relation -> question template with [X]; the shipped table when `path` is None."""
    if path is None:
        text = resources.files("kbench.construct").joinpath("question_templates.json").read_text(encoding="utf-8")
        table, where = json.loads(text), "kbench/construct/question_templates.json"
    else:
        table, where = read_json(path), path
    if not isinstance(table, dict):
        raise InputError(where, "expected a JSON object of relation -> question template")
    templates = {}
    for relation, template in table.items():
        if relation.startswith("_"):
            continue  # comments
        if not isinstance(template, str) or template.count("[X]") != 1:
            raise InputError(where, f"question template must be a string with [X] exactly once, got {template!r}", key=relation)
        templates[relation] = template
    return templates


@register_stage
class ToQuestions(Stage):
    name = "to_questions"
    row_wise = True

    class Params(StageParams):
        question_templates: Optional[str] = None

    def _templates_path(self) -> Path | None:
        return self.ctx.resolve(self.params.question_templates) if self.params.question_templates else None

    def input_files(self) -> list[Path]:
        path = self._templates_path()
        return [path] if path else []

    @cached_property
    def _templates(self) -> dict[str, str]:
        return load_question_templates(self._templates_path())

    def run(self, table) -> StageOutput:
        import polars as pl

        templates = self._templates
        names = table.collect_schema().names()
        defaults = {
            "subject_aliases": pl.lit([], dtype=pl.List(pl.Utf8)),
            "object_aliases": pl.lit([], dtype=pl.List(pl.Utf8)),
            "frequency": pl.lit(None, pl.Float64),
            "frequency_bin": pl.lit(None, pl.Utf8),
        }
        table = table.with_columns(expr.alias(col) for col, expr in defaults.items() if col not in names)

        subject = pl.col("subject")
        question_template = (
            pl.col("relation")
            .replace_strict(templates, default=None, return_dtype=pl.Utf8)
            .fill_null(pl.lit("What is the ") + pl.col("relation_label") + pl.lit(" of [X]?"))
        )
        question = question_template.str.replace("[X]", subject, literal=True)
        before_object = pl.col("template").str.split_exact("[Y]", 1).struct.field("field_0")
        cloze = (
            pl.when(before_object.str.contains("[X]", literal=True))
            .then(before_object.str.replace("[X]", subject, literal=True).str.strip_chars())
            .otherwise(question)
        )
        masked = (
            pl.col("template")
            .str.replace("[X]", subject, literal=True)
            .str.replace("[Y]", pl.lit("[MASK]"), literal=True)
            .str.strip_chars()
        )
        answers = pl.concat_list(pl.concat_list(pl.col("object")), pl.col("object_aliases").fill_null([])).list.unique(
            maintain_order=True
        )
        return StageOutput(
            kept=table.with_columns(
                question.alias("question"),
                cloze.alias("prompt_cloze"),
                masked.alias("prompt_masked"),
                answers.alias("answers"),
                pl.col("subject_aliases").fill_null([]),
                pl.col("object_aliases").fill_null([]),
            )
        )
