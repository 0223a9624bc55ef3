"""Stage `textbook_statements`: LEFT's balanced true/false statements from multiple-choice questions.

Input: the rows of `load_textbook` (question, options, answer_index, ...). Output: two rows per
question, a true statement built with the correct option and a false one built with a wrong
option, differing only in that option (so word overlap is high, as LEFT asks). Columns:

    id ("<pair_id>/true" | "<pair_id>/false"), pair_id ("<book>/<exercise_id>"), statement, label (bool),
    option (the option used), correct_option, form, word_overlap (Jaccard of the pair's word sets),
    plus the question's book, license, chapter, chapter_title, section, section_title, split, question,
    paragraphs, paragraph_ids.

How a question becomes a statement (`form`), first rule that applies:
  * `fill_blank`: the question has blanks (`___`); each blank gets the option (an option for
    several blanks is "a; b", one part per blank). A blank that opens a sentence is capitalised.
  * `subject_question`: "Which [of the following|of these] [noun ...] VERB rest?" (also What/Who):
    the option replaces the wh-phrase -> "Option VERB rest." The verb is found on spaCy's rule-based
    tokens (`spacy.blank("en")`, no tagger): a word from a closed list of auxiliaries and common
    verbs, or a lowercase word ending in "-ed". Not used when the option is itself a sentence
    (ends in . ! ?), when the verb is do/does/did (the wh-word is then an object), or when no
    verb follows within four words.
  * `fallback`: "<question> <Option>." -- the question followed by the option as its answer; still
    a true or false claim, with the same overlap property.

The wrong option is drawn with a seed from the options that do not refer to other options
("all of the above", "both B and C", "none of the statements ..."), so the false statement is false.
Drops (counted): `no_answer_key` (no answer index); `answer_refers_to_other_options` (the key is such
a meta option, so no single wrong option gives a false statement); `no_wrong_option`.

Side output: `statement_stats.json` in the run directory: pairs, mean word overlap (all, per split,
per book) and counts per form.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.errors import require
from kbench.io import stable_hash, write_json

STATS_FILE = "statement_stats.json"
_BLANK = re.compile(r"_{3,}")
_META_OPTION = re.compile(r"^(all|none|both|neither)\b.*\b(above|statements|these)\b|^both [A-E] and [A-E]\.?$", re.I)
_WH_LEADS = (("which", "of", "the", "following"), ("which", "of", "these"), ("which",), ("what",), ("who",))
# Verbs that follow a subject wh-phrase in review questions; "-ed" words are caught by rule.
_VERBS = {
    "is",
    "was",
    "are",
    "were",
    "has",
    "had",
    "have",
    "can",
    "could",
    "would",
    "will",
    "should",
    "may",
    "might",
    "must",
    "made",
    "led",
    "took",
    "gave",
    "became",
    "began",
    "won",
    "lost",
    "built",
    "brought",
    "sought",
    "fought",
    "wrote",
    "held",
    "kept",
    "left",
    "paid",
    "sent",
    "set",
    "spent",
    "ran",
    "saw",
    "said",
    "sold",
    "came",
    "went",
    "grew",
    "knew",
    "rose",
    "fell",
    "drew",
    "found",
    "put",
    "got",
    "struck",
    "meant",
    "did",
    "does",
    "do",
    "describes",
    "explains",
    "represents",
    "includes",
    "characterizes",
    "requires",
    "allows",
    "refers",
    "means",
    "provides",
    "makes",
    "gives",
    "takes",
    "leads",
    "helps",
    "shows",
    "occurs",
    "contains",
}
_DO_SUPPORT = {"do", "does", "did"}
_ADVERBS_BEFORE_VERB = {"best", "most", "least", "also", "not", "first", "still", "actually"}
_MAX_NOUN_WORDS = 4


@lru_cache(maxsize=1)
def _make_doc():
    """spaCy's rule-based word splitting (`blank("en")`, no model download): text -> a Doc of words."""
    spacy = require("spacy", "textbook statements", "text")
    return spacy.blank("en").make_doc


