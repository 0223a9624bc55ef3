"""XTEVAL step 1 on tiny random models: what top-1 reads, discrete probes against the runner's
first-token ranks (an independent implementation), the single-token filter of masked LMs, and
the paper's statistics over seeds."""

import math

import pytest
import torch

from kbench.tasks.xteval.aggregate import aggregate_setting
from kbench.tasks.xteval.extraction import discrete_known
from kbench.tasks.xteval.gaps import gap_figures
from kbench.models.loading import load_model
from kbench.models.runner import ModelRunner
from kbench.models.training import Trainer
from kbench.models.training.probes import answer_targets, prompt_probes, run_probes

FACTS = [("Paris", "is the capital of", "France"), ("Berlin", "is the capital of", "Germany"),
         ("Rome", "is the capital of", "Italy"), ("Marie Curie", "was born in", "Warsaw"),
         ("Albert Einstein", "was born in", "Ulm"), ("Toyota", "is a company from", "Japan"),
         ("Nokia", "is a company from", "Finland"), ("Dante", "was born in", "Florence")]


def _rows() -> list[dict]:
    return [{"id": f"f{i}", "relation": rel, "subject": head, "object": tail,
             "prompt_cloze": f"{head} {rel}", "prompt_masked": f"{head} {rel} [MASK] ."}
            for i, (head, rel, tail) in enumerate(FACTS)]


def test_gold_is_the_tail_after_a_space_and_the_criterion_picks_its_tokens(tiny_causal_dir, tiny_masked_dir):
    bpe = load_model(str(tiny_causal_dir)).tokenizer          # byte-level BPE, as GPT-2 / RoBERTa / ModernBERT
    wordpiece = load_model(str(tiny_masked_dir)).tokenizer    # BERT
    # A masked LM with a byte-level BPE predicts "ĠFrance" at the mask, not the bare "France".
    assert bpe.convert_ids_to_tokens(answer_targets(bpe, "masked", "France")) == ["ĠFrance"]
    assert wordpiece.convert_ids_to_tokens(answer_targets(wordpiece, "masked", "France")) == ["France"]
    italy = bpe(" Italy", add_special_tokens=False)["input_ids"]
    assert len(italy) == 2
    assert answer_targets(bpe, "causal", "Italy") == italy[:1]                    # first-token (the default)
    assert answer_targets(bpe, "causal", "Italy", "full-answer") == italy
    assert answer_targets(bpe, "masked", "Italy") is None                        # not one token: leaves D
    assert answer_targets(wordpiece, "masked", "Paris Berlin") is None


@pytest.mark.parametrize("fixture", ["tiny_causal_dir", "tiny_masked_dir"])
def test_discrete_probes_agree_with_the_runners_first_token_rank(fixture, request):
    loaded = load_model(str(request.getfixturevalue(fixture)))
    kind = loaded.kind
    rows = _rows()
    if kind == "masked":
        rows = [r for r in rows if answer_targets(loaded.tokenizer, kind, r["object"]) is not None]
    prompts = [r["prompt_masked" if kind == "masked" else "prompt_cloze"] for r in rows]
    targets = [answer_targets(loaded.tokenizer, kind, r["object"]) for r in rows]
    with torch.no_grad():
        loss, hit = run_probes(loaded.model, prompt_probes(loaded.tokenizer, kind, prompts, targets),
                               loaded.tokenizer.pad_token_id)
    golds = [r["object"] if kind == "masked" else " " + r["object"] for r in rows]
    ranked = ModelRunner(loaded).rank_first_token(prompts, golds)
    assert [-float(x) for x in loss] == pytest.approx([lp for _, lp in ranked], abs=1e-4)
    assert hit.tolist() == [rank == 1 for rank, _ in ranked]
    extraction = discrete_known(Trainer(loaded), rows, "first-token")
    assert extraction.known == [r["id"] for r, h in zip(rows, hit.tolist()) if h] and extraction.unreadable == []


