"""The extraction task's protocol record: the protocol each `--protocol` promises (MAPLE's
generate-and-match, LAMA's strict P@1), and where a run departs from it or reads it where the paper
is silent. Built by the code paths that depart (`kbench.tasks.extraction.task`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kbench.evaluate import departures
from kbench.protocol import REFERENCES, Deviation, Interpretation

#: the protocol name each --protocol promises, and its paper
PROTOCOLS = {"maple": ("maple-extraction", REFERENCES["maple"]), "lama": ("lama-strict-p@1", REFERENCES["lama"])}
#: LAMA's common_vocab_cased.txt (21,018 words), the list its strict P@1 ranks over, recognised by
#: the sha256 of its words sorted and joined by newlines (line endings and order do not matter)
LAMA_COMMON_VOCAB_SHA256 = "f60d53dcfcd13d99e34f0c0a68afdcd3bcc0d25a570401dff0c315e141f80198"
LAMA_VOCAB_PAPER = (
    "ranks over the common vocabulary of the compared models (LAMA's common_vocab_cased.txt, 21,018 words) "
    "and keeps only facts whose object is in it"
)
LAMA_VOCAB_EFFECT = (
    "lama_p_at_1 and first_token_p1: other competing tokens and another fact set, so not comparable with "
    "LAMA's published P@1 (nor across models whose candidate sets differ)"
)
EVERY_NUMBER = "every reported number (overall, per relation, per source, per frequency bin, the known facts)"


def vocabulary_deviation(common_vocab: str | None, vocab: set[str] | None, drops: dict) -> Deviation | None:
    """Where the strict protocol's candidate set departs from LAMA's common vocabulary."""
    if vocab is None:
        return Deviation(
            id="no-common-vocab",
            paper=LAMA_VOCAB_PAPER,
            kbench=f"ranks over the model's full vocabulary; keeps every single-token object "
            f"({drops['multi_token_object']} multi-token objects dropped); no --common-vocab",
            effect=LAMA_VOCAB_EFFECT,
        )
    assert common_vocab is not None  # the vocabulary was read from it
    sha256 = hashlib.sha256("\n".join(sorted(vocab)).encode("utf-8")).hexdigest()
    if sha256 != LAMA_COMMON_VOCAB_SHA256:
        return Deviation(
            id="common-vocab-not-lama",
            paper=LAMA_VOCAB_PAPER,
            kbench=f"--common-vocab {Path(common_vocab).name}: {len(vocab)} words (sha256 {sha256[:12]}), not LAMA's list",
            effect=LAMA_VOCAB_EFFECT,
        )
    return None


def prompt_deviation(protocol: str, form: str) -> Deviation | None:
    """MAPLE asks short-answer questions (plain or through the chat template of its instruct
    models); LAMA fills the relation's cloze template."""
    if protocol == "maple":
        return departures.prompt_form(
            form,
            ("question", "chat"),
            "asks each fact as a short-answer question (its benchmark is 'in a short-answer question format')",
            "the relation's cloze template, continued by the model",
            "maple_accuracy, exact_accuracy and every breakdown and rank of them",
        )
    return departures.prompt_form(
        form,
        ("cloze",),
        "fills the relation's cloze template at the object's position",
        "the fact asked as a question" + (" through the tokenizer's chat template" if form == "chat" else ""),
        "lama_p_at_1, first_token_p1 and every breakdown of them",
    )


def maple_interpretations(s) -> tuple[Interpretation, ...]:
    """kbench's readings where MAPLE is silent (none for LAMA, whose procedure is its code)."""
    if s.protocol != "maple":
        return ()
    out = [departures.maple_case(s.case_sensitive, "maple_accuracy, exact_accuracy, their breakdowns and the known facts")]
    if s.prompt in ("question", "chat"):
        out.append(
            Interpretation(
                "question-wording",
                paper="each fact is asked 'in a short-answer question format'; the wording of the prompt is not in the "
                "text kbench follows",
                kbench="'Answer the question with a short answer.' then 'Question: ...' and 'Answer:'"
                + (" through the model's chat template" if s.prompt == "chat" else ""),
                alternatives=("another instruction or cue around the same question (e.g. MAPLE's released prompts)",),
                effect="maple_accuracy, exact_accuracy and every breakdown and rank of them",
            )
        )
    return tuple(out)
