"""Prompt forms for probing a fact, shared by the evaluation tasks.

`build_probes(rows, form, kind, fewshot, train_rows, seed) -> list[Probe]`, one per row (a row
is a dict with the columns of `schemas/question.v1.json`), each holding a `Prompt` value
(`kbench.models.prompt`) that the model renders:

* `cloze`    - causal LMs continue `prompt_cloze` ("Alan Turing works in the field of");
               masked LMs read `prompt_masked` (the object is "[MASK]").
* `question` - "Answer the question with a short answer.\\nQuestion: <question>\\nAnswer:".
* `chat`     - the question as a user turn (instruct models); the model renders it (its chat
               template with the generation prompt, or a served chat API's).

`fewshot=k` puts k solved examples before the item, drawn from `train_rows` of the same
relation first (then any relation), never the item's own subject, with a generator seeded by
(seed, item id): an item gets the same examples whatever else is evaluated with it. In the chat
form they are earlier user / assistant turns; in the plain forms, lines of text.

Each `Probe` also says how the gold continues it (`gold`: " " + object after plain text, the
bare object after a chat generation prompt) and where a greedy answer stops (`stop`: the form's
default `STOPS`, or the caller's list). For a masked LM the gold is the token the model predicts
AT the mask: with byte-level BPE (RoBERTa, ModernBERT) a word after a space is its own token with
the space marker ("ĠParis", not "Paris"), so a mask that follows a space gets " " + object;
WordPiece tokenizers (BERT) drop that space, so the same gold works for them.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbench.errors import UserError
from kbench.io import stable_hash
from kbench.models.prompt import NO_TEMPLATE, Prompt, assistant, user

if TYPE_CHECKING:
    from kbench.models.interface import ModelInfo

PROMPT_FORMS = ("cloze", "question", "chat")
INSTRUCTION = "Answer the question with a short answer."
# The default stop strings (`--stop` replaces them; results record the list used). A cloze
# continuation runs on into the sentence ("Paris, France, where ..."): it stops at the first
# clause break, so "Paris, France" is judged as "Paris". Question and chat answers end with their line.
STOPS = {"cloze": ["\n", ". ", ","], "question": ["\n"], "chat": ["\n"]}


@dataclass(frozen=True)
class Probe:
    prompt: Prompt
    gold: str  # the gold object as the continuation of `prompt`
    stop: tuple[str, ...]


def require_chat(info: ModelInfo) -> None:
    """Refuse the chat form for a model that takes no chat prompts (no chat template)."""
    if not info.chat:
        raise UserError(NO_TEMPLATE)


def _question_text(question: str) -> str:
    return f"Question: {question}\nAnswer:"


def _example_pool(
    train_rows: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, list[Mapping[str, Any]]], list[Mapping[str, Any]]]:
    by_relation: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in train_rows:
        by_relation[row["relation"]].append(row)
    return by_relation, list(train_rows)


def draw_examples(
    row: Mapping[str, Any],
    k: int,
    by_relation: dict[str, list[Mapping[str, Any]]],
    everything: list[Mapping[str, Any]],
    seed: int,
) -> list[Mapping[str, Any]]:
    if k == 0:
        return []
    rng = random.Random(int(stable_hash([seed, row["id"]])[:15], 16))
    usable = [r for r in by_relation.get(row["relation"], []) if r["subject"] != row["subject"]]
    chosen = rng.sample(usable, min(k, len(usable)))
    if len(chosen) < k:
        taken = {id(r) for r in chosen}
        others = [
            r for r in everything if id(r) not in taken and r["subject"] != row["subject"] and r["relation"] != row["relation"]
        ]
        chosen += rng.sample(others, min(k - len(chosen), len(others)))
    if len(chosen) < k:
        raise UserError(f"--fewshot {k}: the train split has only {len(chosen)} usable examples for item {row['id']}")
    return chosen


def _cloze_sentence(row: Mapping[str, Any]) -> str:
    return f"{row['prompt_cloze']} {row['object']}."


def build_probes(
    rows: Sequence[Mapping[str, Any]],
    form: str,
    kind: str,
    fewshot: int = 0,
    train_rows: Sequence[Mapping[str, Any]] = (),
    seed: int = 0,
    stop: Sequence[str] | None = None,
) -> list[Probe]:
    if form not in PROMPT_FORMS:
        raise UserError(f"unknown prompt form {form!r}; choose one of {', '.join(PROMPT_FORMS)}")
    if kind == "masked" and form != "cloze":
        raise UserError(f"--prompt {form} needs a causal LM; masked LMs read the cloze prompt with [MASK]")
    if fewshot < 0:
        raise UserError(f"--fewshot must be >= 0, got {fewshot}")
    if fewshot and not train_rows:
        raise UserError("--fewshot needs a train split in the dataset folder (data/<config>/train.parquet)")
    if stop is not None and (not stop or any(not s for s in stop)):
        raise UserError("--stop: stop strings must be non-empty")
    stops = tuple(STOPS[form]) if stop is None else tuple(stop)
    by_relation, everything = _example_pool(train_rows)
    prompts = []
    for row in rows:
        examples = draw_examples(row, fewshot, by_relation, everything, seed)
        if form == "cloze":
            prefix = "".join(_cloze_sentence(e) + "\n" for e in examples)
            if kind == "masked":
                masked = prefix + row["prompt_masked"]
                lead = " " if " [MASK]" in masked else ""
                prompts.append(Probe(Prompt(masked), lead + row["object"], ()))
            else:
                prompts.append(Probe(Prompt(prefix + row["prompt_cloze"]), " " + row["object"], stops))
        elif form == "question":
            shots = "".join(f"{_question_text(e['question'])} {e['object']}\n\n" for e in examples)
            text = f"{INSTRUCTION}\n{shots}{_question_text(row['question'])}"
            prompts.append(Probe(Prompt(text), " " + row["object"], stops))
        else:
            turns = []
            for e in examples:
                turns += [user(f"{INSTRUCTION}\n{e['question']}"), assistant(e["object"])]
            turns.append(user(f"{INSTRUCTION}\n{row['question']}"))
            prompts.append(Probe(Prompt.chat(turns), row["object"], stops))
    return prompts


def question_turn(body: str, cue: str, chat: bool) -> Prompt:
    """`body` as one user turn (instruct models; the answer starts the reply), else plain text
    ending in the cue ("Answer:")."""
    if chat:
        return Prompt.chat([user(body)])
    return Prompt(f"{body}\n{cue}:")


def answer_body(question: str, passage: str | None = None) -> str:
    """The knowledge-elicitation answer prompt's text: the shared instruction and question form,
    after a passage (a recitation, a background document) when there is one."""
    head = f"Passage: {passage.strip()}\n" if passage and passage.strip() else ""
    return f"{head}{INSTRUCTION}\nQuestion: {question}"
