"""XTEVAL's protocol block (kbench/tasks/xteval/protocol.py) and its acc_D / Gap 1 intervals
(kbench/metrics/clustered.py `extraction_estimates`): the paper's defaults give no entry, each
option exactly its own, and no interval is zero-width at acc_D = 0 or 1."""

import pytest

from kbench.tasks.xteval.pipeline import XtevalSettings
from kbench.tasks.xteval.protocol import xteval_protocol
from kbench.metrics.clustered import extraction_estimates
from kbench.metrics.uncertainty import wilson

PROBED_ALL = {"facts": 40, "unreadable": 0, "untrained": 0}
AUTOPROMPT = {"prompt_train_dir": "autoprompt-splits"}


def ids(settings: dict, kind: str = "causal", seeds: int | None = None, counts: dict = PROBED_ALL) -> list[str]:
    s = XtevalSettings(**settings)
    if seeds is None:
        seeds = 1 if (s.extraction == "discrete" or s.known_facts) else s.extraction_seeds
    return [d.id for d in xteval_protocol(s, kind, seeds, counts).deviations]


def test_the_paper_defaults_are_faithful_for_a_masked_lm_with_the_autoprompt_splits():
    block = xteval_protocol(XtevalSettings(**AUTOPROMPT), "masked", 3, PROBED_ALL).block()
    assert block["faithful"] is True and block["deviations"] == [] and block["name"] == "xteval"
    assert "Kazemnejad" in block["reference"]


def test_kbench_defaults_need_exactly_their_two_entries():
    # a causal LM at kbench's defaults: first-token criterion, soft prompts on the dataset's own splits
    assert ids({}) == ["softprompt-train-data", "first-token-criterion"]
    assert ids({}, kind="masked") == ["softprompt-train-data"]   # a masked LM reads its one mask, as the paper
    assert ids({**AUTOPROMPT, "top1": "full-answer"}) == []      # every token of the tail: the paper's criterion


@pytest.mark.parametrize(("option", "expected"), [
    ({"softprompt": {"epochs": 2}}, ["softprompt-epochs"]),
    ({"softprompt": {"lr": 3e-3}}, ["softprompt-lr"]),
    ({"softprompt": {"batch_size": 8}}, ["softprompt-batch-size"]),
    ({"softprompt": {"n_before": 1}}, ["softprompt-vectors"]),
    ({"softprompt": {"max_train_facts": 10}}, ["softprompt-train-cap"]),
    ({"finetune": {"epochs": 1}}, ["softprompt-epochs", "finetune-epochs"]),  # --epochs sets both (settings shorthand)
    ({"finetune": {"lr": 3e-5}}, ["finetune-lr"]),
    ({"finetune": {"batch_size": 8}}, ["finetune-batch-size"]),
    ({"finetune": {"negatives_per_type": 2}}, ["finetune-negatives-per-type"]),
    ({"distractors_per_type": 4}, ["distractors-per-type"]),
    ({"train_fraction": 0.5}, ["train-fraction"]),
    ({"limit": 12}, ["sample-limit"]),
    ({"split_seeds": 1}, ["split-seeds"]),
    ({"finetune_seeds": 2}, ["finetune-seeds"]),
    ({"extraction_seeds": 2}, ["extraction-seeds"]),
    ({"extraction_seeds": 1}, ["extraction-seeds", "acc-d-interval-facts-only"]),
    ({"extraction": "discrete"}, ["discrete-extraction", "acc-d-interval-facts-only"]),
    ({"known_facts": "known.parquet"}, ["known-facts-file", "acc-d-interval-facts-only"]),
])
def test_each_option_adds_exactly_its_entry(option, expected):
    base = {**AUTOPROMPT, "top1": "full-answer"}
    assert ids({**base, **option}) == expected


def test_facts_that_cannot_be_probed_are_counted_and_say_how_acc_d_treats_them():
    counts = {"facts": 40, "unreadable": 7, "untrained": 5}
    protocol = xteval_protocol(XtevalSettings(**AUTOPROMPT), "masked", 3, counts)
    unreadable, untrained = protocol.deviations
    assert (unreadable.id, untrained.id) == ("unreadable-tails", "relations-without-softprompt-data")
    assert "7 of 40 facts" in unreadable.kbench and "5 of 40 facts" in untrained.kbench
    assert all("acc_D = known / probed" in d.kbench for d in protocol.deviations)


