"""A KV cache for the runner's decoding loop that appends in place.

transformers' `DynamicCache` appends each step's keys and values with `torch.cat`, which copies
the whole cache of every layer at every decoding step: with k = 20 samples per prompt that copy
was a fifth of the sampling time on CPU. `preallocated_cache(capacity)` is the same `Cache`
with layers that hold their keys and values in buffers with room for `capacity` positions and
write each step into the free part; `keys` / `values` are views of the filled part, which is all
attention reads. A layer that runs out of room grows, so a wrong capacity only costs speed,
never correctness. Rows split, finish and move in place (`take_rows`).
"""

from __future__ import annotations

from functools import partial

import torch
from transformers.cache_utils import Cache, DynamicLayer


class PreallocatedLayer(DynamicLayer):
    """Keys and values in buffers [row room, heads, position room, dim], of which the first
    `rows` rows and `length` positions are filled; `keys` / `values` are views of that part."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity
        self.length = 0
        self.rows = 0

    @classmethod
    def holding(cls, keys: torch.Tensor, values: torch.Tensor, length: int) -> PreallocatedLayer:
        """A layer whose buffers already hold `length` positions of every row."""
        layer = cls(keys.shape[-2])
        layer._keys, layer._values, layer.length, layer.rows = keys, values, length, keys.shape[0]
        layer.device, layer.is_initialized = keys.device, True
        layer._refresh_views()
        return layer

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        batch, heads, _, _ = key_states.shape
        room = max(self.capacity, key_states.shape[-2])
        self._keys = key_states.new_empty((batch, heads, room, key_states.shape[-1]))
        self._values = value_states.new_empty((batch, value_states.shape[1], room, value_states.shape[-1]))
        self.rows = batch
        self.device = key_states.device
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self._keys.shape[-2]:  # out of room: grow (rare: only if the capacity was too small)
            self._resize(self._keys.shape[0], end)
        self._keys[: self.rows, :, self.length : end] = key_states
        self._values[: self.rows, :, self.length : end] = value_states
        self.length = end
        self._refresh_views()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def take_rows(self, sources: list[int], row_limit: int | None = None) -> None:
        """Batch row j becomes what row sources[j] was (rows past len(sources) are dropped).
        Rows move in place, so a decoding step where a few rows split or finish copies just
        those rows; regathering the whole cache at such steps was 9% of k = 20 sampling. When
        the rows outgrow their room, it grows to `row_limit` at once (the most rows the caller
        can have), not step by step."""
        if not self.is_initialized:
            return
        if len(sources) > self._keys.shape[0]:
            self._resize(max(len(sources), row_limit or 0), self._keys.shape[-2])
        moved = [j for j, source in enumerate(sources) if source != j]
        if moved:
            targets = torch.tensor(moved, device=self.device)
            origins = torch.tensor([sources[j] for j in moved], device=self.device)
            for buffer in (self._keys, self._values):
                filled = buffer[:, :, : self.length]
                filled.index_copy_(0, targets, filled.index_select(0, origins))
        self.rows = len(sources)
        self._refresh_views()

    def batch_repeat_interleave(self, repeats: int) -> None:
        self.take_rows([row for row in range(self.rows) for _ in range(repeats)])

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self.take_rows(indices.tolist())

    def _resize(self, rows: int, positions: int) -> None:
        """New buffers with room for `rows` rows and `positions` positions, holding the filled part."""
        for name in ("_keys", "_values"):
            old = getattr(self, name)
            new = old.new_empty((rows, old.shape[1], positions, old.shape[-1]))
            new[: self.rows, :, : self.length] = old[: self.rows, :, : self.length]
            setattr(self, name, new)

    def _refresh_views(self) -> None:
        self.keys = self._keys[: self.rows, :, : self.length]
        self.values = self._values[: self.rows, :, : self.length]


def preallocated_cache(capacity: int) -> Cache:
    """A cache whose layers have room for `capacity` positions (prompt + new tokens)."""
    # transformers types this as a layer class; it only calls it, and the partial builds the layer as the class would
    return Cache(layer_class_to_replicate=partial(PreallocatedLayer, capacity))  # type: ignore[arg-type]


def cache_of_prompts(chunks, lengths: list[int], capacity: int) -> Cache:
    """A preallocated cache holding every prompt's keys and values left-padded to the longest
    prompt, as one padded prefill of all of them would leave it (pad slots hold zeros, which the
    attention mask hides). `chunks` are the packed prefills: (the chunk's filled cache, the
    indices in `lengths` of its prompts, their spans (row, start, length) in the chunk's rows)."""
    width, room = max(lengths), max(capacity, max(lengths))
    moves = []  # per chunk: (its cache, (source rows, source columns), (target rows, target columns))
    for chunk_cache, indices, spans in chunks:
        source: tuple[list[int], list[int]] = ([], [])
        target: tuple[list[int], list[int]] = ([], [])
        for i, (row, start, n) in zip(indices, spans):
            source[0].extend([row] * n)
            source[1].extend(range(start, start + n))
            target[0].extend([i] * n)
            target[1].extend(range(width - n, width))
        device = chunk_cache.layers[0].keys.device
        moves.append((chunk_cache, [torch.tensor(x, device=device) for x in source + target]))
    layers: list = []  # PreallocatedLayers, which `Cache(layers=...)` takes as its layer mixins
    for index in range(len(chunks[0][0].layers)):
        buffers = []
        for name in ("keys", "values"):
            like = getattr(chunks[0][0].layers[index], name)
            buffer = like.new_empty((len(lengths), like.shape[1], room, like.shape[-1]))
            buffer[:, :, :width].zero_()
            for chunk_cache, (src_rows, src_cols, dst_rows, dst_cols) in moves:
                buffer[dst_rows, :, dst_cols] = getattr(chunk_cache.layers[index], name)[src_rows, :, src_cols]
            buffers.append(buffer)
        keys, values = buffers
        layers.append(PreallocatedLayer.holding(keys, values, width))
    return Cache(layers=layers)
