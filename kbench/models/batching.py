"""How the Hugging Face backend cuts a call into batches: every `ModelRunner` method hands its
items to `_computed`, which computes each distinct item once, longest first, in batches sized by
`_batch_size`, and halves a batch that ran out of memory.

Sizes: `batch_size` prompts when the user gave one; else on GPU what half the free memory holds
(KV cache and activations of prompt + new tokens, for every copy), on CPU a token budget per
forward pass (CPU_TOKENS_PER_BATCH for padded rows, CPU_PACKED_TOKENS for packed ones). On CPU the
batches of a call are a function of the call's inputs alone (not of earlier calls or of timing), so
the same call computes the same bits; on GPU the free memory enters, which changes batches and so
last bits only.

Mixed into `ModelRunner` (through `WhiteBoxMethods`); needs from its host the attributes it declares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kbench.models.packing import prompts_within

CPU_TOKENS_PER_BATCH = 1024  # padded batches; measured on SmolLM2: 4096-token ones pad more and spill caches
CPU_PACKED_TOKENS = 2048  # packed forward passes (no padding): 2048 ranked ~8% faster than 1024
MAX_BATCH = 256


def _is_oom(exc: BaseException) -> bool:
    return "out of memory" in str(exc).lower()


class BatchingMethods:
    # the host's (`ModelRunner`)
    torch: Any
    device: Any
    network: Any
    batch_size: int | None
    _oom_cap: int

    def _computed(
        self,
        items: list,
        lengths: list[int],
        compute: Callable[[list[int]], list],
        decode: tuple[int, int] = (0, 1),
        packed: bool = False,
    ) -> list:
        """The call's values in input order, each distinct item computed once, in batches of the
        pending items longest first; on out-of-memory a batch is halved and retried. `lengths` are
        prompt tokens per item; `decode` = (new tokens, rows per prompt); `packed`: `compute` runs a
        packed forward pass (batches are cut by tokens)."""
        first: dict[Any, int] = {}
        for i, item in enumerate(items):
            first.setdefault(item, i)
        pending = sorted(first.values(), key=lambda i: -lengths[i])
        found: dict[int, Any] = {}
        while pending:
            size = self._batch_size(pending, lengths, decode, packed)
            batch = pending[:size]
            try:
                with self.torch.inference_mode():
                    values = compute(batch)
            except (RuntimeError, MemoryError) as exc:
                if not _is_oom(exc) or size == 1:
                    raise
                self._oom_cap = max(1, size // 2)
                if self.device.type == "cuda":
                    self.torch.cuda.empty_cache()
                continue
            found.update(zip(batch, values))
            pending = pending[size:]
        return [found[first[item]] for item in items]

    def _batch_size(self, pending: list[int], lengths, decode: tuple[int, int], packed: bool) -> int:
        """Prompts in the next batch of `pending` (longest first). Padded: `_batch_rows` of the
        longest. Packed ranking: as many prompts as fit the tokens a padded batch would hold (on
        CPU, CPU_PACKED_TOKENS). Generation with packed prefills: on CPU, MAX_BATCH decoding rows,
        since `decode` prefills them in chunks of `prefill_tokens`."""
        longest = lengths[pending[0]]
        rows = self._batch_rows(longest, *decode)
        if not packed or self.batch_size or (decode[0] and self.device.type != "cpu"):
            return rows
        cap = max(1, min(MAX_BATCH // decode[1], self._oom_cap))
        if decode[0]:
            return cap
        budget = CPU_PACKED_TOKENS if self.device.type == "cpu" else rows * longest
        return prompts_within([lengths[i] for i in pending[:cap]], budget)

    @property
    def prefill_tokens(self) -> int | None:
        """Tokens per packed prefill chunk in `decode` (None: the whole batch at once)."""
        return CPU_PACKED_TOKENS if self.device.type == "cpu" else None

    def _batch_rows(self, prompt_tokens: int, new_tokens: int = 0, copies: int = 1) -> int:
        """Prompts per batch: `batch_size` when given; else on GPU what half the free memory holds
        (KV cache and activations of prompt + new tokens, for every copy), on CPU a prefill of
        about CPU_TOKENS_PER_BATCH tokens; never more than MAX_BATCH decoding rows."""
        if self.batch_size:
            return min(self.batch_size, self._oom_cap)
        if self.device.type == "cuda":
            cfg = self.network.config
            per_token = 4 * cfg.hidden_size * (getattr(cfg, "num_hidden_layers", 12) * 2 + 16)  # KV + activations, fp32 bound
            per_row = copies * ((prompt_tokens + new_tokens) * per_token + 8 * getattr(cfg, "vocab_size", 50000))
            free, _ = self.torch.cuda.mem_get_info(self.device)
            rows = int(free * 0.5 // max(per_row, 1))
        else:
            rows = CPU_TOKENS_PER_BATCH // max(prompt_tokens, 1)
        return max(1, min(rows, MAX_BATCH // copies, self._oom_cap))