def words(text: str) -> list[str]:
    """Lowercased word tokens (spaCy's rule-based word splitting), punctuation dropped."""
    return [t.lower_ for t in _make_doc()(text) if not (t.is_punct or t.is_space)]


def word_overlap(a: str, b: str) -> float:
    """Jaccard similarity of the two statements' word sets (1.0 = same words)."""
    sa, sb = set(words(a)), set(words(b))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def is_meta_option(option: str) -> bool:
    return bool(_META_OPTION.search(option.strip()))


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _is_sentence(option: str) -> bool:
    return option.rstrip().endswith((".", "!", "?"))


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"([.!?])\s*\.", r"\1", text)  # an option's own period before the question's
    return re.sub(r"\s+([,.;:!?])", r"\1", text)


def fill_blanks(question: str, option: str) -> str | None:
    blanks = _BLANK.findall(question)
    parts = [option] if len(blanks) == 1 else [p.strip() for p in option.split(";")]
    if len(parts) != len(blanks):
        return None
    pieces = _BLANK.split(question)
    out = pieces[0]
    for part, after in zip(parts, pieces[1:]):
        opens_sentence = not out.strip() or out.rstrip().endswith((".", "!", "?", ":"))
        out += (_capitalise(part) if opens_sentence else part) + after
    return _tidy(out)


def subject_question(question: str, option: str) -> str | None:
    if _is_sentence(option) or not question.rstrip().endswith("?"):
        return None
    tokens = list(_make_doc()(question.rstrip().rstrip("?")))
    lowered = [t.lower_ for t in tokens]
    lead = next((w for w in _WH_LEADS if tuple(lowered[: len(w)]) == w), None)
    if lead is None:
        return None
    for i in range(len(lead), min(len(tokens), len(lead) + _MAX_NOUN_WORDS + 1)):
        token = tokens[i]
        if token.is_punct:
            return None
        is_verb = token.lower_ in _VERBS or (token.text.islower() and token.text.endswith("ed") and len(token.text) > 3)
        if not is_verb:
            continue
        if token.lower_ in _DO_SUPPORT:
            return None
        start = i
        while start - 1 >= len(lead) and tokens[start - 1].lower_ in _ADVERBS_BEFORE_VERB:
            start -= 1  # "Which of the following best describes X" keeps "best"
        rest = question.rstrip().rstrip("?")[tokens[start].idx :]
        return _tidy(f"{_capitalise(option.strip())} {rest}.")
    return None


def fallback_statement(question: str, option: str) -> str:
    option = _capitalise(option.strip())
    return _tidy(f"{question.strip()} {option}" + ("" if _is_sentence(option) else "."))


def make_statement(question: str, option: str) -> tuple[str, str]:
    """(statement, form) for one question filled with one option."""
    if _BLANK.search(question):
        filled = fill_blanks(question, option)
        if filled is not None:
            return filled, "fill_blank"
    rewritten = subject_question(question, option)
    if rewritten is not None:
        return rewritten, "subject_question"
    return fallback_statement(question, option), "fallback"


def pick_wrong_option(options: list[str], answer_index: int, seed: int, pair_id: str) -> str | None:
    correct = options[answer_index].strip()
    candidates = [o for i, o in enumerate(options) if i != answer_index and o.strip() != correct and not is_meta_option(o)]
    if not candidates:
        return None
    rng = random.Random(int(stable_hash([seed, pair_id])[:16], 16))  # per question: independent of row order
    return rng.choice(candidates)


def _pair_form(question: str, true_option: str, false_option: str) -> tuple[str, str, str]:
    """Both statements with one form: if either option needs the fallback, both use it."""
    true_text, true_form = make_statement(question, true_option)
    false_text, false_form = make_statement(question, false_option)
    if true_form != false_form:
        return fallback_statement(question, true_option), fallback_statement(question, false_option), "fallback"
    return true_text, false_text, true_form


