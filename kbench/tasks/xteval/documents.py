"""The document generator P(d | H, R, T) of XTEVAL and its 8 input types (paper Table 1).

A `Triple` is one fact (head, relation, tail) of D^theta. An input type says which of the
three slots are fixed to the query fact's values; every other slot is sampled from D^theta,
always different from the query fact's value in that slot, so a negative document never
repeats the gold slot it is meant to replace. A template of the document's relation is chosen
at random and filled in ([X] = head, [Y] = tail).

Contracts:
- `sample(doc_type, fact, rng)` returns a `Document` whose fixed slots equal `fact`'s and whose
  free slots all differ from it, or None when D^theta has no alternative for a free slot.
- A document whose (head, relation) equals the query's never carries one of the query's true
  tails unless it is the gold document: N-M relations cannot turn a negative into a true answer.
- All randomness comes from the `random.Random` passed in, so a seed reproduces every document.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kbench.errors import UserError

# (keep head, keep relation, keep tail) per input type, named as in the paper.
INPUT_TYPES: dict[str, tuple[bool, bool, bool]] = {
    "(h,r,t)": (True, True, True),
    "(h,r,.)": (True, True, False),
    "(.,r,t)": (False, True, True),
    "(h,.,t)": (True, False, True),
    "(.,.,t)": (False, False, True),
    "(.,r,.)": (False, True, False),
    "(h,.,.)": (True, False, False),
    "(.,.,.)": (False, False, False),
}
GOLD = "(h,r,t)"
TRAIN_NEGATIVE_TYPES = ("(h,r,.)", "(.,r,t)", "(h,.,t)")  # the hardest: one slot differs
QUERY_BLANK = "___"


@dataclass(frozen=True)
class Triple:
    head: str
    relation: str
    tail: str


@dataclass(frozen=True)
class Document:
    text: str
    head: str
    relation: str
    tail: str
    doc_type: str  # an INPUT_TYPES key, or "true-unrelated"


def render(template: str, head: str, tail: str) -> str:
    """Fill a LAMA-style template; LAMA writes "[Y] ." so the space before the period goes."""
    text = template.replace("[X]", head).replace("[Y]", tail).strip()
    for punct in (" .", " ?", " ,"):
        text = text.replace(punct, punct[1])
    return text


class DocumentGenerator:
    """P(d | H, R, T) over the facts of D^theta with `templates[relation]` (a list per relation)."""

    def __init__(self, facts: Sequence[Triple], templates: dict[str, list[str]]):
        if not facts:
            raise UserError("the document generator needs at least one extracted fact (D^theta is empty)")
        missing = sorted({f.relation for f in facts} - {r for r, ts in templates.items() if ts})
        if missing:
            raise UserError(f"no template for relation(s) {', '.join(missing)}")
        self.templates = templates
        self.relations = sorted({f.relation for f in facts})
        self.heads = sorted({f.head for f in facts})
        self.tails = sorted({f.tail for f in facts})
        heads_by_rel: dict[str, set[str]] = defaultdict(set)
        tails_by_rel: dict[str, set[str]] = defaultdict(set)
        self._true_tails: dict[tuple[str, str], set[str]] = defaultdict(set)
        for f in facts:
            heads_by_rel[f.relation].add(f.head)
            tails_by_rel[f.relation].add(f.tail)
            self._true_tails[(f.head, f.relation)].add(f.tail)
        self.heads_by_rel = {r: sorted(v) for r, v in heads_by_rel.items()}
        self.tails_by_rel = {r: sorted(v) for r, v in tails_by_rel.items()}

    # -- queries and documents -------------------------------------------------------------
    def query(self, fact: Triple, rng: random.Random) -> str:
        """The query q: the fact with its tail removed, in a randomly chosen template."""
        return render(rng.choice(self.templates[fact.relation]), fact.head, QUERY_BLANK)

    def document(self, head: str, relation: str, tail: str, doc_type: str, rng: random.Random) -> Document:
        return Document(render(rng.choice(self.templates[relation]), head, tail), head, relation, tail, doc_type)

    def sample(self, doc_type: str, fact: Triple, rng: random.Random) -> Document | None:
        """One document of input type `doc_type` for the query fact (None if a slot has no alternative)."""
        if doc_type not in INPUT_TYPES:
            raise UserError(f"unknown document type {doc_type!r}; known: {', '.join(INPUT_TYPES)}")
        keep_h, keep_r, keep_t = INPUT_TYPES[doc_type]
        relation = fact.relation if keep_r else self._pick(self.relations, fact.relation, rng)
        if relation is None:
            return None
        head = (
            fact.head
            if keep_h
            else self._pick(self._slot_pool(self.heads_by_rel, self.heads, relation, fact.head), fact.head, rng)
        )
        if head is None:
            return None
        tail: str | None
        if keep_t:
            tail = fact.tail
        else:
            # Never use a true tail of the query's (head, relation): that document would be correct.
            banned = (
                self._true_tails.get((fact.head, fact.relation), set())
                if (head, relation) == (fact.head, fact.relation)
                else set()
            )
            pool = [t for t in self._slot_pool(self.tails_by_rel, self.tails, relation, fact.tail) if t not in banned]
            tail = self._pick(pool, fact.tail, rng)
            if tail is None:
                return None
        return self.document(head, relation, tail, doc_type, rng)

    def gold(self, fact: Triple, rng: random.Random) -> Document:
        """The query fact's gold document (GOLD keeps every slot, so there is always one)."""
        doc = self.sample(GOLD, fact, rng)
        assert doc is not None
        return doc

    def sample_many(self, doc_type: str, fact: Triple, n: int, rng: random.Random) -> list[Document]:
        docs = (self.sample(doc_type, fact, rng) for _ in range(n))
        return [d for d in docs if d is not None]

    def enumerate_head_relation(self, fact: Triple, rng: random.Random) -> list[Document]:
        """Every (h,r,.) document: the query's head and relation with each other candidate tail, i.e.
        every tail D^theta holds for this relation (all of D^theta's tails if it holds no other)."""
        banned = self._true_tails.get((fact.head, fact.relation), set()) | {fact.tail}
        pool = self._slot_pool(self.tails_by_rel, self.tails, fact.relation, fact.tail)
        return [self.document(fact.head, fact.relation, t, "(h,r,.)", rng) for t in pool if t not in banned]

    def true_unrelated(self, fact: Triple, pool: Iterable[Triple], n: int, rng: random.Random) -> list[Document]:
        """Up to n documents of true facts from `pool` sharing no slot with the query fact."""
        candidates = sorted(
            {p for p in pool if p.head != fact.head and p.relation != fact.relation and p.tail != fact.tail},
            key=lambda p: (p.relation, p.head, p.tail),
        )
        chosen = rng.sample(candidates, min(n, len(candidates)))
        return [self.document(p.head, p.relation, p.tail, "true-unrelated", rng) for p in chosen]

    # -- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _slot_pool(by_relation: dict[str, list[str]], everything: list[str], relation: str, gold: str) -> list[str]:
        """Entities seen in this slot of `relation` when some differ from the gold, else all of D^theta's.

        Keeping the entity type of the relation makes negatives look plausible, so only knowledge
        (not "a city does not fit here") separates them from the gold document."""
        typed = by_relation.get(relation, [])
        return typed if any(e != gold for e in typed) else everything

    @staticmethod
    def _pick(pool: Sequence[str], gold: str, rng: random.Random) -> str | None:
        options = [e for e in pool if e != gold]
        return rng.choice(options) if options else None


