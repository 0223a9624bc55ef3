"""The XTEVAL cross-encoder and its InfoNCE fine-tuning (paper section 2, Table 3).

sim(q, d) = head(M(q ; d)): a fresh scalar `value head` reads the first token ([CLS]) of an
encoder or the last real token of a decoder. Every weight of the language model is fine-tuned
(a deep copy, so the trainer model stays as it was for the next seed).

Training: per query, 1 gold document and `negatives_per_type` documents of each of
(h,r,.), (.,r,t), (h,.,t), resampled every epoch; InfoNCE over those candidates; AdamW, no
weight decay, polynomial decay with linear warm-up; the epoch with the best validation accuracy
(gold ranked first among the same kind of candidates, drawn once with a fixed seed) is kept.

Multi-GPU: the loop uses `accelerate.Accelerator`; under `accelerate launch` (or torchrun) each
process trains on its own shard of the queries and DDP all-reduces the gradients, with no code
change. Tested on CPU (tests/integration/test_xteval_e2e.py) with
`ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu --num_processes 2 -m kbench evaluate xteval ...`
(DDP over gloo; `accelerate launch --cpu` itself always starts a single process).
Run through `kbench.models.training.Trainer.run`, which hands over itself (the network and its tokenisation).
"""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from pydantic import BaseModel, ConfigDict, Field

from kbench.progress import progress
from kbench.tasks.xteval.documents import TRAIN_NEGATIVE_TYPES, DocumentGenerator, Triple

LOG = logging.getLogger(__name__)


class FinetuneConfig(BaseModel):
    """Stage-2 hyper-parameters; defaults are the paper's (Table 3) unless noted."""

    model_config = ConfigDict(extra="forbid")
    lr: float = Field(default=1e-5, gt=0, description="Fine-tuning learning rate (paper: 1e-5).")
    weight_decay: float = Field(default=0.0, ge=0, description="Fine-tuning AdamW weight decay.")
    batch_size: int = Field(default=32, ge=1, description="Queries per fine-tuning step (paper: 32).")
    micro_batch_size: int = Field(default=8, ge=1, description="Queries per training forward pass (memory bound only).")
    epochs: int = Field(default=20, ge=1, description="Fine-tuning epochs (paper: 20).")
    warmup_ratio: float = Field(default=0.06, ge=0, lt=1, description="Fine-tuning warm-up share of the steps.")
    lr_end: float = Field(default=1e-7, ge=0, description="Final learning rate of the polynomial decay (HF default).")
    power: float = Field(default=1.0, gt=0, description="Power of the polynomial decay (HF default: linear).")
    negatives_per_type: int = Field(default=4, ge=1, description="Training negatives per hard type (paper: 4, 12 in all).")
    validation_fraction: float = Field(default=0.1, gt=0, lt=1, description="Share of the train facts that picks the best epoch.")
    max_length: int = Field(default=128, ge=8, description="Tokens per (query; document) pair.")
    score_batch_size: int = Field(default=64, ge=1, description="(query, document) pairs per forward pass at inference.")


def info_nce(scores, gold_index: int = 0):
    """InfoNCE: mean over rows of -log softmax(scores)[gold]; `scores` is [queries, candidates],
    padded candidates set to -inf are ignored by the softmax."""
    targets = torch.full((scores.shape[0],), gold_index, dtype=torch.long, device=scores.device)
    return torch.nn.functional.cross_entropy(scores, targets)


