"""REBEL's linearised triplet format: parsing, writing, and mapping surface forms back to text.

REBEL (Huguet Cabot & Navigli, 2021) generates, per sentence, a string such as

    <triplet> Trinity Peninsula <subj> Graham Land <obj> part of <subj> Antarctica <obj> continent
    <triplet> Graham Land <subj> Antarctica <obj> continent

After `<triplet>` comes a head (subject); each `<subj> TAIL <obj> RELATION` pair adds one triplet
with that head, so one head can carry several triplets; the next `<triplet>` starts a new head.
`parse_rebel_output` follows the parser in the REBEL README, with two deliberate differences that
make malformed generations explicit rather than silently shifted:

  * a triplet is emitted only when head, tail and relation are all non-empty (a `<subj>` without
    its `<obj>`, or an `<obj>` with nothing after it, yields nothing for that pair);
  * `<s>`, `</s>` and `<pad>` are removed before parsing, and whitespace is collapsed.

`find_span` maps a head/tail back to a character span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TRIPLET, SUBJ, OBJ = "<triplet>", "<subj>", "<obj>"
SPECIAL_TOKENS = (TRIPLET, SUBJ, OBJ)
_NOISE = re.compile(r"<s>|</s>|<pad>")
_MARKERS = re.compile(r"(<triplet>|<subj>|<obj>)")


@dataclass(frozen=True)
class ParsedTriplet:
    head: str
    tail: str
    relation: str


def parse_rebel_output(text: str) -> list[ParsedTriplet]:
    """All complete (head, tail, relation) triplets in one decoded REBEL generation, in order."""
    text = _NOISE.sub(" ", text)
    found: list[ParsedTriplet] = []
    head = tail = relation = ""
    state = None  # which slot the next words belong to

    def emit() -> None:
        if head and tail and relation:
            found.append(ParsedTriplet(head, tail, relation))

    for part in _MARKERS.split(text):
        if part == TRIPLET:
            if state == "relation":
                emit()
            head, tail, relation, state = "", "", "", "head"
        elif part == SUBJ:
            if state == "relation":
                emit()  # the head is shared by the next pair
            tail, relation, state = "", "", "tail"
        elif part == OBJ:
            relation, state = "", "relation"
        else:
            words = " ".join(part.split())
            if not words or state is None:
                continue
            if state == "head":
                head = f"{head} {words}".strip()
            elif state == "tail":
                tail = f"{tail} {words}".strip()
            else:
                relation = f"{relation} {words}".strip()
    if state == "relation":
        emit()
    return found


def find_span(text: str, surface: str, *, near: int | None = None) -> tuple[int, int] | None:
    """Character span of `surface` in `text`: exact match first, then case-insensitive.

    With several occurrences, the one starting closest to `near` (default: the first) wins, so a
    tail is mapped to the occurrence next to its head. None when the surface is not in the text
    (REBEL may generate a normalised name that the sentence does not contain).
    """
    if not surface:
        return None
    for haystack, needle in ((text, surface), (text.casefold(), surface.casefold())):
        if len(haystack) != len(text):  # casefold changed lengths (e.g. "ß"); offsets would lie
            continue
        starts = [m.start() for m in re.finditer(re.escape(needle), haystack)]
        if starts:
            best = starts[0] if near is None else min(starts, key=lambda s: (abs(s - near), s))
            return best, best + len(surface)
    return None


def sentence_splitter():
    """spaCy's rule-based sentencizer on a blank English pipeline: no model download."""
    from kbench.errors import require

    spacy = require("spacy", "sentence splitting", extra="text")
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def sentence_spans(nlp, text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of each sentence in `text`, trailing whitespace excluded."""
    return [(s.start_char, s.end_char) for s in nlp(text).sents if s.text.strip()]
