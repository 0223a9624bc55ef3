"""Forward passes over texts that share token prefixes, each shared prefix run once.

ITI's true and false statements of one item share the whole answer prompt, and under a chat
template every statement shares the system prompt: most of a batch's tokens are repeats. A batch
of token sequences is cut into up to three levels:

1. the prefix common to the whole batch (one node);
2. per group, the prefix its members share: a sequence's group prefix is the longest prefix it
   shares with any other sequence of the batch (one node per distinct group prefix);
3. each sequence's own remaining tokens (one node per sequence, at least its last token).

Each level runs once per node, on the KV cache of the node's parent (cache rows gathered by
parent), so a shared token is computed once, not once per text. A level's rows are left-padded;
the attention mask masks the pads wherever they sit in the row and the position ids continue the
parent's real tokens, so every text attends to exactly its own tokens at their own positions: its
values are those of a full pass, up to float rounding. The levels are a function of the batch's
tokens alone, so the same batch computes the same bits.

Only decoders whose layers all attend in full take this path: a sliding window counts cache
columns, which the pads between levels would shift (`shares_prefixes`); the others read packed
or padded rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kbench.models.padding import pad_left


@dataclass(frozen=True)
class Level:
    segments: list[list[int]]  # the tokens each node runs at this level
    parents: list[int] | None  # per node, its node in the previous level (None at the first level)


def _common_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def common_length(seqs: Sequence[list[int]]) -> int:
    """Length of the prefix all of `seqs` share (in sorted order the first and last differ most)."""
    return _common_length(min(seqs), max(seqs)) if seqs else 0


def levels(seqs: Sequence[list[int]]) -> list[Level]:
    """The levels of a batch; the last level's nodes are the sequences, in input order. Levels
    that would run no token at all are left out."""
    order = sorted(range(len(seqs)), key=lambda i: list(seqs[i]))
    shared = [0] * len(seqs)  # per sequence: the longest prefix it shares with another one
    for a, b in zip(order, order[1:]):  # in sorted order that is always a neighbour
        n = _common_length(seqs[a], seqs[b])
        shared[a], shared[b] = max(shared[a], n), max(shared[b], n)
    own_last = [len(s) - 1 for s in seqs]  # every sequence keeps at least its last token for level 3
    common = min(common_length(seqs), *own_last)
    group = [max(common, min(n, last)) for n, last in zip(shared, own_last)]

    out = [Level([list(seqs[0][:common])], None)] if common else []
    node_of = [0] * len(seqs) if out else None  # each sequence's node in the latest level
    if any(g > common for g in group):
        groups: dict[tuple[int, ...], int] = {}
        node_of = [groups.setdefault(tuple(s[:g]), len(groups)) for s, g in zip(seqs, group)]
        out.append(Level([list(key[common:]) for key in groups], [0] * len(groups) if out else None))
    out.append(Level([list(s[g:]) for s, g in zip(seqs, group)], node_of))
    return out


def shared_tokens(seqs: Sequence[list[int]]) -> int:
    """Tokens the levels of `seqs` run (without padding), against sum(len) for full passes."""
    return sum(len(segment) for level in levels(seqs) for segment in level.segments)


def shares_prefixes(network) -> bool:
    """Whether `network` can run levels: every layer attends in full, no sliding window
    (Mistral sets one without `layer_types`)."""
    config = network.config
    full = set(getattr(config, "layer_types", None) or ["full_attention"]) == {"full_attention"}
    return full and getattr(config, "sliding_window", None) is None


def run_levels(forward: Callable, seqs: Sequence[list[int]], pad_id: int, device, read: Callable):
    """Run `seqs` level by level through `forward(input_ids, mask, positions, cache=...)` (the
    runner's) and return what the context manager `read()` yields: it wraps the last level's
    pass, whose rows are the sequences in input order, each ending in the last column."""
    import torch
    from transformers.cache_utils import Cache, DynamicLayer

    cache = Cache(layer_class_to_replicate=DynamicLayer)
    mask: Any = None  # the cache's attention mask
    filled: Any = None  # and its real tokens per row
    all_levels = levels(seqs)
    for depth, level in enumerate(all_levels):
        input_ids, new_mask, positions = pad_left(level.segments, pad_id, device)
        if level.parents is not None:
            index = torch.tensor(level.parents, device=device)
            cache.batch_select_indices(index)
            positions = positions + filled[index, None]  # continue each row after its parent's real tokens
            mask, filled = torch.cat([mask[index], new_mask], 1), filled[index] + new_mask.sum(1)
        else:
            mask, filled = new_mask, new_mask.sum(1)
        with read() if depth == len(all_levels) - 1 else contextlib.nullcontext() as value:
            forward(input_ids, mask, positions, cache=cache)
    return value
