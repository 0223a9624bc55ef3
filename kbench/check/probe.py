"""The probe `kbench check` sends: LAMA-style cloze facts, each a plain-text prompt and its gold.

Default: a seeded sample of the LAMA T-REx facts in the data root (`kbench data fetch`), the relations
whose template puts the subject before the object, worded as `kbench evaluate extraction` words a
cloze prompt (the template cut before [Y]). With `--dataset DIR`: the test split of a built question
dataset, its `prompt_cloze` and `object`, sampled the same way (`seeded_sample`)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from kbench.errors import UserError

STOP = ("\n", ". ", ",")  # kbench.evaluate.prompts.STOPS["cloze"]
MAX_NEW_TOKENS = 8  # enough for an entity's name; the checks compare answers, not their accuracy
FACTS_PER_RELATION = 20  # the first facts of each relation the default sample is drawn from


@dataclass(frozen=True)
class ProbeItem:
    id: str
    prompt: str
    gold: str  # the continuation of `prompt`, leading space included


def probe_items(dataset: Path | None, limit: int, seed: int) -> tuple[list[ProbeItem], str]:
    """(the items, where they came from)."""
    if limit < 1:
        raise UserError(f"--limit must be >= 1, got {limit}")
    if dataset is not None:
        return _dataset_items(dataset, limit, seed), str(dataset)
    from kbench.construct.data_root import find_data_dir

    root, why = find_data_dir()
    lama = root / "lama_trex" if root is not None else None
    if lama is None or not (lama / "relations.jsonl").is_file():
        raise UserError(f"kbench check: no LAMA T-REx facts to probe with ({why}); run `kbench data fetch` or give --dataset DIR")
    items = []
    for line in (lama / "relations.jsonl").read_text().splitlines():
        relation = json.loads(line)
        before = relation["template"].split("[Y]")[0]
        path = lama / "TREx" / f"{relation['relation']}.jsonl"
        if "[X]" not in before or not path.is_file():
            continue
        for n, fact_line in enumerate(path.read_text().splitlines()[:FACTS_PER_RELATION]):
            fact = json.loads(fact_line)
            prompt = before.replace("[X]", fact["sub_label"]).strip()
            items.append(ProbeItem(f"{relation['relation']}-{n}", prompt, " " + fact["obj_label"]))
    chosen = sorted(random.Random(seed).sample(range(len(items)), min(limit, len(items))))
    return [items[i] for i in chosen], str(lama)


def _dataset_items(dataset: Path, limit: int, seed: int) -> list[ProbeItem]:
    from kbench.dataset import open_split, resolve_dataset, seeded_sample

    split = open_split(resolve_dataset(dataset), "test", hint="kbench check --dataset")
    rows = [r for r in split.rows if r.get("prompt_cloze") and r.get("object")]
    if not rows:
        raise UserError(f"--dataset {dataset}: its test split has no rows with prompt_cloze and object to probe with")
    return [ProbeItem(str(r["id"]), r["prompt_cloze"], " " + r["object"]) for r in seeded_sample(rows, limit, seed)]
