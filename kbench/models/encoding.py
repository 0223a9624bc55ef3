"""Prompts and answers as token ids, by the runner's text contract.

Causal LMs: an answer / gold is the exact continuation of the prompt, leading space included
(" France"). It is tokenised in context: the ids of prompt+answer after the prompt's own ids;
when the tokeniser merges across the boundary (the prompt's ids are not a prefix), the answer is
tokenised on its own instead. Masked LMs (only ranking): the prompt holds "[MASK]" (or the
tokenizer's mask token) and the gold is tokenised alone.

Each method tokenises a whole list in one batched call (per-item calls were 4% of a ranking
pass); errors name the item by its index in the caller's list (`indices`).
"""

from __future__ import annotations

from collections.abc import Sequence

from kbench.errors import UserError


class PromptEncoder:
    def __init__(self, tokenizer, kind: str):
        self.tokenizer = tokenizer
        self.kind = kind  # "causal" or "masked"

    def encode(self, texts: Sequence[str], indices: Sequence[int] | None = None) -> list[list[int]]:
        """Token ids of each text, in one batched tokenizer call; `indices` name the texts in errors."""
        indices = range(len(texts)) if indices is None else indices
        out = []
        bos = self.tokenizer.bos_token_id
        batch = self.tokenizer(list(texts), add_special_tokens=True)["input_ids"] if texts else []
        for index, text, ids in zip(indices, texts, batch):
            if bos is not None and len(ids) > 1 and ids[0] == ids[1] == bos:
                ids = ids[1:]  # chat templates already write the BOS token in the text
            if not ids:
                raise UserError(f"prompt {index} is empty after tokenisation: {text!r}")
            out.append(ids)
        return out

    def continuations(
        self, prompts: Sequence[str], answers: Sequence[str], indices: Sequence[int] | None = None
    ) -> list[tuple[list[int], list[int]]]:
        """(prompt ids, answer ids) per pair: the answer tokenised in context (the ids of
        prompt + answer after the prompt's own), or alone where the tokeniser merges across the
        boundary."""
        indices = range(len(prompts)) if indices is None else indices
        contexts = self.encode(prompts, indices)
        wholes = self.encode([p + a for p, a in zip(prompts, answers)], indices)
        pairs = []
        for index, answer, context, whole in zip(indices, answers, contexts, wholes):
            if whole[: len(context)] == context and len(whole) > len(context):
                cont = whole[len(context) :]
            else:
                cont = self.tokenizer(answer, add_special_tokens=False)["input_ids"]
            if not cont:
                raise UserError(f"answer {index} is empty after tokenisation: {answer!r}")
            pairs.append((context, cont))
        return pairs

    def rank_items(
        self, prompts: Sequence[str], golds: Sequence[str], indices: Sequence[int] | None = None
    ) -> list[tuple[list[int], int | None, int]]:
        """(prompt ids, position to read or None for the last, gold's first token id) per item."""
        indices = range(len(prompts)) if indices is None else indices
        if self.kind == "causal":
            return [(context, None, cont[0]) for context, cont in self.continuations(prompts, golds, indices)]
        mask = self.tokenizer.mask_token
        items: list[tuple[list[int], int | None, int]] = []
        encoded = self.encode([p.replace("[MASK]", mask) if mask else p for p in prompts], indices)
        for index, prompt, ids, gold in zip(indices, prompts, encoded, golds):
            if self.tokenizer.mask_token_id not in ids:
                raise UserError(f"prompt {index} has no mask token ({mask}) for the masked LM: {prompt!r}")
            gold_ids = self.tokenizer(gold, add_special_tokens=False)["input_ids"]
            if not gold_ids:
                raise UserError(f"gold {index} is empty after tokenisation: {gold!r}")
            items.append((ids, ids.index(self.tokenizer.mask_token_id), gold_ids[0]))
        return items