def load_templates(
    lama_dir, extra: dict[str, list[str]] | None = None, variants: tuple[str, ...] | None = ("LPAQA",)
) -> dict[str, list[str]]:
    """Templates per relation: `relations.jsonl` of a LAMA folder plus the paraphrase files
    `prompt_variants/<name>_relations.jsonl` named in `variants` (None: every file there), merged
    into `extra` and deduplicated. The default keeps LPAQA's natural-language paraphrases and
    leaves out AutoPrompt's optimised token strings, which do not read as documents."""
    from pathlib import Path

    from kbench.errors import InputError
    from kbench.io import iter_jsonl

    lama_dir = Path(lama_dir)
    merged: dict[str, list[str]] = {r: list(ts) for r, ts in (extra or {}).items()}
    if variants is None:
        variant_files = sorted((lama_dir / "prompt_variants").glob("*.jsonl"))
    else:
        variant_files = [lama_dir / "prompt_variants" / f"{name}_relations.jsonl" for name in variants]
    files = [lama_dir / "relations.jsonl", *variant_files]
    for path in files:
        if not path.exists():
            raise InputError(path, "file not found (expected a LAMA folder: relations.jsonl, prompt_variants/)")
        for lineno, row in iter_jsonl(path, required=("relation", "template")):
            template = str(row["template"])
            if "[X]" not in template or "[Y]" not in template:
                raise InputError(path, "template needs both [X] and [Y]", line=lineno, key="template")
            bucket = merged.setdefault(str(row["relation"]), [])
            if template not in bucket:
                bucket.append(template)
    return merged
