"""What the fitted techniques (CAA, ITI, DeCoRe) share: leakage-free folds, contrast pairs and
the store of fitted tensors. Their forward passes are the model interface's (`activations`,
`rank_first_token`, `strongest_attention`): batched, served from the result cache, and run once
per shared token prefix where texts share one (ITI asks for a pair's true and false statements
in one call for that reason).

Folds: when the dataset has a train (or else a dev) split, a seeded sample of it is the
fitting pool for every evaluated item.
Otherwise the evaluated items (all of them, `context.evaluated_items`, not only the work unit
being answered) are cut into two folds by a hash of their id, and each fold is answered with
what was fitted on the other one, so no item ever meets a vector or probe built from itself, and
a unit's answers do not depend on how the run was cut into units.

Fitted tensors are saved as safetensors (never pickle) under the run's fit folder, named by a
hash of everything that determines them, so a resumed run reloads instead of refitting.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kbench.io import atomic_path, stable_hash
from kbench.models.prompt import Prompt
from kbench.tasks.kee.techniques.base import KeeContext, KeeItem


def fitting_plan(context: KeeContext, items: Sequence[KeeItem]) -> list[tuple[list[KeeItem], list[KeeItem]]]:
    """[(fit pool, items answered with it)], covering every item exactly once."""
    if context.train_items:
        return [(list(context.train_items), list(items))]
    folds: list[list[KeeItem]] = [[], []]
    for item in context.evaluated_items or items:
        folds[int(stable_hash(["fold", item.id])[:8], 16) % 2].append(item)
    wanted = {item.id for item in items}
    plan = [(folds[1 - f], [i for i in folds[f] if i.id in wanted]) for f in (0, 1)]
    return [(pool, answered) for pool, answered in plan if answered]


def split_pool(pool: Sequence[KeeItem], held_out: float = 0.2) -> tuple[list[KeeItem], list[KeeItem]]:
    """(build, select): a deterministic 80/20 cut of a fitting pool, by hashed id."""
    ordered = sorted(pool, key=lambda i: stable_hash(["pool", i.id]))
    n_select = max(1, round(held_out * len(ordered))) if len(ordered) > 1 else 0
    return ordered[n_select:], ordered[:n_select]


def _norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def wrong_answer(item: KeeItem, pool: Sequence[KeeItem]) -> str | None:
    """A deterministic false answer for `item`: another item's gold, from the same relation when
    possible, that matches none of the item's valid answers."""
    valid = {_norm(a) for a in item.answers}
    candidates = sorted(
        (o for o in pool if o.id != item.id and _norm(o.gold) not in valid),
        key=lambda o: (o.relation != item.relation, stable_hash(["wrong", item.id, o.id])),
    )
    return candidates[0].gold if candidates else None


def contrast_texts(
    context: KeeContext, items: Sequence[KeeItem], pool: Sequence[KeeItem] | None = None
) -> tuple[list[Prompt], list[Prompt]]:
    """(true statements, false statements): the answer prompt continued by the gold and by a
    wrong answer drawn from `pool` (default: `items`). Items without any possible wrong answer
    are left out."""
    true, false = [], []
    for item in items:
        wrong = wrong_answer(item, pool if pool is not None else items)
        if wrong is not None:
            prompt = context.answer_prompt(item.question)
            true.append(prompt.then(context.gold(item)))
            false.append(prompt.then(context.gold(KeeItem(item.id, item.question, (wrong,)))))
    return true, false


class FitStore:
    """safetensors files of fitted tensors plus their JSON metadata, keyed by a content hash."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def path(self, technique: str, key: dict) -> Path:
        return self.folder / f"{technique}-{stable_hash(key)[:16]}.safetensors"

    def load(self, technique: str, key: dict):
        """(tensors, metadata) or None when not fitted yet."""
        import json

        from safetensors import safe_open
        from safetensors.torch import load_file

        path = self.path(technique, key)
        if not path.exists():
            return None
        with safe_open(str(path), framework="pt") as fh:
            meta = json.loads(fh.metadata()["kbench"])
        return load_file(str(path)), meta

    def save(self, technique: str, key: dict, tensors: dict, meta: dict) -> None:
        import json

        from safetensors.torch import save_file

        path = self.path(technique, key)
        with atomic_path(path) as tmp:
            save_file(
                {k: v.contiguous() for k, v in tensors.items()},
                str(tmp),
                metadata={"kbench": json.dumps({"key": key, **meta}, sort_keys=True)},
            )
