"""`kbench read`: continued pre-training of a causal LM on text (LEFT's "closed book, after reading").

    read_text(ReadSettings(model="smollm2-135m", text="runs/left/corpus/paragraphs.jsonl", out="ckpt"))

Text: a `.jsonl` file (the `text` field of each line; `only={"split": "dev"}` keeps lines whose
fields match) or a folder of `.txt` / `.md` / `.jsonl` files, read in sorted order. Documents are
tokenised, joined with the end-of-sequence token and cut into blocks of `seq_len` tokens (the
last, shorter block is dropped, as in the usual causal-LM recipe). Training: causal LM loss,
AdamW (lr, no weight decay), `batch_size` blocks per step, blocks shuffled per epoch by `seed`,
at most `max_steps` optimizer steps in all.

Checkpoint (`out`): the model (safetensors) and tokenizer via `save_pretrained`, so
`--model out` opens it, plus `read.json` (base model identity, text sha256, settings, mean
loss per epoch), written last: a folder with `read.json` is complete.

Resume by epoch: after each epoch the model, the AdamW moments (a safetensors file, no pickle)
and `progress.json` go to `out/.kbench-read/epoch-<n>/`, renamed into place when complete. A
rerun with the same settings continues after the last finished epoch, and a rerun with more
`epochs` extends the training; other changed settings are a `UserError`. An epoch cut short by
`max_steps` counts as finished (a later run with more epochs starts the next one).

The network itself (loss, AdamW, saving weights and moments) is `kbench.models.training.reading`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kbench.errors import InputError, UserError
from kbench.io import atomic_path, iter_jsonl, sha256_file, stable_hash, write_json
from kbench.models.training.reading import OPTIMIZER_FILE, Reader
from kbench.progress import progress as progress_bar

LOG = logging.getLogger(__name__)

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


def _save_epoch(reader: Reader, out: Path, progress: dict) -> Path:
    state = _state_dir(out)
    tmp = state / f"epoch-{progress['epoch']:04d}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    reader.save_epoch(tmp)
    write_json(tmp / "progress.json", progress)
    final = state / f"epoch-{progress['epoch']:04d}"
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for older in state.glob("epoch-*"):  # keep only the newest finished epoch
        if older != final:
            shutil.rmtree(older, ignore_errors=True)
    return final


def read_text(settings: ReadSettings) -> dict:
    """Train, checkpoint per epoch, write the final checkpoint; return the `read.json` content.
    Progress (steps, with an ETA) through `kbench.progress`; each finished epoch is logged."""
    if settings.epochs < 1 or settings.seq_len < 2 or settings.batch_size < 1 or settings.lr <= 0:
        raise UserError("--epochs, --batch-size must be >= 1, --seq-len >= 2 and --lr > 0")
    if settings.max_steps is not None and settings.max_steps < 1:
        raise UserError(f"--max-steps must be >= 1, got {settings.max_steps}")
    out = Path(settings.out)
    files = text_files(Path(settings.text))
    reader = Reader(settings.model)
    if reader.kind != "causal":
        raise UserError(f"kbench read trains causal LMs; {settings.model} is a {reader.kind} LM")
    key = stable_hash(
        {
            "base": reader.identity,
            "files": [sha256_file(f) for f in files],
            **{k: v for k, v in asdict(settings).items() if k not in ("out", "text", "model", "epochs", "max_steps")},
        }
    )
    done_epochs, folder, progress = _last_epoch(out, key)
    reader.start(settings.lr, resume_from=folder)
    blocks = reader.token_blocks(read_documents(files, settings.only), settings.seq_len)
    steps_per_epoch = -(-len(blocks) // settings.batch_size)
    total_steps = min(steps_per_epoch * settings.epochs, settings.max_steps or 10**12)
    step, losses = progress.get("step", 0), progress.get("epoch_losses", [])
    if done_epochs:
        LOG.info("%s: resuming after epoch %d (step %d of %d)", out, done_epochs, step, total_steps)

    started = time.perf_counter()
    with progress_bar(f"reading {Path(settings.text).name}", total=total_steps - step, unit="steps") as advance:
        for epoch in range(done_epochs + 1, settings.epochs + 1):
            if step >= total_steps:
                break
            order_seed = settings.seed * 1000 + epoch  # blocks shuffled per epoch
            step, epoch_loss = reader.train_epoch(
                blocks, order_seed, settings.batch_size, step, total_steps, on_step=lambda _: advance(1)
            )
            losses.append(epoch_loss)
            folder = _save_epoch(reader, out, {"key": key, "epoch": epoch, "step": step, "epoch_losses": losses})
            LOG.info("epoch %d: mean loss %.4f (step %d of %d); checkpoint %s", epoch, epoch_loss, step, total_steps, folder)

    record = {
        "kbench_read_version": 1,
        "base_model": {"name": settings.model, "identity": reader.identity},
        "text_files": [str(f) for f in files],
        "text_sha256": [sha256_file(f) for f in files],
        "blocks": len(blocks),
        "steps": step,
        "epoch_losses": losses,
        "settings": {k: v for k, v in asdict(settings).items() if k != "out"},
        "seconds_this_run": round(time.perf_counter() - started, 3),
    }
    for item in sorted(folder.iterdir()) if folder is not None else []:
        if item.is_file() and item.name not in (OPTIMIZER_FILE, "progress.json"):
            with atomic_path(out / item.name) as tmp:
                shutil.copyfile(item, tmp)
    write_json(out / "read.json", record)
    return record