@pytest.mark.parametrize("known", [True, False])
def test_one_seed_at_acc_d_1_or_0_has_a_wilson_interval_over_facts_only(known):
    acc_d, gap1 = extraction_estimates({0: {f"f{i}": known for i in range(20)}})
    assert acc_d["value"] == float(known) and gap1["value"] == 1 - float(known)
    assert (acc_d["ci_low"], acc_d["ci_high"]) == wilson(20 * known, 20)
    assert acc_d["ci_high"] - acc_d["ci_low"] > 0.1 and gap1["ci_high"] - gap1["ci_low"] > 0.1
    assert acc_d["n"] == 20 and acc_d["seeds"] == 1 and acc_d["covers"].startswith("facts only")
    block = xteval_protocol(XtevalSettings(extraction_seeds=1), "causal", 1, PROBED_ALL).block()
    facts_only = next(d for d in block["deviations"] if d["id"] == "acc-d-interval-facts-only")
    assert "Wilson intervals over the probed facts" in facts_only["kbench"]


def test_several_seeds_put_the_seed_spread_inside_the_interval():
    # facts known by some seeds only: the two-way bootstrap resamples facts and seeds
    known = {e: {f"f{i}": (i + e) % 3 != 0 for i in range(30)} for e in range(3)}
    acc_d, gap1 = extraction_estimates(known, seed=0)
    assert acc_d["value"] == pytest.approx(2 / 3) and acc_d["interval"] == "bootstrap" and acc_d["seeds"] == 3
    assert acc_d["covers"].startswith("facts and extraction seeds")
    assert acc_d["ci_low"] < acc_d["value"] < acc_d["ci_high"]
    assert gap1["ci_low"] == pytest.approx(1 - acc_d["ci_high"]) and extraction_estimates(known, seed=0) == (acc_d, gap1)
    # every seed knows every fact: nothing to resample, Wilson over the facts, still not [1, 1]
    agree, _ = extraction_estimates({e: {f"f{i}": True for i in range(30)} for e in range(3)})
    assert agree["interval"] == "wilson" and agree["ci_low"] < 1.0 == agree["ci_high"]


def test_distractors_fewer_than_fifty_are_recorded_with_their_minimum_and_median():
    from kbench.tasks.xteval.protocol import COUNTED_DISTRACTOR_TYPES

    s = XtevalSettings(**AUTOPROMPT)
    full = {doc_type: 50 for doc_type in COUNTED_DISTRACTOR_TYPES}
    assert xteval_protocol(s, "masked", 3, PROBED_ALL, [full, full]).faithful
    # a small D^theta: three queries got fewer (.,r,.) and true-unrelated documents than asked
    short = [{**full, "(.,r,.)": 3, "true-unrelated": 7}, {**full, "(.,r,.)": 5}, {k: v for k, v in full.items() if k != "(.,r,.)"}]
    protocol = xteval_protocol(s, "masked", 3, PROBED_ALL, short)
    assert [d.id for d in protocol.deviations] == ["distractors-available"]
    text = protocol.deviations[0].kbench
    assert "(.,r,.) 0 / 3" in text and "true-unrelated 7 / 50" in text and "(.,.,.) 50 / 50" in text and "3 test queries" in text
    # fewer than asked but the run asked for fewer than 50: distractors-per-type says it; a shortfall below that adds this
    few = XtevalSettings(**AUTOPROMPT, distractors_per_type=4)
    fours = {doc_type: 4 for doc_type in COUNTED_DISTRACTOR_TYPES}
    assert [d.id for d in xteval_protocol(few, "masked", 3, PROBED_ALL, [fours]).deviations] == ["distractors-per-type"]
    assert "distractors-available" in [d.id for d in xteval_protocol(few, "masked", 3, PROBED_ALL, [{**fours, "(h,.,.)": 2}]).deviations]


def test_a_tie_in_retrieval_is_an_interpretation_not_a_deviation():
    protocol = xteval_protocol(XtevalSettings(**AUTOPROMPT), "masked", 3, PROBED_ALL)
    assert protocol.faithful and [i.id for i in protocol.interpretations] == ["retrieval-ties"]
