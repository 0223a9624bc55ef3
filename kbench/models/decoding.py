"""The runner's KV-cached decoding loop: greedy continuations and k samples per prompt.

`decode(runner, seqs, copies, ...)` prefills the prompts once and then decodes `copies` output
rows per prompt. Where the runner packs, the prefill runs as packed passes of at most
`runner.prefill_tokens` tokens whose keys and values are gathered into one left-padded cache, so
all prompts of the batch decode together: a decoding step has a fixed cost on top of its rows'
(SmolLM2 on CPU: ~30 ms, reading every weight once), so fewer, fuller steps are faster.

The batch does not hold one row per output row but one per *distinct continuation*: output rows
whose tokens so far are identical (the same prompt, the same sampled prefix) have the same
next-token distribution, so they share one batch row and one KV cache row, and each draws its
own token from it with its own uniform. When their draws differ, the row is split (its cache
row copied); when rows finish, they leave. At temperature 0.7 the k = 20 samples of a prompt
share about a third of their decoding steps this way, and the result is exactly that of decoding
every sample on its own (up to float rounding).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kbench.models.kv_cache import cache_of_prompts, preallocated_cache
from kbench.models.packing import last_token_logits, pack, prompts_within


def decode(
    runner,
    seqs: list[list[int]],
    copies: int,
    max_new_tokens: int,
    stop: list[str],
    sampling: tuple[float, Any] | None,
    intervention=None,
    on_prefill: Callable[[Any], None] | None = None,
) -> list[list[str]]:
    """`copies` continuations of each prompt in `seqs` (token ids), as texts cut at `stop`.

    sampling=None decodes greedily; sampling = (temperature, uniforms [prompts * copies, steps])
    makes output row r take the token where its cumulative distribution passes uniforms[r, step].
    `on_prefill(scores)` sees the prompts' next-token scores (after the logits processor).
    A row stops at an end-of-sequence token, after `max_new_tokens`, or once its text holds a
    stop string. The logits processor sees the batch rows still decoding."""
    import torch

    processor = intervention.logits_processor if intervention else None
    input_ids, mask, positions = runner.pad_left(seqs)
    capacity = input_ids.shape[1] + max_new_tokens
    eos = set(_as_list(runner.network.generation_config.eos_token_id) or _as_list(runner.tokenizer.eos_token_id))
    generated: list[list[int]] = [[] for _ in range(len(seqs) * copies)]
    active = list(range(len(generated)))  # output rows still decoding
    row_of = [r // copies for r in active]  # output row -> its batch row (prefill: its prompt)
    with runner.intervened(intervention):
        if runner.packs(intervention):
            scores, cache = _packed_prefill(runner, seqs, capacity)
        else:
            cache = preallocated_cache(capacity)
            scores = runner.forward(input_ids, mask, positions, cache=cache).logits[:, -1].float()
        if processor:
            scores = processor(input_ids, scores)
        if on_prefill is not None:
            on_prefill(scores)
        next_pos = mask.sum(1, keepdim=True)
        for step in range(max_new_tokens):
            if step and processor:
                scores = processor(input_ids, scores)
            rows = torch.tensor([row_of[r] for r in active], device=scores.device)
            if sampling is None:
                tokens = scores.argmax(-1).index_select(0, rows)
            else:
                tokens = sample_tokens(scores.index_select(0, rows), sampling[0], sampling[1][active, step])
            branches: dict[tuple[int, int], int] = {}  # (batch row, token) -> its index in this dict
            still = []
            for r, token in zip(active, tokens.tolist()):
                if token in eos:
                    continue
                generated[r].append(token)
                if stop and any(s in runner.tokenizer.decode(generated[r], skip_special_tokens=True) for s in stop):
                    continue
                row_of[r] = branches.setdefault((row_of[r], token), len(branches))
                still.append(r)
            active = still
            if not active or step == max_new_tokens - 1:
                break
            sources, step_tokens, slot_of = _next_rows(list(branches))
            for r in active:
                row_of[r] = slot_of[row_of[r]]
            if sources != list(range(input_ids.shape[0])):  # rows split or left
                for layer in cache.layers:
                    layer.take_rows(sources, row_limit=len(generated))
                keep = torch.tensor(sources, device=input_ids.device)
                input_ids, mask, next_pos = input_ids[keep], mask[keep], next_pos[keep]
            step_ids = torch.tensor([[token] for token in step_tokens], device=input_ids.device)
            input_ids = torch.cat([input_ids, step_ids], 1)
            mask = torch.cat([mask, torch.ones_like(step_ids)], 1)
            scores = runner.forward(step_ids, mask, next_pos, cache=cache).logits[:, -1].float()
            next_pos = next_pos + 1
    texts = [_cut_at_stop(runner.tokenizer.decode(g, skip_special_tokens=True), stop) for g in generated]
    return [texts[i : i + copies] for i in range(0, len(texts), copies)]


def _next_rows(branches: list[tuple[int, int]]) -> tuple[list[int], list[int], list[int]]:
    """The next step's batch: row j continues batch row sources[j] with token tokens[j], and
    branch b (a (batch row, token) pair) goes to row slot_of[b]. A row's first branch keeps the
    row's own place where it can, so the cache moves only rows that split off or fill a gap."""
    slot_of: list[int | None] = [None] * len(branches)
    taken = [False] * len(branches)
    for b, (parent, _) in enumerate(branches):
        if parent < len(branches) and not taken[parent]:
            slot_of[b], taken[parent] = parent, True
    free = iter(j for j, used in enumerate(taken) if not used)
    slots = [slot if slot is not None else next(free) for slot in slot_of]
    sources, tokens = [0] * len(branches), [0] * len(branches)
    for (parent, token), slot in zip(branches, slots):
        sources[slot], tokens[slot] = parent, token
    return sources, tokens, slots


