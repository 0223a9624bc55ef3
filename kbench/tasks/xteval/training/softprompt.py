"""OptiPrompt-style soft prompts (Zhong et al. 2021; XTEVAL Appendix A.1), one set per relation.

The prompt is `[V1..Vn_before] head [Vn_before+1..] <object slot>` (default 3 + 3 vectors), the
vectors are the only trainable parameters, the language model is frozen (weights bit-identical
after training). Each relation's vectors are trained on (subject, object) pairs of other facts of
the relation (AutoPrompt's `<relation>/train.jsonl`, or a dataset's train split; pairs whose
subject is a head of D for the relation are left out, so no fact of D is trained on) with
cross-entropy on the gold ids the top-1 criterion reads (`probes.answer_targets`: the first
token, every token, or the one masked token; masked LMs skip multi-token tails, as OptiPrompt
does), and the epoch with the best top-1 accuracy on the dev pairs is kept.

Saved as `<relation>.safetensors` (tensor `vectors` [n_soft, hidden]) with metadata naming the
model identity, layout, seed, dev accuracy and a config hash; `load_or_train` reuses a saved file
only when all of these match, so vectors are reusable across runs and never silently mismatched.
Multi-GPU: the loop uses `accelerate.Accelerator` (data parallel over the training facts).
Run through `kbench.models.training.Trainer.run`, which hands over the network.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kbench.errors import UserError
from kbench.io import atomic_path, stable_hash
from kbench.models.training.probes import run_probes
from kbench.progress import progress

LOG = logging.getLogger(__name__)


class SoftPromptConfig(BaseModel):
    """Stage-1 hyper-parameters; defaults are the paper's Table 2 (borrowed from OptiPrompt)."""

    model_config = ConfigDict(extra="forbid")
    n_before: int = Field(default=3, ge=0, description="Soft vectors before the subject.")
    n_after: int = Field(default=3, ge=0, description="Soft vectors after the subject.")
    lr: float = Field(
        default=1e-4, gt=0, description="Soft-prompt learning rate (paper Table 2: 1e-4; OptiPrompt's script: 3e-3)."
    )
    weight_decay: float = Field(default=0.0, ge=0, description="Soft-prompt AdamW weight decay.")
    batch_size: int = Field(default=64, ge=1, description="Facts per soft-prompt step.")
    epochs: int = Field(default=20, ge=1, description="Soft-prompt training epochs (paper: 20).")
    warmup_ratio: float = Field(default=0.06, ge=0, lt=1, description="Soft-prompt warm-up share of the steps.")
    max_train_facts: int | None = Field(
        default=None, ge=1, description="Cap soft-prompt train and dev facts per relation (CPU runs)."
    )
    # template: the embeddings of the relation's template words around [X] (OptiPrompt's manual-template init)
    init: Literal["random", "template"] = Field(
        default="random",
        description="Soft-prompt start: random (OptiPrompt default) or template (the relation's template words).",
    )


def target_pairs(trainer, pairs, criterion: str, exclude_heads: frozenset[str] = frozenset()) -> list[tuple[str, list[int]]]:
    """(head, gold ids) for each usable (subject, object) pair: not a head of D, readable at top-1."""
    out = []
    for head, tail in pairs:
        if head in exclude_heads:
            continue
        targets = trainer.answer_targets(tail, criterion)
        if targets is not None:
            out.append((head, targets))
    return out


def _accuracy(trainer, pairs, vectors, cfg: SoftPromptConfig) -> float:
    import torch

    hits = 0
    with torch.no_grad():
        for start in range(0, len(pairs), cfg.batch_size):
            probes = [trainer.soft_probe(h, t, cfg.n_before, cfg.n_after) for h, t in pairs[start : start + cfg.batch_size]]
            hits += int(run_probes(trainer.model, probes, trainer.pad_id, vectors)[1].sum())
    return hits / max(1, len(pairs))


def template_init(token_ids: Callable[[str], list[int]], template: str, n_before: int, n_after: int) -> list[int | None]:
    """Token ids to start each soft slot from: the last `n_before` tokens of the template text
    before [X] and the first `n_after` tokens between [X] and [Y]; None where the text is short."""
    if "[X]" not in template or "[Y]" not in template or template.index("[X]") > template.index("[Y]"):
        return [None] * (n_before + n_after)
    before_text, rest = template.split("[X]", 1)
    middle = rest.split("[Y]", 1)[0]
    before = token_ids(before_text.rstrip()) if before_text.strip() else []
    after = token_ids(" " + middle.strip()) if middle.strip() else []
    before_ids = [None] * max(0, n_before - len(before)) + before[-n_before:] if n_before else []
    after_ids = (after[:n_after] + [None] * max(0, n_after - len(after))) if n_after else []
    return before_ids + after_ids