class ScoringModel(torch.nn.Module):
    """Body + fresh scalar head; `forward` returns one score per row. A real module (not a dict
    of parts) so that DDP, when `accelerate launch` wraps it, sees every forward pass."""

    def __init__(self, body, kind: str, seed: int):
        super().__init__()
        self.body, self.kind = body, kind
        self.head = torch.nn.Linear(body.config.hidden_size, 1)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():  # seeded init, independent of the global torch RNG
            self.head.weight.normal_(0.0, 0.02, generator=generator)
            self.head.bias.zero_()
        self.head.to(next(body.parameters()).device)

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        hidden = self.body(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        if self.kind == "masked":
            pooled = hidden[:, 0]
        else:
            last = attention_mask.sum(dim=1) - 1  # right padding: the last real token
            pooled = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
        return self.head(pooled).squeeze(-1)


class CrossEncoder:
    """The cross-encoder: its batches (`Trainer.encode_pairs`) and its `ScoringModel` (`self.model`)."""

    def __init__(self, trainer, seed: int):
        self.kind = trainer.kind
        self.encode = trainer.encode_pairs  # (queries, documents, max_length) -> a tokenised batch
        body = copy.deepcopy(trainer.model.base_model)
        body.requires_grad_(True)
        self.model = ScoringModel(body, trainer.kind, seed)

    @staticmethod
    def scores(model, batch):
        """One score per row of a tokenised batch, through `model` (maybe DDP-wrapped)."""
        device = next(model.parameters()).device
        return model(**{k: v.to(device) for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")})

    def score_pairs(self, query: str, documents: Sequence[str], cfg: FinetuneConfig) -> list[float]:
        self.model.eval()
        out: list[float] = []
        with torch.no_grad():
            for start in range(0, len(documents), cfg.score_batch_size):
                chunk = documents[start : start + cfg.score_batch_size]
                batch = self.encode([query] * len(chunk), chunk, cfg.max_length)
                out.extend(self.scores(self.model, batch).float().cpu().tolist())
        return out


@dataclass
class Candidates:
    query: str
    documents: list[str]  # documents[0] is the gold one


def training_candidates(
    facts: Sequence[Triple], generator: DocumentGenerator, per_type: int, rng: random.Random
) -> list[Candidates]:
    """1 gold + `per_type` of each hard negative type per fact, distinct texts; rows with fewer
    negatives are padded by the score mask (see `_batch_scores`), never with the gold."""
    out = []
    for fact in facts:
        gold = generator.gold(fact, rng)
        negatives = [d.text for doc_type in TRAIN_NEGATIVE_TYPES for d in generator.sample_many(doc_type, fact, per_type, rng)]
        distinct = list(dict.fromkeys(t for t in negatives if t != gold.text))  # a repeat adds no signal
        out.append(Candidates(generator.query(fact, rng), [gold.text, *distinct]))
    return out


def _batch_scores(encoder: CrossEncoder, model, rows: Sequence[Candidates], max_length: int):
    """[rows, max candidates] scores; missing candidates are -inf so InfoNCE ignores them."""
    queries = [r.query for r in rows for _ in r.documents]
    docs = [d for r in rows for d in r.documents]
    flat = encoder.scores(model, encoder.encode(queries, docs, max_length))
    width = max(len(r.documents) for r in rows)
    table = torch.full((len(rows), width), float("-inf"), device=flat.device, dtype=flat.dtype)
    start = 0
    for i, r in enumerate(rows):
        table[i, : len(r.documents)] = flat[start : start + len(r.documents)]
        start += len(r.documents)
    return table


def _top1_accuracy(encoder: CrossEncoder, rows: Sequence[Candidates], cfg: FinetuneConfig) -> float:
    hits = 0
    for row in rows:
        scores = encoder.score_pairs(row.query, row.documents, cfg)
        hits += int(all(scores[0] > s for s in scores[1:]))  # strict, as at test time: a tie is a miss
    return hits / len(rows)


def finetune(
    trainer, train_facts: Sequence[Triple], generator: DocumentGenerator, cfg: FinetuneConfig, seed: int
) -> tuple[CrossEncoder, dict]:
    """Fine-tune a fresh cross-encoder; returns it holding the best epoch's weights, and a log."""
    from accelerate import Accelerator
    from transformers import get_polynomial_decay_schedule_with_warmup

    rng = random.Random(seed)
    facts = list(train_facts)
    rng.shuffle(facts)
    n_val = max(1, round(len(facts) * cfg.validation_fraction))
    if len(facts) - n_val < 1:
        from kbench.errors import UserError

        raise UserError(
            f"the downstream train split has {len(facts)} fact(s); it needs at least 2 (use more facts: a larger --limit)"
        )
    val_facts, fit_facts = facts[:n_val], facts[n_val:]
    val_rows = training_candidates(val_facts, generator, cfg.negatives_per_type, random.Random(seed + 1))

    torch.manual_seed(seed)
    accelerator = Accelerator()
    encoder = CrossEncoder(trainer, seed)
    shard = fit_facts[accelerator.process_index :: accelerator.num_processes]
    if accelerator.num_processes > 1:  # equal step counts on every process, or DDP would hang
        shard = shard[: len(fit_facts) // accelerator.num_processes]
    steps_per_epoch = -(-len(shard) // cfg.batch_size)
    total_steps = steps_per_epoch * cfg.epochs
    optimizer = torch.optim.AdamW(encoder.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = get_polynomial_decay_schedule_with_warmup(
        optimizer,
        num_warmup_steps=int(cfg.warmup_ratio * total_steps),
        num_training_steps=total_steps,
        lr_end=min(cfg.lr_end, cfg.lr * 0.999),
        power=cfg.power,
    )
    model, optimizer, scheduler = accelerator.prepare(encoder.model, optimizer, scheduler)

    best = {"epoch": -1, "val_accuracy": -1.0}
    best_state = None
    losses = []
    with progress(f"cross-encoder (seed {seed})", total=total_steps, unit="steps") as advance:
        for epoch in range(cfg.epochs):
            epoch_rng = random.Random(f"{seed}-epoch-{epoch}")  # resampled negatives every epoch
            order = list(shard)
            epoch_rng.shuffle(order)
            rows = training_candidates(order, generator, cfg.negatives_per_type, epoch_rng)
            model.train()
            epoch_loss = 0.0
            for start in range(0, len(rows), cfg.batch_size):
                batch = rows[start : start + cfg.batch_size]
                optimizer.zero_grad()
                for m in range(0, len(batch), cfg.micro_batch_size):
                    micro = batch[m : m + cfg.micro_batch_size]
                    loss = info_nce(_batch_scores(encoder, model, micro, cfg.max_length)) * (len(micro) / len(batch))
                    accelerator.backward(loss)
                    epoch_loss += float(loss.detach()) * len(batch)
                optimizer.step()
                scheduler.step()
                advance(1)
            losses.append(epoch_loss / max(1, len(rows)))
            encoder.model = accelerator.unwrap_model(model)
            val_acc = _top1_accuracy(encoder, val_rows, cfg)
            if val_acc > best["val_accuracy"]:
                best = {"epoch": epoch, "val_accuracy": val_acc}
                best_state = {k: v.detach().to("cpu", copy=True) for k, v in encoder.model.state_dict().items()}
    LOG.info(
        "cross-encoder (seed %d): best validation accuracy %.3f at epoch %d of %d",
        seed,
        best["val_accuracy"],
        best["epoch"] + 1,
        cfg.epochs,
    )
    assert best_state is not None  # epochs >= 1 (FinetuneConfig): the first epoch sets it
    encoder.model.load_state_dict(best_state)
    encoder.model.eval()
    return encoder, {
        "best_epoch": best["epoch"],
        "val_accuracy": best["val_accuracy"],
        "train_loss": losses,
        "n_fit": len(fit_facts),
        "n_validation": len(val_facts),
        "processes": accelerator.num_processes,
    }
