"""`kbench read`: continued pre-training of a causal LM on text (LEFT's "closed book, after reading").

    read_text(ReadSettings(model="smollm2-135m", text="runs/left/corpus/paragraphs.jsonl", out="ckpt"))

Text: a `.jsonl` file (the `text` field of each line; `only={"split": "dev"}` keeps lines whose
fields match) or a folder of `.txt` / `.md` / `.jsonl` files, read in sorted order. Documents are
tokenised, joined with the end-of-sequence token and cut into blocks of `seq_len` tokens (the
last, shorter block is dropped, as in the usual causal-LM recipe). Training: causal LM loss,
AdamW (lr, no weight decay), `batch_size` blocks per step, blocks shuffled per epoch by `seed`,
at most `max_steps` optimizer steps in all.

Checkpoint (`out`): the model (safetensors) and tokenizer via `save_pretrained`, so
`load_model(out)` opens it, plus `read.json` (base model identity, text sha256, settings, mean
loss per epoch), written last: a folder with `read.json` is complete.

Resume by epoch: after each epoch the model, the AdamW moments (a safetensors file, no pickle)
and `progress.json` go to `out/.kbench-read/epoch-<n>/`, renamed into place when complete. A
rerun with the same settings continues after the last finished epoch, and a rerun with more
`epochs` extends the training; other changed settings are a `UserError`. An epoch cut short by
`max_steps` counts as finished (a later run with more epochs starts the next one).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kbench.errors import InputError, UserError
from kbench.io import atomic_path, iter_jsonl, sha256_file, stable_hash, write_json

STATE_DIR = ".kbench-read"
TEXT_SUFFIXES = (".txt", ".md", ".jsonl")


@dataclass(frozen=True)
class ReadSettings:
    model: str
    text: str
    out: str
    epochs: int = 1
    lr: float = 5e-5
    max_steps: int | None = None
    seq_len: int = 256
    batch_size: int = 8
    seed: int = 0
    only: dict[str, str] = field(default_factory=dict)


def text_files(text: Path) -> list[Path]:
    if text.is_file():
        return [text]
    if text.is_dir():
        files = sorted(p for p in text.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
        if not files:
            raise UserError(f"{text}: no {', '.join(TEXT_SUFFIXES)} files to read")
        return files
    raise UserError(f"--text {text}: no such file or folder")


def read_documents(files: list[Path], only: dict[str, str]) -> list[str]:
    docs: list[str] = []
    for path in files:
        if path.suffix == ".jsonl":
            for lineno, row in iter_jsonl(path, ("text",)):
                if not isinstance(row["text"], str):
                    raise InputError(path, "`text` must be a string", line=lineno)
                if all(str(row.get(k)) == v for k, v in only.items()):
                    docs.append(row["text"])
        else:
            try:
                docs.append(path.read_text(encoding="utf-8"))
            except UnicodeDecodeError as exc:
                raise InputError(path, "not UTF-8 text") from exc
    docs = [d for d in docs if d.strip()]
    if not docs:
        raise UserError(f"no text to read in {', '.join(map(str, files))}" + (f" matching {only}" if only else ""))
    return docs


def token_blocks(tokenizer, docs: list[str], seq_len: int) -> list[list[int]]:
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


def _state_dir(out: Path) -> Path:
    return out / STATE_DIR


def _last_epoch(out: Path, key: str) -> tuple[int, Path | None, dict]:
    """(finished epochs, their folder, progress) of a previous run with the same settings key."""
    best: tuple[int, Path | None, dict] = (0, None, {})
    for folder in sorted(_state_dir(out).glob("epoch-*")) if _state_dir(out).is_dir() else []:
        progress_file = folder / "progress.json"
        if not progress_file.is_file():
            continue
        progress = json.loads(progress_file.read_text())
        if progress.get("key") != key:
            raise UserError(f"{out} holds a reading run with other settings; use another --out or delete the folder")
        if progress["epoch"] > best[0]:
            best = (progress["epoch"], folder, progress)
    return best


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


def _save_epoch(model, tokenizer, optimizer, out: Path, progress: dict) -> Path:
    state = _state_dir(out)
    tmp = state / f"epoch-{progress['epoch']:04d}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    _save_optimizer(optimizer, model, tmp / "optimizer.safetensors")
    write_json(tmp / "progress.json", progress)
    final = state / f"epoch-{progress['epoch']:04d}"
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for older in state.glob("epoch-*"):  # keep only the newest finished epoch
        if older != final:
            shutil.rmtree(older, ignore_errors=True)
    return final


def read_text(settings: ReadSettings, on_step: Callable[[int, int, float], None] | None = None) -> dict:
    """Train, checkpoint per epoch, write the final checkpoint; return the `read.json` content.
    `on_step(step, total_steps, loss)` is called after each optimizer step."""
    import torch

    from kbench.models.loading import load_model

    if settings.epochs < 1 or settings.seq_len < 2 or settings.batch_size < 1 or settings.lr <= 0:
        raise UserError("--epochs, --batch-size must be >= 1, --seq-len >= 2 and --lr > 0")
    if settings.max_steps is not None and settings.max_steps < 1:
        raise UserError(f"--max-steps must be >= 1, got {settings.max_steps}")
    out = Path(settings.out)
    files = text_files(Path(settings.text))
    base = load_model(settings.model)
    if base.kind != "causal":
        raise UserError(f"kbench read trains causal LMs; {settings.model} is a {base.kind} LM")
    key = stable_hash(
        {
            "base": base.identity,
            "files": [sha256_file(f) for f in files],
            **{k: v for k, v in asdict(settings).items() if k not in ("out", "text", "model", "epochs", "max_steps")},
        }
    )
    done_epochs, folder, progress = _last_epoch(out, key)
    loaded = load_model(str(folder)) if folder is not None else base
    model, tokenizer = loaded.model, loaded.tokenizer
    blocks = token_blocks(tokenizer, read_documents(files, settings.only), settings.seq_len)
    steps_per_epoch = -(-len(blocks) // settings.batch_size)
    total_steps = min(steps_per_epoch * settings.epochs, settings.max_steps or 10**12)
    step, losses = progress.get("step", 0), progress.get("epoch_losses", [])

    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.0)
    if folder is not None:
        _load_optimizer(optimizer, model, folder / "optimizer.safetensors")
    started = time.perf_counter()
    for epoch in range(done_epochs + 1, settings.epochs + 1):
        if step >= total_steps:
            break
        order = torch.randperm(len(blocks), generator=torch.Generator().manual_seed(settings.seed * 1000 + epoch)).tolist()
        epoch_loss, epoch_steps = 0.0, 0
        for start in range(0, len(order), settings.batch_size):
            if step >= total_steps:
                break
            batch = torch.tensor([blocks[i] for i in order[start : start + settings.batch_size]], device=model.device)
            loss = model(input_ids=batch, labels=batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            loss_value = loss.detach().item()
            epoch_loss, epoch_steps = epoch_loss + loss_value, epoch_steps + 1
            if on_step is not None:
                on_step(step, total_steps, loss_value)
        losses.append(epoch_loss / max(epoch_steps, 1))
        folder = _save_epoch(model, tokenizer, optimizer, out, {"key": key, "epoch": epoch, "step": step, "epoch_losses": losses})

    record = {
        "kbench_read_version": 1,
        "base_model": {"name": settings.model, "identity": base.identity},
        "text_files": [str(f) for f in files],
        "text_sha256": [sha256_file(f) for f in files],
        "blocks": len(blocks),
        "steps": step,
        "epoch_losses": losses,
        "settings": {k: v for k, v in asdict(settings).items() if k != "out"},
        "seconds_this_run": round(time.perf_counter() - started, 3),
    }
    for item in sorted(folder.iterdir()) if folder is not None else []:
        if item.is_file() and item.name not in ("optimizer.safetensors", "progress.json"):
            with atomic_path(out / item.name) as tmp:
                shutil.copyfile(item, tmp)
    write_json(out / "read.json", record)
    return record
