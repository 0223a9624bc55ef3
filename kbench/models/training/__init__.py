"""Training and top-1 probing through an in-process model's network (`Capability.TRAIN`).

    from kbench.models.training import trainer
    train = trainer(ctx.model, "task xteval")      # refuses a model without TRAIN (exit code 2)
    hits = train.probe_hits(probes, batch_size=32)  # teacher-forced top-1 probes (probes.py)
    vectors = train.run(load_or_train, "P19", pairs, save_dir, cfg, seed)   # a task's routine on the network

The one place outside a backend that holds the torch module: tasks (XTEVAL) call these methods and
never see the `LoadedModel`, its tokenizer or a backend's attributes; a task's own training routine
(`run`) gets the `Trainer` itself, whose `model` is the network it trains, and tokenises through its
typed methods (`answer_targets`, `soft_probe`, `prompt_probes`, `token_ids`, `encode_pairs`).

    probes.py        teacher-forced top-1 probes (first token / full answer / the mask), soft-prompt slots
    reading.py       `kbench read`'s continued pre-training loop and its per-epoch checkpoints
    boolq.py         LEFT's prior as the paper makes it: a causal LM fine-tuned on BoolQ (True/False)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from kbench.models.interface import Capability, LanguageModel, TrainableModel, require
from kbench.models.training.probes import Probe, answer_targets, prompt_probes, soft_probe

if TYPE_CHECKING:
    from kbench.models.loading import LoadedModel


class Trainer:
    """What training and probing may use of one model: its kind and identity, the network a task's
    routine trains (`model`), its tokenisation as typed methods, and methods that run the network."""

    def __init__(self, weights: LoadedModel):
        self._tokenizer = weights.tokenizer
        self.model = weights.model  # the transformers network
        self.kind = weights.kind
        self.identity = weights.identity

    @property
    def pad_id(self) -> int:
        """The padding id, 0 where the tokenizer has none (as the runner pads: loading gives it one where it can)."""
        pad = self._tokenizer.pad_token_id
        return pad if pad is not None else 0

    def token_ids(self, text: str) -> list[int]:
        """The text's token ids, no special tokens added."""
        return self._tokenizer(text, add_special_tokens=False)["input_ids"]

    def answer_targets(self, answer: str, criterion: str) -> list[int] | None:
        return answer_targets(self._tokenizer, self.kind, answer, criterion)

    def soft_probe(self, head: str, targets: list[int], n_before: int, n_after: int) -> Probe:
        return soft_probe(self._tokenizer, self.kind, head, targets, n_before, n_after)

    def prompt_probes(self, prompts: Sequence[str], targets: Sequence[list[int]]) -> list[Probe]:
        return prompt_probes(self._tokenizer, self.kind, prompts, targets)

    def encode_pairs(self, queries: Sequence[str], documents: Sequence[str], max_length: int):
        """A cross-encoder batch (tensors): a masked LM reads [CLS] query [SEP] document [SEP]; a
        causal LM reads "query\ndocument", right-padded (its score is read at the last real token)."""
        if self.kind == "masked":
            return self._tokenizer(
                list(queries), list(documents), padding=True, truncation=True, max_length=max_length, return_tensors="pt"
            )
        texts = [f"{q}\n{d}" for q, d in zip(queries, documents)]
        return self._tokenizer(
            texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt", padding_side="right"
        )

    def probe_hits(self, probes: Sequence[Probe], batch_size: int, vectors=None) -> list[bool]:
        """Per probe: is every target token the argmax (with soft-prompt `vectors` in its slots)?"""
        import torch

        from kbench.models.training.probes import run_probes

        hits: list[bool] = []
        with torch.no_grad():
            for start in range(0, len(probes), batch_size):
                chunk = probes[start : start + batch_size]
                hits += run_probes(self.model, chunk, self.pad_id, vectors)[1].tolist()
        return hits

    def run(self, routine: Callable, *args, **options):
        """`routine(self, *args, **options)`: a task's own training on this model's network (XTEVAL's
        soft prompts and cross-encoder, `kbench.tasks.xteval.training`), so this layer names no task."""
        return routine(self, *args, **options)


def trainer(model: LanguageModel, who: str) -> Trainer:
    """The `Trainer` of an in-process model; a model without `Capability.TRAIN` is refused for `who`."""
    require(model, [Capability.TRAIN], who)
    return Trainer(cast(TrainableModel, model).training_weights())