def test_full_answer_is_stricter_than_first_token(tiny_causal_dir):
    loaded = load_model(str(tiny_causal_dir))
    rows = _rows()
    # full-answer reads every gold token, starting with the one first-token reads.
    first = prompt_probes(loaded.tokenizer, "causal", [r["prompt_cloze"] for r in rows],
                          [answer_targets(loaded.tokenizer, "causal", r["object"]) for r in rows])
    full = prompt_probes(loaded.tokenizer, "causal", [r["prompt_cloze"] for r in rows],
                         [answer_targets(loaded.tokenizer, "causal", r["object"], "full-answer") for r in rows])
    for a, b in zip(first, full):
        assert b.logit_positions[0] == a.logit_positions[0] and b.target_ids[0] == a.target_ids[0]
    assert any(len(b.target_ids) > 1 for b in full)
    known_first = set(discrete_known(Trainer(loaded), rows, "first-token").known)
    assert set(discrete_known(Trainer(loaded), rows, "full-answer").known) <= known_first


def test_masked_facts_with_multi_token_tails_are_not_probed(tiny_masked_dir):
    loaded = load_model(str(tiny_masked_dir))
    rows = _rows() + [{"id": "multi", "relation": "was born in", "subject": "Dante", "object": "Paris Berlin",
                                "prompt_cloze": "Dante was born in", "prompt_masked": "Dante was born in [MASK] ."}]
    extraction = discrete_known(Trainer(loaded), rows, "first-token")
    assert extraction.unreadable == ["multi"] and "multi" not in extraction.known


def _run(e: int, s: int, acc_d: float, downstream: float) -> dict:
    return {"extraction_seed": e, "split_seed": s, "finetune_seed": 0, **gap_figures(acc_d, downstream),
            "chance_accuracy": 0.01}


def test_acc_d_std_is_over_extraction_seeds_and_downstream_std_over_runs():
    # Two extraction seeds (acc_D 0.2 and 0.4), three split seeds each.
    downstream = {0: [0.5, 0.6, 0.7], 1: [0.3, 0.3, 0.6]}
    runs = [_run(e, s, [0.2, 0.4][e], downstream[e][s]) for e in (0, 1) for s in range(3)]
    agg = aggregate_setting(runs)
    assert agg["acc_D"]["values"] == [0.2, 0.4] and agg["acc_D"]["n"] == 2
    assert agg["acc_D"]["std"] == pytest.approx(math.sqrt(0.02))       # sample std of {0.2, 0.4}, not of 6 copies
    assert agg["acc_D"]["std_over"] == "extraction seeds" and agg["gap1"]["std_over"] == "extraction seeds"
    assert agg["gap1"]["mean"] == pytest.approx(0.7) and agg["gap1"]["std"] == pytest.approx(math.sqrt(0.02))
    values = downstream[0] + downstream[1]
    mean = sum(values) / 6
    assert agg["downstream_accuracy"]["n"] == 6 and agg["downstream_accuracy"]["mean"] == pytest.approx(mean)
    assert agg["downstream_accuracy"]["std"] == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in values) / 5))
    assert agg["downstream_accuracy"]["std_over"].startswith("runs")
    total = agg["usable_knowledge"]["mean"] + agg["gap1"]["mean"] + agg["gap2"]["mean"]
    assert total == pytest.approx(1.0)                                  # the stacked bars still add to 1
    assert agg["chance_accuracy"]["mean"] == pytest.approx(0.01)


def test_relations_without_soft_prompt_data_leave_d(tiny_causal_dir, tmp_path):
    from kbench.tasks.xteval.extraction import soft_known
    from kbench.tasks.xteval.training.softprompt import SoftPromptConfig

    loaded = load_model(str(tiny_causal_dir))
    rows = _rows()
    trained = "is the capital of"

    def pairs(relation):   # only one relation has train/dev facts (like T-REx vs Google-RE)
        return ([("Madrid", "Spain"), ("Paris", "France")], [("Madrid", "Spain")]) if relation == trained else ([], [])

    extraction = soft_known(Trainer(loaded), rows, pairs, tmp_path, SoftPromptConfig(epochs=1), 0, "first-token")
    assert sorted(extraction.untrained) == sorted(r["id"] for r in rows if r["relation"] != trained)
    assert not set(extraction.known) & set(extraction.untrained) and extraction.unreadable == []
    assert [p.stem for p in tmp_path.glob("*.safetensors")] == [trained]
