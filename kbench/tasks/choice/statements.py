"""Statements as lm-pub-quiz writes them, cut where the candidate starts.

lm-pub-quiz (`Templater.replace_placeholders`) replaces every [X] by the subject and every [Y] by
the candidate, then upper-cases the statement's first character. The statement is scored as one
text after the model's start token. kbench scores the same text in two parts: the prefix (the
text before the candidate, which every candidate of an item shares) once per item, and the rest
once per candidate, as the continuation of start + prefix. The whitespace before the candidate
goes with the candidate (" Warsaw"), which is how a BPE tokeniser cuts the whole statement, so the
two parts hold the whole statement's tokens and the sum of their log-probs is the statement's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SUBJECT, ANSWER = "[X]", "[Y]"
_PLACEHOLDER = re.compile(re.escape(SUBJECT) + "|" + re.escape(ANSWER))


@dataclass(frozen=True)
class Statement:
    prefix: str  # before the candidate, without its trailing whitespace ("" when [Y] comes first)
    answer: str  # that whitespace and the candidate (" Warsaw")
    suffix: str  # after the candidate (" .")

    @property
    def text(self) -> str:
        return self.prefix + self.answer + self.suffix


def fill(template: str, subject: str, candidate: str) -> Statement:
    """The statement of `template` with [X] = subject and [Y] = candidate, first character upper-cased,
    cut at the first [Y]."""
    text, spans, end = "", [], 0
    for match in _PLACEHOLDER.finditer(template):
        value = subject if match.group() == SUBJECT else candidate
        text += template[end : match.start()]
        if match.group() == ANSWER:
            spans.append((len(text), len(text) + len(value)))
        text += value
        end = match.end()
    text += template[end:]
    if not spans:
        raise ValueError(f"template {template!r} has no {ANSWER}")
    text = text[:1].upper() + text[1:]
    start, stop = spans[0]
    before = text[:start]
    prefix = before.rstrip()
    return Statement(prefix=prefix, answer=before[len(prefix) :] + text[start:stop], suffix=text[stop:])
