"""Teacher-forced top-1 probes for soft-prompt extraction and training.

A `Probe` is one fact laid out as token ids plus the positions whose prediction must be the
gold object's tokens. A fact counts as predicted at top-1 when the model's argmax is the gold
token at every gold position:
- causal LMs: the prompt is followed by the gold tokens and each is predicted from the tokens
  before it, i.e. greedy decoding would write the gold object (multi-token answers supported);
- masked LMs: the object slot holds one [MASK] per gold token and each mask's argmax must be its
  gold token (for single-token objects this is LAMA's P@1).
Soft-prompt slots are marked in `soft`; their embeddings are replaced by trainable vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbench.errors import UserError


@dataclass
class Probe:
    ids: list[int]
    soft: list[bool]            # True where a soft-prompt vector replaces the token embedding
    logit_positions: list[int]  # where the logits that must predict `target_ids` are read
    target_ids: list[int]


def special_wrap(tokenizer) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer adds before and after a text ([CLS]/[SEP], <s>, none)."""
    core = tokenizer("x", add_special_tokens=False)["input_ids"]
    full = tokenizer("x")["input_ids"]
    for i in range(len(full) - len(core) + 1):
        if full[i:i + len(core)] == core:
            return full[:i], full[i + len(core):]
    return [], []


def _gold_ids(tokenizer, kind: str, answer: str) -> list[int]:
    text = answer if kind == "masked" else " " + answer   # BPE: the answer follows a space
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise UserError(f"the answer {answer!r} has no tokens for this tokenizer")
    return ids


def soft_probe(tokenizer, kind: str, head: str, answer: str, n_before: int, n_after: int) -> Probe:
    """[soft x n_before] head [soft x n_after] then the object slot (OptiPrompt layout)."""
    gold = _gold_ids(tokenizer, kind, answer)
    before, after = special_wrap(tokenizer)
    head_ids = tokenizer(head if kind == "masked" else " " + head, add_special_tokens=False)["input_ids"]
    filler = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = before + [filler] * n_before + head_ids + [filler] * n_after
    soft = [False] * len(before) + [True] * n_before + [False] * len(head_ids) + [True] * n_after
    if kind == "masked":
        positions = list(range(len(ids), len(ids) + len(gold)))
        ids = ids + [tokenizer.mask_token_id] * len(gold) + after
    else:
        positions = [len(ids) - 1 + i for i in range(len(gold))]
        ids = ids + gold
    soft = soft + [False] * (len(ids) - len(soft))
    return Probe(ids, soft, positions, gold)


def run_probes(model, probes: Sequence[Probe], pad_id: int, soft_vectors=None):
    """Forward a batch of probes; returns (mean cross-entropy over gold tokens per probe [B],
    all-gold-tokens-at-top-1 per probe [B] bool). `soft_vectors` [n_soft, hidden] fills the
    soft slots of every probe (one relation per batch)."""
    import torch

    device = next(model.parameters()).device
    width = max(len(p.ids) for p in probes)
    ids = torch.full((len(probes), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(probes), width), dtype=torch.long)
    soft = torch.zeros((len(probes), width), dtype=torch.bool)
    for i, p in enumerate(probes):
        ids[i, :len(p.ids)] = torch.tensor(p.ids)
        mask[i, :len(p.ids)] = 1
        soft[i, :len(p.ids)] = torch.tensor(p.soft)
    ids, mask, soft = ids.to(device), mask.to(device), soft.to(device)
    embeds = model.get_input_embeddings()(ids)
    if soft_vectors is not None:
        fill = soft_vectors.to(embeds.dtype).unsqueeze(0).expand(len(probes), -1, -1).reshape(-1, embeds.shape[-1])
        embeds = embeds.masked_scatter(soft.unsqueeze(-1), fill)
    logits = model(inputs_embeds=embeds, attention_mask=mask).logits
    rows = torch.tensor([i for i, p in enumerate(probes) for _ in p.target_ids], device=device)
    cols = torch.tensor([c for p in probes for c in p.logit_positions], device=device)
    targets = torch.tensor([t for p in probes for t in p.target_ids], device=device)
    picked = logits[rows, cols].float()
    token_loss = torch.nn.functional.cross_entropy(picked, targets, reduction="none")
    token_hit = picked.argmax(dim=-1) == targets
    counts = torch.bincount(rows, minlength=len(probes)).clamp(min=1)
    loss = torch.zeros(len(probes), device=device).index_add(0, rows, token_loss) / counts
    misses = torch.zeros(len(probes), device=device).index_add(0, rows, (~token_hit).float())
    return loss, misses == 0