def train_relation(
    trainer,
    train_pairs,
    dev_pairs,
    cfg: SoftPromptConfig,
    seed: int,
    template: str | None = None,
    label: str = "soft prompts",
) -> tuple:
    """Train one relation's vectors on (head, gold ids) pairs (`target_pairs`); returns (best
    vectors [n_soft, hidden] on CPU, log dict)."""
    import torch
    from accelerate import Accelerator
    from transformers import get_polynomial_decay_schedule_with_warmup

    model = trainer.model
    model.requires_grad_(False)
    model.eval()  # frozen: no dropout, no weight updates
    embeddings = model.get_input_embeddings().weight
    n_soft = cfg.n_before + cfg.n_after
    if n_soft == 0:
        raise UserError("soft prompts need at least one vector (n_before + n_after > 0)")
    generator = torch.Generator().manual_seed(seed)
    init = torch.randn(n_soft, embeddings.shape[1], generator=generator) * float(embeddings.detach().float().std())
    if cfg.init == "template" and template:
        for slot, token in enumerate(template_init(trainer.token_ids, template, cfg.n_before, cfg.n_after)):
            if token is not None:
                init[slot] = embeddings[token].detach().float().cpu()

    class SoftPrompt(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vectors = torch.nn.Parameter(init.to(embeddings.device, embeddings.dtype))

        def forward(self):
            return self.vectors

    accelerator = Accelerator()
    prompt = SoftPrompt()
    pairs = list(train_pairs)
    random.Random(seed).shuffle(pairs)
    dev_pairs = list(dev_pairs)
    if cfg.max_train_facts:
        pairs = pairs[: cfg.max_train_facts]
        random.Random(f"{seed}-dev").shuffle(dev_pairs)
        dev_pairs = dev_pairs[: cfg.max_train_facts]
    shard = pairs[accelerator.process_index :: accelerator.num_processes]
    if accelerator.num_processes > 1:
        shard = shard[: len(pairs) // accelerator.num_processes]
    total = -(-len(shard) // cfg.batch_size) * cfg.epochs
    optimizer = torch.optim.AdamW(prompt.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = get_polynomial_decay_schedule_with_warmup(optimizer, int(cfg.warmup_ratio * total), total)
    prompt, optimizer, scheduler = accelerator.prepare(prompt, optimizer, scheduler)

    best = (-1.0, -1)
    best_vectors = None
    losses = []
    with progress(label, total=total, unit="steps") as advance:
        for epoch in range(cfg.epochs):
            order = list(shard)
            random.Random(f"{seed}-{epoch}").shuffle(order)
            epoch_loss = 0.0
            for start in range(0, len(order), cfg.batch_size):
                chunk = order[start : start + cfg.batch_size]
                probes = [trainer.soft_probe(h, t, cfg.n_before, cfg.n_after) for h, t in chunk]
                loss = run_probes(model, probes, trainer.pad_id, prompt())[0].mean()
                optimizer.zero_grad()
                accelerator.backward(loss)
                optimizer.step()
                scheduler.step()
                epoch_loss += float(loss.detach()) * len(chunk)
                advance(1)
            losses.append(epoch_loss / max(1, len(order)))
            vectors = accelerator.unwrap_model(prompt).vectors.detach()
            dev_acc = _accuracy(trainer, dev_pairs, vectors, cfg)
            if dev_acc > best[0]:
                best = (dev_acc, epoch)
                best_vectors = vectors.to("cpu", copy=True)
    LOG.info("%s: best dev accuracy %.3f at epoch %d of %d", label, best[0], best[1] + 1, cfg.epochs)
    return best_vectors, {"dev_accuracy": best[0], "best_epoch": best[1], "train_loss": losses}


def _metadata(trainer, relation: str, cfg: SoftPromptConfig, seed: int, criterion: str) -> dict[str, str]:
    return {
        "model_identity": trainer.identity,
        "relation": relation,
        "seed": str(seed),
        "criterion": criterion,
        "config_hash": stable_hash(cfg.model_dump()),
        "n_before": str(cfg.n_before),
        "n_after": str(cfg.n_after),
    }


def load_or_train(
    trainer,
    relation: str,
    pairs: Callable[[str], tuple[list, list]],
    save_dir: Path,
    cfg: SoftPromptConfig,
    seed: int,
    write: bool = True,
    template: str | None = None,
    criterion: str = "first-token",
    exclude_heads: frozenset[str] = frozenset(),
):
    """The relation's vectors from `save_dir` when saved for this model/config/seed/criterion, else
    trained on `pairs(relation)` = (train, dev) (subject, object) pairs and saved (when `write`);
    subjects in `exclude_heads` (the relation's heads in D) are never trained or validated on.
    None when the relation has no usable train or dev pair."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    path = Path(save_dir) / f"{relation}.safetensors"
    wanted = _metadata(trainer, relation, cfg, seed, criterion)
    if path.exists():
        with safe_open(str(path), framework="pt") as fh:
            meta = fh.metadata() or {}
            if all(meta.get(k) == v for k, v in wanted.items()):
                return fh.get_tensor("vectors").to(trainer.model.device)
        raise UserError(f"{path} holds soft prompts for another model, seed, criterion or config; use another directory")
    train_raw, dev_raw = pairs(relation)
    train_pairs = target_pairs(trainer, train_raw, criterion, exclude_heads)
    dev_pairs = target_pairs(trainer, dev_raw, criterion, exclude_heads)
    if not train_pairs or not dev_pairs:
        return None  # nothing to train on: the caller leaves the relation's facts out of D
    vectors, log = train_relation(trainer, train_pairs, dev_pairs, cfg, seed, template, f"soft prompts {relation}")
    if write:
        with atomic_path(path) as tmp:
            save_file(
                {"vectors": vectors.contiguous()},
                str(tmp),
                metadata={
                    **wanted,
                    "dev_accuracy": str(log["dev_accuracy"]),
                    "best_epoch": str(log["best_epoch"]),
                    "n_train": str(len(train_pairs)),
                    "n_dev": str(len(dev_pairs)),
                },
            )
    return vectors.to(trainer.model.device)
