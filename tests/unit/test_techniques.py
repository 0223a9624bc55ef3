"""Every KEE technique on a tiny random Llama: runs, is deterministic, and its intervention
really changes the next-token scores, while the model is bit-exactly unchanged afterwards."""

from __future__ import annotations

import pytest
import torch

from kbench.errors import UserError
from kbench.tasks.kee.techniques import get_technique, known_techniques
from kbench.tasks.kee.techniques.base import KeeContext, KeeItem, majority_vote
from kbench.tasks.kee.techniques.fitting import fitting_plan
from tests.fixtures_models import cached_model

ITEMS = [
    KeeItem("q1", "What is the capital of France?", ("Paris",), "P36"),
    KeeItem("q2", "What is the capital of Germany?", ("Berlin",), "P36"),
    KeeItem("q3", "What is the capital of Italy?", ("Rome",), "P36"),
    KeeItem("q4", "What is the capital of Spain?", ("Madrid",), "P36"),
    KeeItem("q5", "Where was Marie Curie born?", ("Warsaw",), "P19"),
    KeeItem("q6", "Where was Albert Einstein born?", ("Ulm",), "P19"),
    KeeItem("q7", "Where was Dante born?", ("Florence",), "P19"),
    KeeItem("q8", "Which country is Toyota from?", ("Japan",), "P17"),
]
FAST = {"recite": {"runs": 3, "recitation_tokens": 8}, "genread": {"document_tokens": 8}, "decore": {"trials": 2},
        # the random model's raw residual is ~0.2 long: without the final norm its in-context entropy is flat
        "activation_decoding": {"final_norm": True},
        "iti": {"heads": 4}}   # the tiny model has 16 heads, fewer than ITI's K = 48


def _context(tiny_causal, folder, cache=True):
    return KeeContext(model=cached_model(tiny_causal, folder / "cache.sqlite" if cache else None), fit_dir=folder / "fits")


def test_registry_lists_all_and_rejects_unknown():
    assert set(known_techniques()) == {"baseline", "temp0.7", "temp1.2", "recite", "genread", "caa", "iti",
                                       "decore", "activation_decoding"}
    with pytest.raises(UserError, match="known: activation_decoding, baseline, caa"):  # sorted, whatever was imported first
        get_technique("cot")
    assert get_technique("temp1.2").params()["temperature"] == 1.2


def _prompt_scores(tiny_causal):
    batch = tiny_causal.tokenizer([f"Question: {i.question}\nAnswer:" for i in ITEMS[:2]], return_tensors="pt", padding=True)
    with torch.no_grad():
        return tiny_causal.model(**batch).logits


@pytest.fixture(scope="module")
def baseline(tiny_causal, tmp_path_factory):
    return get_technique("baseline").run(_context(tiny_causal, tmp_path_factory.mktemp("base"), cache=False), ITEMS)


@pytest.mark.parametrize("name", ["baseline", "temp0.7", "recite", "genread", "caa", "iti", "decore",
                                  "activation_decoding"])
def test_technique_runs_is_deterministic_and_leaves_the_model_untouched(tiny_causal, baseline, tmp_path, name):
    before = _prompt_scores(tiny_causal)
    technique = get_technique(name, **FAST.get(name, {}))
    first = technique.run(_context(tiny_causal, tmp_path / "a"), ITEMS)
    again = technique.run(_context(tiny_causal, tmp_path / "b", cache=False), ITEMS)
    assert len(first) == len(ITEMS) and all(o.gold_rank >= 1 for o in first)
    assert [(o.answer, o.gold_rank) for o in first] == [(o.answer, o.gold_rank) for o in again]
    assert [o.gold_logprob for o in first] == pytest.approx([o.gold_logprob for o in again], abs=1e-4)
    if technique.family in ("steering", "decoding", "prompting"):
        # the intervention (or the changed prompt) really moves the gold token's score
        assert [o.gold_logprob for o in baseline] != pytest.approx([o.gold_logprob for o in first])
    assert torch.equal(_prompt_scores(tiny_causal), before)   # hooks removed, model bit-exactly as before


def test_fitted_artefacts_are_reused_on_resume(tiny_causal, tmp_path):
    technique = get_technique("caa")
    technique.run(_context(tiny_causal, tmp_path), ITEMS)
    files = sorted(p.name for p in (tmp_path / "fits").iterdir())
    assert len(files) == 2 and all(f.endswith(".safetensors") for f in files)   # one per fold
    stamps = [p.stat().st_mtime_ns for p in sorted((tmp_path / "fits").iterdir())]
    technique.run(_context(tiny_causal, tmp_path), ITEMS)
    assert [p.stat().st_mtime_ns for p in sorted((tmp_path / "fits").iterdir())] == stamps


def test_two_folds_never_fit_on_the_answered_item(tiny_causal, tmp_path):
    plan = fitting_plan(_context(tiny_causal, tmp_path, cache=False), ITEMS)
    assert sorted(i.id for _, answered in plan for i in answered) == sorted(i.id for i in ITEMS)
    for pool, answered in plan:
        assert not {i.id for i in pool} & {i.id for i in answered}


def test_majority_vote_is_deterministic_on_ties():
    assert majority_vote(["Rome", "paris", "Paris ", "rome"]) == "Rome"
    assert majority_vote(["Ulm", "Bonn", "bonn"]) == "Bonn"
    assert majority_vote([]) == ""
