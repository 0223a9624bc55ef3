"""LEFT's protocol block for `kbench evaluate truefalse` (`kbench.protocol`): left-prior,
left-closed-book or left-open-book, and where this run departs from the paper's baselines.

The paper (LEFT, Section 3): T5 and GPT-Neo fine-tuned on BoolQ classify each statement; for the
prior and closed-book settings the fine-tuning uses "only BoolQ's questions", closed book reads
the textbook first (continued light pre-training), open book adds one natural paragraph (retrieved
with sBERT, or the manually identified goldIR paragraph), statement and paragraph cut to 128 word
pieces together. The entries come from the run's settings and the BoolQ checkpoint's record.
Where the paper is silent (which sBERT checkpoint, what the retriever is queried with) the block
lists kbench's reading as an interpretation.
"""

from __future__ import annotations

import json
from pathlib import Path

from kbench.models.training.boolq import BOOLQ_TRAIN_QUESTIONS, read_marker
from kbench.protocol import REFERENCES, Deviation, Interpretation, ProtocolRecord

ACCURACY = "accuracy and pair_choice_accuracy (closed book: before, after and closed-book - prior)"


def check_boolq_folder(folder: Path) -> None:
    """A `--boolq-checkpoint` must be a model folder the task can score as a causal LM (a bad
    `boolq.json` is reported by `read_marker`)."""
    if not folder.is_dir():
        raise ValueError(f"--boolq-checkpoint {folder}: not a folder (write one with kbench.models.training.boolq)")
    config = folder / "config.json"
    if not config.is_file():
        raise ValueError(f"--boolq-checkpoint {folder}: no config.json (not a saved model folder)")
    try:
        architectures = json.loads(config.read_text()).get("architectures") or []
    except json.JSONDecodeError as exc:
        raise ValueError(f"--boolq-checkpoint {config}: not JSON ({exc.msg}, line {exc.lineno})") from exc
    if any(a.endswith("ForSequenceClassification") for a in architectures):
        raise ValueError(
            f"--boolq-checkpoint {folder}: a sequence-classification head cannot be scored on the answer forms; "
            "fine-tune the causal LM with kbench.models.training.boolq.finetune_boolq"
        )
    read_marker(folder)


def judge_description(settings) -> dict:
    """`metrics.judge`: how statements were called true."""
    if settings.boolq_checkpoint is None:
        return {"kind": "zero-shot"}
    folder = Path(settings.boolq_checkpoint)
    return {"kind": "boolq-fine-tuned", "checkpoint": str(folder), "boolq": read_marker(folder)}


def left_protocol(settings, n_statements: int) -> ProtocolRecord:
    """The block of a truefalse run with `settings` over `n_statements` statements."""
    deviations = _judge(settings)
    if settings.setting == "open-book" and settings.retriever == "sbert":
        deviations.append(
            Deviation(
                "sbert-chapter-scope",
                "open book: the model can access the textbook (or the relevant chapter) during the test; one natural "
                "paragraph is retrieved with sBERT",
                "MiniLM retrieves only among the paragraphs of the statement's own chapter: narrower than the textbook, "
                "and the statement's chapter (known from its review question) is a hint the retriever is given",
                ACCURACY + "; open book - prior",
            )
        )
    if settings.setting == "open-book":
        if settings.retriever == "gold":
            deviations.append(
                Deviation(
                    "gold-paragraph-by-overlap",
                    "goldIR: the textbook paragraph a person identified as holding the information for the statement",
                    "the paragraph of the statement's section that shares most words with its question and correct option",
                    ACCURACY,
                )
            )
        deviations.append(
            Deviation(
                "passage-cut",
                "statement and paragraph together cut to 128 word pieces",
                f"the paragraph cut to {settings.max_passage_words} words, the statement kept whole",
                ACCURACY,
            )
        )
    if settings.limit is not None:
        deviations.append(
            Deviation(
                "sample-limit",
                "every statement of the split",
                f"the first {n_statements} statements in dataset order, whole pairs (--limit {settings.limit})",
                ACCURACY,
            )
        )
    return ProtocolRecord(f"left-{settings.setting}", REFERENCES["left"], tuple(deviations), left_interpretations(settings))


def left_interpretations(settings) -> tuple[Interpretation, ...]:
    """kbench's readings where LEFT is silent, for this run's setting and judge."""
    out = []
    if settings.setting == "open-book" and settings.retriever == "sbert":
        out += [
            Interpretation(
                "sbert-checkpoint",
                "paragraphs retrieved 'using sBERT' (Reimers and Gurevych 2019); no checkpoint is named",
                "all-MiniLM-L6-v2 (the packaged sentence-transformers model), cosine top-1",
                ("another sentence-transformers checkpoint (e.g. an MPNet or a QA-tuned model)",),
                ACCURACY + " (open book)",
            ),
            Interpretation(
                "sbert-query",
                "the retrieval query is not stated",
                "the statement itself",
                ("the review question", "the question with its options"),
                ACCURACY + " (open book)",
            ),
        ]
    return tuple(out)


def _judge(settings) -> list[Deviation]:
    paper = "a model fine-tuned on BoolQ (its questions only, for the prior and closed book) classifies each statement"
    if settings.boolq_checkpoint is None:
        return [
            Deviation(
                "zero-shot-judge",
                paper,
                "zero-shot: the statement is called true when logP(' True') > logP(' False') after the prompt "
                "(--boolq-checkpoint gives a BoolQ fine-tune)",
                ACCURACY,
            )
        ]
    record = read_marker(Path(settings.boolq_checkpoint))
    if record is None:
        return [
            Deviation(
                "boolq-training-unrecorded",
                "fine-tuned on BoolQ's train split",
                f"{settings.boolq_checkpoint} has no boolq.json: what it was fine-tuned on is not recorded",
                ACCURACY,
            )
        ]
    out = []
    if record["questions"] < BOOLQ_TRAIN_QUESTIONS:
        out.append(
            Deviation(
                "boolq-subset",
                f"fine-tuned on BoolQ's train split ({BOOLQ_TRAIN_QUESTIONS} questions)",
                f"fine-tuned on {record['questions']} questions from {record.get('source', 'an unnamed source')}",
                ACCURACY,
            )
        )
    if settings.setting == "prior" and record.get("passages"):
        out.append(
            Deviation(
                "boolq-with-passages",
                "for the prior, fine-tuned on BoolQ's questions only, its text snippets ignored",
                "fine-tuned with BoolQ passages in the prompt",
                ACCURACY,
            )
        )
    return out
