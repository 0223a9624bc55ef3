"""`kbench read`'s training side: continued pre-training of one causal LM, with checkpoints.

    reader = Reader(settings.model)                # the base model (identity, kind)
    blocks = reader.token_blocks(docs, seq_len)    # the text as token-id blocks of seq_len
    reader.start(lr, resume_from=folder)           # AdamW; the weights and moments of a saved epoch
    step, loss = reader.train_epoch(blocks, order_seed, batch_size, step, total_steps, advance)
    folder = reader.save_epoch(tmp_folder)         # model + tokenizer (save_pretrained) + AdamW moments

The AdamW moments are a safetensors file (no pickle), keyed by parameter name. The command's
bookkeeping (text, settings key, resume by epoch, read.json) is `kbench.read`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kbench.errors import UserError
from kbench.io import atomic_path
from kbench.models.loading import load_model

OPTIMIZER_FILE = "optimizer.safetensors"


class Reader:
    def __init__(self, model: str):
        self._weights = load_model(model)
        self.identity = self._weights.identity  # the base model's, whatever epoch is resumed
        self.kind = self._weights.kind
        self._optimizer: Any = None  # torch's AdamW once `start` is called

    def start(self, lr: float, resume_from: Path | None = None) -> None:
        """Train mode and a fresh AdamW, or the weights and AdamW moments saved in `resume_from`."""
        import torch

        if resume_from is not None:
            self._weights = load_model(str(resume_from))
        model = self._weights.model
        model.train()
        self._optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        if resume_from is not None:
            _load_optimizer(self._optimizer, model, resume_from / OPTIMIZER_FILE)

    def token_blocks(self, docs: list[str], seq_len: int) -> list[list[int]]:
        """The documents' token ids, each followed by EOS (where the tokenizer has one), cut into
        blocks of `seq_len` (the tail that fills no block is dropped)."""
        tokenizer = self._weights.tokenizer
        eos = tokenizer.eos_token_id
        ids: list[int] = []
        for doc in docs:
            ids.extend(tokenizer(doc, add_special_tokens=False)["input_ids"])
            if eos is not None:
                ids.append(eos)
        blocks = [ids[i : i + seq_len] for i in range(0, len(ids) - seq_len + 1, seq_len)]
        if not blocks:
            raise UserError(f"the text has {len(ids)} tokens, fewer than one block of --seq-len {seq_len}")
        return blocks

    def train_epoch(
        self,
        blocks: Sequence[list[int]],
        order_seed: int,
        batch_size: int,
        step: int,
        total_steps: int,
        on_step: Callable[[float], None],
    ) -> tuple[int, float]:
        """One pass over `blocks` shuffled by `order_seed` (causal LM loss), stopping at `total_steps`;
        returns (steps so far, mean loss of this epoch's steps). `on_step(loss)` after each step."""
        import torch

        model, optimizer = self._weights.model, self._optimizer
        order = torch.randperm(len(blocks), generator=torch.Generator().manual_seed(order_seed)).tolist()
        epoch_loss, epoch_steps = 0.0, 0
        for start in range(0, len(order), batch_size):
            if step >= total_steps:
                break
            batch = torch.tensor([blocks[i] for i in order[start : start + batch_size]], device=model.device)
            loss = model(input_ids=batch, labels=batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            loss_value = loss.detach().item()
            epoch_loss, epoch_steps = epoch_loss + loss_value, epoch_steps + 1
            on_step(loss_value)
        return step, epoch_loss / max(epoch_steps, 1)

    def save_epoch(self, folder: Path) -> None:
        """The model, its tokenizer and the AdamW moments into `folder`."""
        self._weights.model.save_pretrained(folder, safe_serialization=True)
        self._weights.tokenizer.save_pretrained(folder)
        _save_optimizer(self._optimizer, self._weights.model, folder / OPTIMIZER_FILE)


def _save_optimizer(optimizer, model, path: Path) -> None:
    from safetensors.torch import save_file

    names = {id(p): n for n, p in model.named_parameters()}
    tensors = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state.get(p)
            if state:
                for k, v in state.items():
                    tensors[f"{names[id(p)]}::{k}"] = v.detach().reshape(-1).clone() if k == "step" else v.detach().contiguous()
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp))


def _load_optimizer(optimizer, model, path: Path) -> None:
    from safetensors.torch import load_file

    tensors = load_file(str(path))
    for name, p in model.named_parameters():
        state = {k.split("::", 1)[1]: v for k, v in tensors.items() if k.split("::", 1)[0] == name}
        if state:
            if "step" in state:
                state["step"] = state["step"].reshape(())
            optimizer.state[p] = state