def _packed_prefill(runner, seqs: list[list[int]], capacity: int):
    """Next-token scores of `seqs` and a left-padded KV cache of them (room for `capacity`
    positions), computed by packed forward passes of at most `runner.prefill_tokens` tokens."""
    import torch
    from transformers.cache_utils import Cache, DynamicLayer

    budget = runner.prefill_tokens or sum(len(s) for s in seqs)
    chunks, scores, start = [], [], 0
    while start < len(seqs):
        end = start + prompts_within([len(s) for s in seqs[start:]], budget)
        packed = pack(runner.network, seqs[start:end], runner.pad_id, runner.device)
        chunk_cache = Cache(layer_class_to_replicate=DynamicLayer)
        scores.append(last_token_logits(runner.network, packed, chunk_cache))
        chunks.append((chunk_cache, range(start, end), packed.spans))
        start = end
    return torch.cat(scores), cache_of_prompts(chunks, [len(s) for s in seqs], capacity)


def sample_tokens(scores, temperature: float, uniforms, block: int = 1024):
    """One token per row of scores [B, V] drawn from softmax(scores / temperature) by inverting
    the cumulative distribution at uniforms [B] in [0, 1): the first token whose cumulative
    probability exceeds u, so zero-probability tokens are never drawn.

    In two levels, because a cumsum over the whole vocabulary is a slow sequential scan on CPU:
    find the block of `block` tokens where the row's cumulative mass passes u, then the token
    inside that block."""
    import torch

    # unnormalised exp(scores / temperature): the targets below are scaled by each row's total,
    # so softmax's division would be a wasted pass over [B, V] (40% of this function's time)
    probs = scores - scores.amax(-1, keepdim=True)
    probs = probs.div_(temperature).exp_()
    rows, vocab = probs.shape
    if vocab % block:
        probs = torch.nn.functional.pad(probs, (0, block - vocab % block))
    blocks = probs.view(rows, -1, block)
    block_cdf = blocks.sum(-1).cumsum(-1)  # [B, V / block]
    targets = uniforms.to(probs.dtype)[:, None] * block_cdf[:, -1:]  # scaled by the total: rounding
    chosen = torch.searchsorted(block_cdf, targets, right=True).clamp(max=block_cdf.shape[1] - 1)
    before = torch.where(chosen > 0, block_cdf.gather(1, (chosen - 1).clamp(min=0)), 0.0)
    inner = blocks[torch.arange(rows, device=probs.device), chosen[:, 0]]  # [B, block]
    offset = torch.searchsorted(inner.cumsum(-1), targets - before, right=True)[:, 0]
    # rounding can put the target past the block's own total: take its last drawable token
    last = (inner > 0).float().mul(torch.arange(1, block + 1, device=probs.device)).argmax(-1)
    offset = torch.minimum(offset, last)
    return chosen[:, 0] * block + offset


def truncate(scores, temperature: float, top_k: int | None = None, top_p: float = 1.0):
    """Scores [B, V] with the tokens outside the sampling scheme set to -inf, in the order of
    transformers' logits warpers: temperature, then top-k, then top-p (nucleus).

    top_k keeps the k highest scores (ties with the k-th are kept); top_p keeps the smallest set
    of most probable tokens, under softmax(scores / temperature), whose mass reaches top_p (a
    token is kept when the mass of the tokens ranked strictly before it is below top_p; the top
    token always stays). top_k None / top_p 1.0 keep everything. Sampling from the result at
    the same temperature (`sample_tokens`) never draws an excluded token."""
    import torch

    out = scores.clone()
    if top_k is not None and top_k < out.shape[-1]:
        kth = out.topk(top_k, dim=-1).values[..., -1:]
        out = out.masked_fill(out < kth, -torch.inf)
    if top_p < 1.0:
        probs = (out / temperature).softmax(-1)
        ordered, order = probs.sort(-1, descending=True)
        mass_before = ordered.cumsum(-1) - ordered
        drop_sorted = mass_before >= top_p
        drop_sorted[..., 0] = False
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        out = out.masked_fill(drop, -torch.inf)
    return out


def _cut_at_stop(text: str, stop: list[str]) -> str:
    cuts = [text.find(s) for s in stop if s and s in text]
    return text[: min(cuts)] if cuts else text


def _as_list(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple, set)) else [value]
