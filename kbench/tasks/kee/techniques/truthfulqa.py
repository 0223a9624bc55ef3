"""TruthfulQA as ITI's probing set (Li et al., 2023; MAPLE, Appendix B: "we split TruthfulQA into
training and validation sets to identify the top-K heads").

`kbench data fetch truthfulqa` puts `TruthfulQA.csv` (sylinrl/TruthfulQA, Apache-2.0) in
`<data root>/truthfulqa/`. Each question gives one true statement per reference answer (Best
Answer and Correct Answers, ";"-separated) and one false statement per Incorrect Answer, worded as
ITI's reference code words them: "Q: <question> A: <answer>". Questions, never single statements,
are cut into the probe-training and head-ranking shares, so no question is on both sides.

A file at that place is TruthfulQA only when it is (`not_truthfulqa`): its sha256 is the one
`kbench data fetch truthfulqa` recorded in the data lock when it downloaded the pinned commit's
file, or it holds TruthfulQA's 817 questions. Any other file (a 6-question test fixture, an edited
copy) still trains the probes, and the run's protocol block says they were not trained on TruthfulQA.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

from kbench.errors import InputError
from kbench.io import stable_hash

FOLDER = "truthfulqa"
CSV_NAME = "TruthfulQA.csv"
QUESTIONS = 817  # TruthfulQA's questions (Lin et al., 2022)
COLUMNS = ("Type", "Category", "Question", "Best Answer", "Correct Answers", "Incorrect Answers", "Source")


@dataclass(frozen=True)
class ProbingSet:
    path: Path
    sha256: str
    questions: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]  # (question, true answers, false answers)

    def statements(self, questions) -> tuple[list[str], list[str]]:
        """(true statements, false statements) of the given questions, in ITI's wording."""
        true = [f"Q: {q} A: {a}" for q, answers, _ in questions for a in answers]
        false = [f"Q: {q} A: {a}" for q, _, wrong in questions for a in wrong]
        return true, false

    def split(self, held_out: float) -> tuple[list, list]:
        """(probe-training questions, head-ranking questions): a deterministic cut by hashed question."""
        ordered = sorted(self.questions, key=lambda q: stable_hash(["truthfulqa", q[0]]))
        n_select = max(1, round(held_out * len(ordered))) if len(ordered) > 1 else 0
        return ordered[n_select:], ordered[:n_select]

    def describe(self) -> str:
        return f"TruthfulQA ({self.path.name}, {len(self.questions)} questions, sha256 {self.sha256[:12]})"


def find_csv() -> Path | None:
    """`<data root>/truthfulqa/TruthfulQA.csv` when the data root holds it."""
    from kbench.construct.data_root import find_data_dir

    root, _ = find_data_dir()
    path = root / FOLDER / CSV_NAME if root is not None else None
    return path if path is not None and path.is_file() else None


def not_truthfulqa(probing: ProbingSet) -> str | None:
    """None when `probing` is TruthfulQA (see the module doc), else why it is not."""
    from kbench.construct.data_root import find_data_dir
    from kbench.sources.catalog import TRUTHFULQA_CSV
    from kbench.sources.fetch_data import DataLock

    root, _ = find_data_dir()
    fetched = DataLock.load(root).files.get(TRUTHFULQA_CSV, {}).get("sha256") if root is not None else None
    questions = len({q for q, _, _ in probing.questions})
    if probing.sha256 == fetched or questions == QUESTIONS:
        return None
    return (
        f"{probing.path} holds {questions} questions, not TruthfulQA's {QUESTIONS}, and its sha256 "
        f"{probing.sha256[:12]} is not the one `kbench data fetch truthfulqa` recorded"
    )


def _answers(text: str) -> list[str]:
    return [a.strip() for a in (text or "").split(";") if a.strip()]


def read_probing_set(path: Path) -> ProbingSet:
    """Parse TruthfulQA.csv; a missing column or a question without true or false answers is an
    InputError naming the file and line."""
    data = path.read_bytes()
    rows = csv.DictReader(data.decode("utf-8-sig").splitlines())
    missing = [c for c in COLUMNS if c not in (rows.fieldnames or [])]
    if missing:
        raise InputError(str(path), f"not TruthfulQA's CSV: missing column(s) {', '.join(missing)}")
    questions = []
    for row in rows:
        true = list(dict.fromkeys([*_answers(row["Best Answer"]), *_answers(row["Correct Answers"])]))
        false = _answers(row["Incorrect Answers"])
        if not row["Question"].strip() or not true or not false:
            raise InputError(str(path), "a question needs its text, a true answer and an incorrect answer", line=rows.line_num)
        questions.append((row["Question"].strip(), tuple(true), tuple(false)))
    if not questions:
        raise InputError(str(path), "no questions")
    return ProbingSet(path, hashlib.sha256(data).hexdigest(), tuple(questions))
