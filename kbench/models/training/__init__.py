"""Training and top-1 probing through an in-process model's network (`Capability.TRAIN`).

    from kbench.models.training import trainer
    train = trainer(ctx.model, "task xteval")      # refuses a model without TRAIN (exit code 2)
    hits = train.probe_hits(probes, batch_size=32)  # teacher-forced top-1 probes (probes.py)
    vectors = train.run(load_or_train, "P19", pairs, save_dir, cfg, seed)   # a task's routine on the network

The one place outside a backend that holds the torch module: tasks (XTEVAL) and `kbench read`
call these methods and never see the network, the `LoadedModel` or a backend's attributes.

    probes.py        teacher-forced top-1 probes (first token / full answer / the mask), soft-prompt slots
    reading.py       `kbench read`'s continued pre-training loop and its per-epoch checkpoints
    boolq.py         LEFT's prior as the paper makes it: a causal LM fine-tuned on BoolQ (True/False)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kbench.models.interface import Capability, LanguageModel, require
from kbench.models.training.probes import Probe

if TYPE_CHECKING:
    from kbench.models.loading import LoadedModel


class Trainer:
    """What training and probing may use of one model: its tokenizer, kind and identity, and
    methods that run the network."""

    def __init__(self, weights: LoadedModel):
        self._weights = weights
        self.tokenizer = weights.tokenizer
        self.kind = weights.kind
        self.identity = weights.identity

    def probe_hits(self, probes: Sequence[Probe], batch_size: int, vectors=None) -> list[bool]:
        """Per probe: is every target token the argmax (with soft-prompt `vectors` in its slots)?"""
        import torch

        from kbench.models.training.probes import run_probes

        hits: list[bool] = []
        with torch.no_grad():
            for start in range(0, len(probes), batch_size):
                chunk = probes[start : start + batch_size]
                hits += run_probes(self._weights.model, chunk, self.tokenizer.pad_token_id, vectors)[1].tolist()
        return hits

    def run(self, routine: Callable, *args, **options):
        """`routine(weights, *args, **options)`: a task's own training on this model's network (XTEVAL's
        soft prompts and cross-encoder, `kbench.tasks.xteval.training`), so this layer names no task."""
        return routine(self._weights, *args, **options)


def trainer(model: LanguageModel, who: str) -> Trainer:
    """The `Trainer` of an in-process model; a model without `Capability.TRAIN` is refused for `who`."""
    require(model, [Capability.TRAIN], who)
    return Trainer(model.training_weights())
