"""Question rows for inline test datasets: every column `schemas/question.v1.json` requires,
so tasks that check a split's columns against the schema accept them."""

from __future__ import annotations


def question_row(**fields) -> dict:
    subject, obj = fields.get("subject", "S"), fields.get("object", "O")
    row = {"id": "q0", "relation": "P0", "relation_label": "", "template": "[X] is [Y] .", "subject": subject,
           "subject_id": None, "object": obj, "object_id": None, "source": "inline", "subject_aliases": [],
           "object_aliases": [], "answers": [obj], "prompt_cloze": f"{subject} is", "prompt_masked": f"{subject} is [MASK] .",
           "question": f"What is {subject}?", "frequency": None, "frequency_bin": None, "split": "test"}
    row.update(fields)
    return row
