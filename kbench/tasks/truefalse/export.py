"""`kbench export` of LEFT statement datasets (`schemas/statement.v1.json`), judged as `kbench evaluate
truefalse --setting prior` judges them: the log-probabilities of the answers " True" and " False" after
the statement prompt. `--limit` takes the first whole pairs, as kbench does.

lm-eval: a `multiple_choice` task over the continuations " True" and " False" (`target_delimiter: ""`,
so the scored strings are exactly kbench's), reporting `acc` (margin > 0 means true: kbench's headline
`accuracy`, LEFT's per-statement accuracy) and `pair_acc` (kbench's `pair_choice_accuracy`: within each
true/false pair the statement with the higher margin is called true; the share of pairs called right).

Inspect: none. Its generate-and-score loop has no counterpart for answer log-probabilities after a
plain-text prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from kbench.dataset import read_rows
from kbench.errors import UserError
from kbench.export.items import EXPORTS, ExportDocs, ExportSpec
from kbench.export.lmeval import yaml_scalar
from kbench.export.standalone import pair_choice_source
from kbench.records import Statement
from kbench.tasks.truefalse.task import ANSWERS, first_pairs, prompt_text

_LMEVAL_SCORING = '''

def process_results(doc, results):
    """results: (log-likelihood, is_greedy) of " True" then " False"; margin = logP(True) - logP(False)."""
    margin = results[0][0] - results[1][0]
    return {"acc": float((margin > 0) == doc["label"]), "pair_acc": (doc["pair_id"], doc["label"], margin)}


def pair_calibrated_accuracy(items):
    """kbench's decision: each pair holds one true and one false statement; the one with the higher
    margin is called true, the other false (a tie calls both false, so the pair is wrong). Removes
    the model's overall bias towards one answer word. The share of pairs called right."""
    pairs = defaultdict(list)
    for pair_id, label, margin in items:
        pairs[pair_id].append((label, margin))
    correct = 0
    for members in pairs.values():
        called_true = pair_choice([margin for _, margin in members])
        correct += all(call == label for call, (label, _) in zip(called_true, members))
    return correct / len(pairs)  # one outcome per pair, as kbench counts it
'''


@EXPORTS.register("truefalse")
class TrueFalseExport:
    columns = frozenset({"statement", "pair_id", "label"})
    rows = "LEFT statements (schemas/statement.v1.json)"
    default_split = "dev"
    lmeval_imports: tuple[str, ...] = ("from collections import defaultdict",)
    inspect_refusal: str | None = (  # so it has no inspect_source
        "LEFT statements are judged by answer log-probabilities, which Inspect does not score; "
        "export them with `kbench export lm-eval` (multiple_choice)"
    )

    def docs(self, path: Path, dataset: Path, spec: ExportSpec) -> list[dict]:
        if spec.prompt != "cloze" or spec.fewshot:
            raise UserError(
                "a LEFT statement dataset has one prompt form (the prior-setting statement prompt); drop --prompt and --fewshot"
            )
        docs = []
        statements = cast(list[Statement], read_rows(path, "statement.v1.json"))  # columns checked by the schema
        for pair in first_pairs(statements, spec.limit):
            for row in pair:
                docs.append(
                    {
                        "id": row["id"],
                        "pair_id": row["pair_id"],
                        "book": row["book"],
                        "chapter": row["chapter"],
                        "statement": row["statement"],
                        "label": bool(row["label"]),
                        "prompt": prompt_text(row["statement"], None, 0),
                        "gold": ANSWERS.index(" True" if row["label"] else " False"),
                    }
                )
        return docs

    def lmeval_name_parts(self, prompt: str) -> list[str]:
        return []  # one prompt form

    def check_lmeval(self, prompt: str) -> None:
        """Statements have one prompt form; `docs` has refused any other already."""

    def lmeval_scoring(self, case_sensitive: bool) -> str:
        return pair_choice_source() + _LMEVAL_SCORING

    def lmeval_yaml(self, docs: ExportDocs) -> str:
        return (
            f'output_type: multiple_choice\ndoc_to_choice: {yaml_scalar(list(ANSWERS))}\ntarget_delimiter: ""\n'
            "doc_to_target: gold\nmetric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
            "  - metric: pair_acc\n    aggregation: !function utils.pair_calibrated_accuracy\n    higher_is_better: true\n"
        )

    def inspect_source(self, docs: ExportDocs, name: str, data_file: str, case_sensitive: bool) -> str:
        raise UserError(str(self.inspect_refusal))  # `kbench export inspect` refuses before it asks
