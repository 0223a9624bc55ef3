"""LEFT's prior as the paper makes it: a language model fine-tuned on BoolQ, then asked about the
statements (LEFT Section 3: "out-of-the-box language models fine-tuned on BoolQ"; for the prior
and closed-book settings "only BoolQ's questions", no text snippets).

    # rows: {"question", "answer": bool[, "passage"]}; the prompt: kbench.tasks.truefalse.prompt.truefalse_prompt
    finetune_boolq("gpt2", rows, Path("gpt2-boolq"), prompt=truefalse_prompt)
    kbench evaluate truefalse --model gpt2 --boolq-checkpoint gpt2-boolq

A causal LM is fine-tuned as a yes/no classifier in the very form the truefalse task reads it:
the prompt is the task's own, handed in (`prompt`), with the question as the statement (and the
row's passage, if any, for open book), and the loss is the cross-entropy of the two-way choice
between the answer forms " True" and " False" (their summed log-probabilities), the margin the task
then thresholds at 0. The folder holds the model and tokenizer (`save_pretrained`) and `boolq.json`,
which records the base model, how many questions, their sha256, the hyper-parameters and the seed,
so the task's protocol block can say what the prior was trained on.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from kbench.errors import InputError, UserError
from kbench.io import stable_hash

MARKER = "boolq.json"
MARKER_SCHEMA = "kbench.boolq-finetune.v1"
ANSWERS = (" True", " False")
BOOLQ_TRAIN_QUESTIONS = 9427  # BoolQ's train split (Clark et al. 2019)


def _answer_logprobs(model, tokenizer, prompts: list[str]):
    """[len(prompts), 2] summed log-probabilities of " True" and " False" after each prompt, the
    ids split as the truefalse task's scorer splits them (`kbench.models.encoding`)."""
    import torch

    from kbench.models.encoding import PromptEncoder

    pairs = PromptEncoder(tokenizer, "causal").continuations([p for p in prompts for _ in ANSWERS], list(ANSWERS) * len(prompts))
    width = max(len(c) + len(a) for c, a in pairs)
    pad = tokenizer.pad_token_id
    ids = torch.tensor([c + a + [pad] * (width - len(c) - len(a)) for c, a in pairs], device=model.device)
    mask = torch.tensor([[1] * (len(c) + len(a)) + [0] * (width - len(c) - len(a)) for c, a in pairs], device=model.device)
    # position t predicts token t + 1: the answer's tokens are read from the positions before them
    read = torch.tensor(
        [[len(c) - 1 <= t < len(c) + len(a) - 1 for t in range(width - 1)] for c, a in pairs], device=model.device
    )
    logits = model(input_ids=ids, attention_mask=mask).logits.float()
    logprobs = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
    return (logprobs * read).sum(dim=1).view(len(prompts), len(ANSWERS))


def finetune_boolq(
    base: str,
    rows: Sequence[dict],
    out: Path,
    *,
    prompt: Callable[[str, str | None, int], str],
    epochs: int = 1,
    lr: float = 1e-5,
    batch_size: int = 8,
    seed: int = 0,
    source: str = "inline rows",
    max_passage_words: int = 150,
) -> Path:
    """Fine-tune causal LM `base` on BoolQ-shaped `rows`, each asked as `prompt(question, passage,
    max_passage_words)`, and write it, with `boolq.json`, to `out` (written beside and moved into
    place, so a half-written folder never looks finished)."""
    import torch

    from kbench.models.loading import load_model

    if not rows:
        raise UserError("the BoolQ fine-tune needs at least one row (question, answer)")
    for i, row in enumerate(rows):
        if not isinstance(row.get("question"), str) or not isinstance(row.get("answer"), bool):
            raise InputError(Path(source), "each row needs a string `question` and a boolean `answer`", line=i + 1)
    loaded = load_model(base)
    if loaded.kind != "causal":
        raise UserError(f"{base}: the BoolQ fine-tune trains a causal LM to answer True/False; this is a {loaded.kind} LM")
    model, tokenizer = loaded.model, loaded.tokenizer
    torch.manual_seed(seed)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    examples = [(prompt(r["question"], r.get("passage"), max_passage_words), 0 if r["answer"] else 1) for r in rows]
    losses = []
    for epoch in range(epochs):
        order = list(examples)
        random.Random(f"{seed}-{epoch}").shuffle(order)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            scores = _answer_logprobs(model, tokenizer, [p for p, _ in chunk])
            loss = torch.nn.functional.cross_entropy(scores, torch.tensor([y for _, y in chunk], device=model.device))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
    model.eval()
    record = {
        "schema": MARKER_SCHEMA,
        "base_model": base,
        "base_identity": loaded.identity,
        "source": source,
        "questions": len(rows),
        "rows_sha256": stable_hash([[r["question"], r["answer"], r.get("passage")] for r in rows]),
        "passages": any(r.get("passage") for r in rows),
        "epochs": epochs,
        "lr": lr,
        "batch_size": batch_size,
        "seed": seed,
        "answers": list(ANSWERS),
        "train_loss": losses,
    }
    out = Path(out)
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    (staging / MARKER).write_text(json.dumps(record, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return out


def read_marker(folder: Path) -> dict | None:
    """The `boolq.json` of a fine-tuned folder; None when the folder has none (trained elsewhere)."""
    path = Path(folder) / MARKER
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not JSON: {exc.msg}", line=exc.lineno) from exc
    if not isinstance(record, dict) or record.get("schema") != MARKER_SCHEMA:
        raise InputError(path, f"schema is not {MARKER_SCHEMA}", key="schema")
    if not isinstance(record.get("questions"), int):
        raise InputError(path, "`questions` is missing or not an integer", key="questions")
    return record
