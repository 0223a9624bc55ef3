"""Teacher-forced top-1 probes: which facts does the model predict at top-1 (XTEVAL's D^theta)?

A `Probe` is one fact laid out as token ids plus the positions whose prediction must be the
gold tokens. A fact counts as predicted at top-1 when the model's argmax is the gold token at
every position read (docs/definitions.md, "Acquisition-utilization gaps": "the facts whose tail the model predicts at top-1"):
- causal LMs, criterion "first-token" (the default): the gold's first token is the argmax at
  the slot after the prompt, i.e. its first-token rank is 1 (ties go to the lower token id);
- causal LMs, criterion "full-answer": every gold token is the argmax given the tokens before
  it, i.e. greedy decoding would write the whole tail;
- masked LMs: the tail must be one token of the vocabulary (LAMA's single-token filter; other
  facts leave D, see `answer_targets`) and the argmax at the mask.
The gold is the tail as it follows a space (" Paris"): the token a byte-level BPE model
(GPT-2, RoBERTa, ModernBERT) predicts there is "ĠParis", not the bare "Paris"; WordPiece and
SentencePiece tokenizers give the same ids either way.
Soft-prompt slots are marked in `soft`; their embeddings are replaced by trainable vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbench.errors import UserError


@dataclass
class Probe:
    ids: list[int]
    soft: list[bool]  # True where a soft-prompt vector replaces the token embedding
    logit_positions: list[int]  # where the logits that must predict `target_ids` are read
    target_ids: list[int]


def special_wrap(tokenizer) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer adds before and after a text ([CLS]/[SEP], <s>, none)."""
    core = tokenizer("x", add_special_tokens=False)["input_ids"]
    full = tokenizer("x")["input_ids"]
    for i in range(len(full) - len(core) + 1):
        if full[i : i + len(core)] == core:
            return full[:i], full[i + len(core) :]
    return [], []


CRITERIA = ("first-token", "full-answer")


def spaced_ids(tokenizer, text: str) -> list[int]:
    """Ids of `text` as it follows a word and a space, read off "x" + " " + text: SentencePiece
    tokenizers (Llama 2) would write a lone "▁" for a leading space of the text alone, while
    byte-level BPE keeps the space in the token ("ĠParis")."""
    anchor = tokenizer("x", add_special_tokens=False)["input_ids"]
    whole = tokenizer("x " + text, add_special_tokens=False)["input_ids"]
    if whole[: len(anchor)] == anchor:
        return whole[len(anchor) :]
    return tokenizer(" " + text, add_special_tokens=False)["input_ids"]


def answer_targets(tokenizer, kind: str, answer: str, criterion: str = "first-token") -> list[int] | None:
    """The gold ids read at top-1 under `criterion`; None for a masked LM when the tail is more
    than one token (such a fact cannot be read at one mask and leaves D)."""
    if criterion not in CRITERIA:
        raise UserError(f"unknown top-1 criterion {criterion!r}; choose one of {', '.join(CRITERIA)}")
    ids = spaced_ids(tokenizer, answer)
    if not ids:
        raise UserError(f"the answer {answer!r} has no tokens for this tokenizer")
    if kind == "masked":
        return ids if len(ids) == 1 else None
    return ids[:1] if criterion == "first-token" else ids


def soft_probe(tokenizer, kind: str, head: str, targets: list[int], n_before: int, n_after: int) -> Probe:
    """[soft x n_before] head [soft x n_after] then the object slot (OptiPrompt layout)."""
    before, after = special_wrap(tokenizer)
    head_ids = spaced_ids(tokenizer, head)
    filler = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = before + [filler] * n_before + head_ids + [filler] * n_after
    soft = [False] * len(before) + [True] * n_before + [False] * len(head_ids) + [True] * n_after
    if kind == "masked":
        positions = list(range(len(ids), len(ids) + len(targets)))
        ids = ids + [tokenizer.mask_token_id] * len(targets) + after
    else:
        positions = [len(ids) - 1 + i for i in range(len(targets))]
        ids = ids + targets
    soft = soft + [False] * (len(ids) - len(soft))
    return Probe(ids, soft, positions, list(targets))


def prompt_probes(tokenizer, kind: str, prompts: Sequence[str], targets: Sequence[list[int]]) -> list[Probe]:
    """Discrete-prompt probes: causal prompts end where the tail begins ("X was born in"), masked
    prompts hold one "[MASK]" where it stands; tokenised as the extraction task does."""
    from kbench.models.encoding import PromptEncoder

    encoder = PromptEncoder(tokenizer, kind)
    probes = []
    if kind == "masked":
        mask = tokenizer.mask_token
        for i, (ids, gold) in enumerate(zip(encoder.encode([p.replace("[MASK]", mask) for p in prompts]), targets)):
            if ids.count(tokenizer.mask_token_id) != 1:
                raise UserError(f"masked prompt {i} needs exactly one [MASK]: {prompts[i]!r}")
            probes.append(Probe(ids, [False] * len(ids), [ids.index(tokenizer.mask_token_id)], list(gold)))
        return probes
    for ids, gold in zip(encoder.encode(list(prompts)), targets):
        full = ids + list(gold)
        probes.append(Probe(full, [False] * len(full), [len(ids) - 1 + i for i in range(len(gold))], list(gold)))
    return probes


def run_probes(model, probes: Sequence[Probe], pad_id: int, soft_vectors=None):
    """Forward a batch of probes; returns (mean cross-entropy over gold tokens per probe [B],
    all-gold-tokens-at-top-1 per probe [B] bool). `soft_vectors` [n_soft, hidden] fills the
    soft slots of every probe (one relation per batch)."""
    import torch

    from kbench.models.padding import pad_right

    device = next(model.parameters()).device
    ids, mask = pad_right([p.ids for p in probes], pad_id, device)
    soft = pad_right([p.soft for p in probes], 0, device)[0].bool()
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
