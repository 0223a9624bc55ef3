"""Teacher-forced scoring of many answers to one prompt in one packed row: a token tree.

A ranked-choice probe scores every candidate of an answer space after the same prompt ("Marie
Curie was born in" + " Warsaw .", + " Paris .", ...). Run as separate sequences, the prompt's
tokens are computed once per candidate. Here each prompt is written once, followed by its answers
side by side:

    [prompt][answer 1][answer 2][answer 3] ...

and the attention mask makes it a tree: a prompt token attends to the prompt before it; an answer
token attends to the whole prompt and to its own answer's earlier tokens, never to another answer.
Position ids continue the prompt in every answer (an answer's first token sits at len(prompt)), so
each answer token sees exactly the keys and positions it would see in prompt + answer run alone:
its scores are those of a full pass, up to float rounding. The prompt's last position predicts the
first token of every answer, so each answer costs its own tokens and nothing more.

A prompt with more answers than fit `width` tokens is written again with the rest (a block per
row part); blocks are packed into rows first-fit, longest first, as `packing.pack` packs prompts,
and unused slots attend only to themselves. Only the positions that predict an answer token go
through the output projection. The mask is made by transformers' `create_causal_mask` (the model's
own format) with the tree as an extra condition; the runner takes this path only where packing
works (`packing.packing_works`) and every layer attends in full.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kbench.models.padding import token_grid

MIN_WIDTH = 256  # tokens per row at least: a tree's answers share one row, attention grows with the width


@dataclass
class Tree:
    input_ids: torch.Tensor  # [rows, width]
    positions: torch.Tensor  # [rows, width]
    allowed: torch.Tensor  # [rows, width, width] bool: query position -> key positions it attends to
    reads: list[tuple[int, list[int]]]  # per answer, in input order: (row, the columns that predict its tokens)


def _blocks(prompts: list[list[int]], answers: list[list[int]], width: int) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, answer indices) blocks: each prompt once per block, its answers in input order."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, prompt in enumerate(prompts):
        groups.setdefault(tuple(prompt), []).append(i)
    blocks = []
    for key, members in groups.items():
        current: list[int] = []
        used = len(key)
        for i in members:
            if current and used + len(answers[i]) > width:
                blocks.append((list(key), current))
                current, used = [], len(key)
            current.append(i)
            used += len(answers[i])
        blocks.append((list(key), current))
    return blocks


def build(prompts: list[list[int]], answers: list[list[int]], pad_id: int) -> Tree:
    """The rows that score every answer after its prompt (see the module docstring)."""
    longest = max(len(p) + len(a) for p, a in zip(prompts, answers))
    once = sum(len(p) for p in {tuple(p) for p in prompts}) + sum(len(a) for a in answers)
    width = max(longest, min(MIN_WIDTH, once))  # a small call fills one row of its own length
    blocks = _blocks(prompts, answers, width)
    sizes = [len(p) + sum(len(answers[i]) for i in members) for p, members in blocks]
    free: list[int] = []
    starts = [(0, 0)] * len(blocks)
    for b in sorted(range(len(blocks)), key=lambda b: -sizes[b]):
        row = next((r for r, room in enumerate(free) if room >= sizes[b]), None)
        if row is None:
            free.append(width)
            row = len(free) - 1
        starts[b] = (row, width - free[row])
        free[row] -= sizes[b]
    rows = len(free)
    placed = []
    reads: list[tuple[int, list[int]]] = [(0, [])] * len(answers)
    positions = torch.zeros((rows, width), dtype=torch.long)
    allowed = torch.zeros((rows, width, width), dtype=torch.bool)
    allowed[:, torch.arange(width), torch.arange(width)] = True  # fill slots attend to themselves
    for (prompt, members), (row, start) in zip(blocks, starts):
        m = len(prompt)
        placed.append((row, start, prompt))
        positions[row, start : start + m] = torch.arange(m)
        allowed[row, start : start + m, start : start + m] = torch.ones((m, m), dtype=torch.bool).tril()
        at = start + m
        for i in members:
            n = len(answers[i])
            placed.append((row, at, answers[i]))
            positions[row, at : at + n] = torch.arange(m, m + n)
            allowed[row, at : at + n, start : start + m] = True
            allowed[row, at : at + n, at : at + n] = torch.ones((n, n), dtype=torch.bool).tril()
            reads[i] = (row, [start + m - 1, *range(at, at + n - 1)])
            at += n
    input_ids, _ = token_grid(placed, rows, width, pad_id)
    return Tree(input_ids, positions, allowed, reads)


def answer_logprobs(model, tree: Tree, answers: list[list[int]], device) -> list[list[float]]:
    """Per answer, its tokens' log-probs (float32) after its prompt, from one forward pass."""
    from transformers.masking_utils import create_causal_mask

    allowed = tree.allowed.to(device)
    mask = create_causal_mask(
        config=model.config,
        inputs_embeds=torch.empty((*tree.input_ids.shape, 1), dtype=model.dtype, device=device),
        attention_mask=None,
        cache=None,
        position_ids=None,  # the rows' own columns: the tree, not the positions, says who attends to whom
        and_mask_function=lambda b, h, q, kv: allowed[b, q, kv],
        allow_is_causal_skip=False,
    )
    rows = torch.tensor([row for row, cols in tree.reads for _ in cols], device=device)
    cols = torch.tensor([c for _, cs in tree.reads for c in cs], device=device)

    def gather_reads(_module, args):
        return (args[0][rows, cols][None], *args[1:])

    handle = model.get_output_embeddings().register_forward_pre_hook(gather_reads)
    try:
        out = model(
            input_ids=tree.input_ids.to(device),
            attention_mask=mask,
            position_ids=tree.positions.to(device),
            logits_to_keep=0,
            use_cache=False,
        )
    finally:
        handle.remove()
    targets = torch.tensor([t for a in answers for t in a], device=device)
    token_lp = out.logits[0].float().log_softmax(-1).gather(1, targets[:, None])[:, 0].tolist()
    values, k = [], 0
    for answer in answers:
        values.append(token_lp[k : k + len(answer)])
        k += len(answer)
    return values
