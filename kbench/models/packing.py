"""Padding-free forward passes: several prompts side by side in each row of a batch.

A left-padded batch runs every pad position through every layer. LAMA prompts are 4-15
tokens, and length-sorted padded batches of them were 40% padding. Packing places prompts one
after another in rows of a fixed width (first-fit decreasing), restarts the position ids at 0
for each prompt, and masks attention block-diagonally, so each prompt sees only itself. The
mask is made by transformers' own `create_causal_mask` from the restarted positions, so it has
the form the model's attention implementation expects. Each prompt's keys, values and scores
are then those of the prompt run alone, up to float rounding.

Only the prompts' last positions go through the output projection (a pre-hook on the output
embeddings gathers them), as `logits_to_keep=1` does for a padded batch.

A model whose attention ignores the mask or whose positions ignore `position_ids` would mix
prompts silently, so `packing_works(model)` compares a packed pass with separate ones once per
model, and the runner pads instead where it fails. Layers other than full and sliding-window
attention are not packed at all.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import torch

from kbench.models.padding import token_grid

MIN_ROW_WIDTH = 32  # rows at least this wide: few fill slots; attention cost grows with the width
_WORKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class Packed:
    input_ids: torch.Tensor  # [rows, width]
    positions: torch.Tensor  # [rows, width], restarting at 0 for each prompt (and each fill slot)
    mask: Any  # the 4D attention mask in the model's own format (per layer type if mixed)
    spans: list[tuple[int, int, int]]  # per prompt, in input order: (row, start, length)


def pack(model, seqs: list[list[int]], pad_id: int, device) -> Packed:
    """Pack token sequences into rows of width max(MIN_ROW_WIDTH, longest), longest first,
    each into the first row with room."""
    width = max(MIN_ROW_WIDTH, max(len(s) for s in seqs))
    free: list[int] = []  # room left per row
    spans: list[tuple[int, int, int]] = [(0, 0, 0)] * len(seqs)
    for i in sorted(range(len(seqs)), key=lambda i: -len(seqs[i])):
        n = len(seqs[i])
        row = next((r for r, room in enumerate(free) if room >= n), None)
        if row is None:
            free.append(width)
            row = len(free) - 1
        spans[i] = (row, width - free[row], n)
        free[row] -= n
    input_ids, _ = token_grid([(row, start, seq) for seq, (row, start, _) in zip(seqs, spans)], len(free), width, pad_id)
    positions = torch.zeros((len(free), width), dtype=torch.long)  # fill slots: each one its own sequence
    for row, start, n in spans:
        positions[row, start : start + n] = torch.arange(n)
    input_ids, positions = input_ids.to(device), positions.to(device)
    return Packed(input_ids, positions, _block_diagonal_mask(model, positions), spans)


def _block_diagonal_mask(model, positions: torch.Tensor):
    """The model's attention mask for packed rows: transformers' own mask functions, given the
    restarted positions, mask each prompt off from the others. Models that mix full and
    sliding-window layers (Gemma 3) take one mask per layer type."""
    from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

    shape_only = torch.empty((*positions.shape, 1), dtype=model.dtype, device=positions.device)
    args = {
        "config": model.config,
        "inputs_embeds": shape_only,
        "attention_mask": None,
        "cache": None,
        "position_ids": positions,
        "allow_is_causal_skip": False,
    }
    if "sliding_attention" not in _layer_types(model):
        return create_causal_mask(**args)
    return {"full_attention": create_causal_mask(**args), "sliding_attention": create_sliding_window_causal_mask(**args)}


def prompts_within(lengths, budget: int) -> int:
    """How many of the leading prompts (token counts `lengths`) fit `budget` tokens; at least one."""
    return max(1, sum(1 for total in accumulate(lengths) if total <= budget))


def _layer_types(model) -> set[str]:
    return set(getattr(model.config, "layer_types", None) or ["full_attention"])


def last_token_logits(model, packed: Packed, cache=None) -> torch.Tensor:
    """[prompts, vocab] float32 next-token logits at each prompt's last token (input order);
    `cache`, when given, receives the packed keys and values."""
    rows = torch.tensor([row for row, _, _ in packed.spans], device=packed.input_ids.device)
    cols = torch.tensor([start + n - 1 for _, start, n in packed.spans], device=packed.input_ids.device)

    def gather_last(_module, args):
        return (args[0][rows, cols][None], *args[1:])

    handle = model.get_output_embeddings().register_forward_pre_hook(gather_last)
    try:
        caching = {"cache": cache, "use_cache": True} if cache is not None else {"use_cache": False}
        out = model(
            input_ids=packed.input_ids, attention_mask=packed.mask, position_ids=packed.positions, logits_to_keep=0, **caching
        )
    finally:
        handle.remove()
    return out.logits[0].float()


def packing_works(model, pad_id: int) -> bool:
    """Whether a packed pass gives each prompt the scores it gets alone (checked once per model).
    Attention kinds other than full and sliding-window (chunked, linear...) have no packed mask here."""
    if model not in _WORKS:
        _WORKS[model] = _layer_types(model) <= {"full_attention", "sliding_attention"} and _packed_matches_alone(model, pad_id)
    return _WORKS[model]


def _packed_matches_alone(model, pad_id: int) -> bool:
    vocab = model.get_output_embeddings().weight.shape[0]
    probe = [[(97 * i + 11) % vocab for i in range(1, 8)], [(89 * i + 5) % vocab for i in range(1, 5)]]
    device = next(model.parameters()).device
    with torch.inference_mode():
        packed = last_token_logits(model, pack(model, probe, pad_id, device))
        alone = torch.cat(
            [
                model(input_ids=torch.tensor([seq], device=device), use_cache=False, logits_to_keep=1).logits[:, -1].float()
                for seq in probe
            ]
        )
    tolerance = 1e-3 if model.dtype == torch.float32 else 3e-2
    return bool(((packed - alone).abs().max() / alone.abs().max()) < tolerance)
