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


def pad_left(seqs: Sequence[Sequence[int]], pad_id: int, device=None):
    """(input_ids, attention mask, position ids), each [rows, longest], on `device`."""
    import torch

    width = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, seq in enumerate(seqs):
        input_ids[row, width - len(seq) :] = torch.as_tensor(list(seq), dtype=torch.long)
        mask[row, width - len(seq) :] = 1
    positions = (mask.cumsum(1) - 1).clamp(min=0)  # real tokens start at position 0 in every row
    return input_ids.to(device), mask.to(device), positions.to(device)


def pad_right(seqs: Sequence[Sequence[int]], pad_id: int, device=None):
    """(input_ids, attention mask), each [rows, longest], real tokens first in every row."""
    import torch

    width = max(len(s) for s in seqs)
    input_ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, seq in enumerate(seqs):
        input_ids[row, : len(seq)] = torch.as_tensor(list(seq), dtype=torch.long)
        mask[row, : len(seq)] = 1
    return input_ids.to(device), mask.to(device)


def real_token_mask(input_ids, pad_id: int):
    """The mask of the real tokens of left-padded rows (everything from the first non-pad token)."""
    return ((input_ids != pad_id).long().cumsum(1) > 0).long()


def unpad_left(input_ids, pad_id: int) -> list[list[int]]:
    """The real tokens of each left-padded row."""
    mask = real_token_mask(input_ids, pad_id)
    return [row[m.bool()].tolist() for row, m in zip(input_ids, mask)]