@register_stage
class TextbookStatements(Stage):
    name = "textbook_statements"
    preserves_rows = False  # one question in, two statements out
    version = 1

    class Params(StageParams):
        seed: int | None = None  # defaults to the recipe's pipeline.seed

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        return [
            Deviation(
                id="statements-by-rule",
                paper="LEFT's authors manually rewrote each review question into one true and one false statement",
                kbench="statements are made by rule (fill the blank, replace the wh-phrase, or question + option) "
                "with a seeded wrong option; instructors' community questions are not added",
                effect="the wording of every statement, and so the accuracy of every LEFT configuration",
            )
        ]

    def run(self, table) -> StageOutput:
        import polars as pl

        seed = self.ctx.seed if self.params.seed is None else self.params.seed
        kept: list[dict] = []
        rejected: list[dict] = []
        for row in table.collect().iter_rows(named=True):
            pair_id = f"{row['book']}/{row['exercise_id']}"
            index = row["answer_index"]
            if index is None:
                rejected.append({**row, "reason": "no_answer_key"})
                continue
            options = row["options"]
            if is_meta_option(options[index]):
                rejected.append({**row, "reason": "answer_refers_to_other_options"})
                continue
            wrong = pick_wrong_option(options, index, seed, pair_id)
            if wrong is None:
                rejected.append({**row, "reason": "no_wrong_option"})
                continue
            true_text, false_text, form = _pair_form(row["question"], options[index], wrong)
            overlap = word_overlap(true_text, false_text)
            base = {k: row[k] for k in CARRIED}
            for label, text, option in ((True, true_text, options[index]), (False, false_text, wrong)):
                kept.append(
                    {
                        "id": f"{pair_id}/{str(label).lower()}",
                        "pair_id": pair_id,
                        "statement": text,
                        "label": label,
                        "option": option,
                        "correct_option": options[index],
                        "form": form,
                        "word_overlap": overlap,
                        **base,
                    }
                )
        write_json(self.ctx.output_path(STATS_FILE), statement_stats(kept, rejected))
        kept_frame = pl.DataFrame(kept, schema=_output_schema(pl, table))
        rejected_frame = pl.DataFrame(rejected, schema={**table.collect_schema(), "reason": pl.String}) if rejected else None
        return StageOutput(kept=kept_frame, rejected=rejected_frame)


# The question's columns every statement carries.
CARRIED = (
    "book", "license", "chapter", "chapter_title", "section", "section_title", "split", "question", "paragraphs",
    "paragraph_ids",
)  # fmt: skip


def _output_schema(pl, table) -> dict:
    source = table.collect_schema()
    schema = {
        "id": pl.String,
        "pair_id": pl.String,
        "statement": pl.String,
        "label": pl.Boolean,
        "option": pl.String,
        "correct_option": pl.String,
        "form": pl.String,
        "word_overlap": pl.Float64,
    }
    return {**schema, **{name: source[name] for name in CARRIED}}


def statement_stats(kept: list[dict], rejected: list[dict]) -> dict:
    """Pairs and mean word overlap overall, per split and per book; counts per form and drop reason."""
    pairs = [r for r in kept if r["label"]]

    def mean_overlap(rows: list[dict]) -> float | None:
        return round(sum(r["word_overlap"] for r in rows) / len(rows), 4) if rows else None

    def grouped(key: str) -> dict:
        groups: dict[str, list[dict]] = {}
        for r in pairs:
            groups.setdefault(str(r[key]), []).append(r)
        return {k: {"pairs": len(v), "mean_word_overlap": mean_overlap(v)} for k, v in sorted(groups.items())}

    forms: dict[str, int] = {}
    for r in pairs:
        forms[r["form"]] = forms.get(r["form"], 0) + 1
    reasons: dict[str, int] = {}
    for r in rejected:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    return {
        "pairs": len(pairs),
        "statements": len(kept),
        "mean_word_overlap": mean_overlap(pairs),
        "per_split": grouped("split"),
        "per_book": grouped("book"),
        "forms": dict(sorted(forms.items())),
        "rejected": dict(sorted(reasons.items())),
    }
