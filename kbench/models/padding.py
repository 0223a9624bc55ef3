"""The one place token rows are padded into a batch (every padded forward pass in kbench).

    ids, mask, positions = pad_left([[5, 6, 7], [8]], pad_id=0, device="cpu")
    # ids [[5, 6, 7], [0, 0, 8]], mask [[1, 1, 1], [0, 0, 1]], positions [[0, 1, 2], [0, 0, 0]]

Causal LMs pad on the left, so every row's last token sits in the last column where the next
token is read, and the position ids restart at 0 at each row's first real token (a row scores as
it would alone). Masked LMs and teacher-forced probes read at absolute positions from 0, so they
pad on the right (`pad_right`).
"""

from __future__ import annotations

from collections.abc import Sequence


def token_grid(placed: Sequence[tuple[int, int, Sequence[int]]], rows: int, width: int, pad_id: int):
    """(input_ids, mask) [rows, width] (CPU): each (row, start, tokens) of `placed` written at its
    row from column `start`, the pad id everywhere else (mask 1 on the placed tokens). Padded
    batches place one sequence per row; packed ones (`kbench.models.packing`) several."""
    import torch

    input_ids = torch.full((rows, width), pad_id, dtype=torch.long)
    mask = torch.zeros((rows, width), dtype=torch.long)
    for row, start, tokens in placed:
        input_ids[row, start : start + len(tokens)] = torch.as_tensor(list(tokens), dtype=torch.long)
        mask[row, start : start + len(tokens)] = 1
    return input_ids, mask


def pad_left(seqs: Sequence[Sequence[int]], pad_id: int, device=None):
    """(input_ids, attention mask, position ids), each [rows, longest], on `device`."""
    width = max(len(s) for s in seqs)
    input_ids, mask = token_grid([(row, width - len(seq), seq) for row, seq in enumerate(seqs)], len(seqs), width, pad_id)
    positions = (mask.cumsum(1) - 1).clamp(min=0)  # real tokens start at position 0 in every row
    return input_ids.to(device), mask.to(device), positions.to(device)


def pad_right(seqs: Sequence[Sequence[int]], pad_id: int, device=None):
    """(input_ids, attention mask), each [rows, longest], real tokens first in every row."""
    width = max(len(s) for s in seqs)
    input_ids, mask = token_grid([(row, 0, seq) for row, seq in enumerate(seqs)], len(seqs), width, pad_id)
    return input_ids.to(device), mask.to(device)


def real_token_mask(input_ids, pad_id: int):
    """The mask of the real tokens of left-padded rows (everything from the first non-pad token)."""
    return ((input_ids != pad_id).long().cumsum(1) > 0).long()


def unpad_left(input_ids, pad_id: int) -> list[list[int]]:
    """The real tokens of each left-padded row."""
    mask = real_token_mask(input_ids, pad_id)
    return [row[m.bool()].tolist() for row, m in zip(input_ids, mask)]
