"""The KEE run's protocol block (`maple-kee`): MAPLE's defaults give no entry (RECITE and DeCoRe
always give one each), each option that departs from MAPLE gives exactly its own, MAPLE's silences
are interpretations listed apart, and ITI's probes count as TruthfulQA only when the
file is TruthfulQA (its fetched sha256 or its 817 questions)."""

from __future__ import annotations

import csv
import hashlib
import io
from pathlib import Path

import pytest

from kbench.tasks.kee.task import ALL_TECHNIQUES, KeeSettings, run_protocol
from kbench.tasks.kee.techniques.truthfulqa import COLUMNS, not_truthfulqa, read_probing_set
from kbench.io import write_json
from kbench.sources.catalog import TRUTHFULQA_CSV

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "truthfulqa" / "TruthfulQA.csv"
# what a run at MAPLE's settings fits: ITI on TruthfulQA (48 heads), CAA's layer chosen on held-out items
# of two folds of MAPLE's 3,254 facts
FAITHFUL_FITS = {"iti": [{"probe_source": "truthfulqa", "not_truthfulqa": None, "heads_used": 48}],
                 "caa": [{"pool": 1627, "select": 325, "layer": 3}, {"pool": 1627, "select": 325, "layer": 2}]}
# MAPLE's techniques whose defaults follow it exactly (RECITE and DeCoRe fill gaps in the paper, below)
FOLLOWING = ("baseline", "temp0.7", "temp1.2", "genread", "caa", "iti", "activation_decoding")


def ids(chat=True, pool=None, fitted=FAITHFUL_FITS, **settings) -> list[str]:
    protocol, _ = run_protocol(KeeSettings(**settings), chat, pool, fitted)
    assert protocol.faithful == (not protocol.deviations)
    return [d.id for d in protocol.deviations]


def test_maple_defaults_are_faithful():
    protocol, per_technique = run_protocol(KeeSettings(techniques=FOLLOWING), True, None, FAITHFUL_FITS)
    block = protocol.block()
    assert block["faithful"] is True and block["deviations"] == [] and block["name"] == "maple-kee"
    assert "MAPLE" in block["reference"] and all(v == [] for v in per_technique.values())


def test_defaults_that_necessarily_deviate_say_so():
    # all nine techniques: RECITE's 20 runs must differ somehow (sampled recitations), DeCoRe's
    # retrieval heads come from a synthetic copy task
    assert ids(techniques=ALL_TECHNIQUES) == ["recite-sampled-recitations", "decore-synthetic-retrieval-heads"]
    # no TruthfulQA in the data root: ITI's probes train on the benchmark
    benchmark_probes = {**FAITHFUL_FITS, "iti": [{"probe_source": "benchmark train facts", "heads_used": 48}]}
    assert ids(techniques=FOLLOWING, fitted=benchmark_probes) == ["iti-probes-benchmark"]
    # a base model without a chat template
    assert ids(techniques=FOLLOWING, chat=False) == ["prompt-question-form"]


@pytest.mark.parametrize(("settings", "expected"), [
    ({"sgr_recovery": "majority-vote"}, "sgr-majority-vote"),
    ({"k": 10}, "partition-k"),
    ({"sweep_max": 25}, "sweep-max"),
    ({"temperatures": (0.7,)}, "partition-temperatures"),
    ({"top_k": 40}, "sampling-truncation"),
    ({"top_p": 0.9}, "sampling-truncation"),
    ({"prompt": "question"}, "prompt-question-form"),
    ({"technique_params": {"temp0.7": {"votes": 5}}}, "temp0.7-votes"),
    ({"technique_params": {"temp1.2": {"seed": 3}}}, "temp1.2-seed-b"),
    ({"technique_params": {"temp1.2": {"top_k": 5}}}, "sampling-truncation"),
    ({"technique_params": {"caa": {"multiplier": 2}}}, "caa-multiplier"),
    ({"technique_params": {"caa": {"held_out": 0.3}}}, "caa-layer-selection-share"),
    ({"technique_params": {"caa": {"select_limit": 4}}}, "caa-layer-selection-share"),
    ({"technique_params": {"iti": {"alpha": 10}}}, "iti-alpha"),
    ({"technique_params": {"activation_decoding": {"alpha": 1.0}}}, "activation-decoding-alpha"),
    ({"technique_params": {"activation_decoding": {"final_norm": True}}}, "activation-decoding-final-norm"),
])
def test_each_deviating_option_adds_exactly_its_entry(settings, expected):
    assert ids(techniques=FOLLOWING, chat=settings.get("prompt") != "question", **settings) == [expected]


@pytest.mark.parametrize(("technique", "settings", "expected"), [
    ("recite", {"recite_runs": 5}, "recite-runs"),
    ("decore", {"technique_params": {"decore": {"retrieval_heads": 3}}}, "decore-retrieval-heads"),
    ("decore", {"technique_params": {"decore": {"alpha_cap": 1.0}}}, "decore-alpha-cap"),
])
def test_options_of_techniques_that_always_deviate(technique, settings, expected):
    baseline = ids(techniques=(technique,))
    assert ids(techniques=(technique,), **settings) == [*baseline, expected]


def test_what_the_fits_found_adds_its_entry():
    fewer_heads = {**FAITHFUL_FITS, "iti": [{"probe_source": "truthfulqa", "not_truthfulqa": None, "heads_used": 4}]}
    assert ids(techniques=FOLLOWING, fitted=fewer_heads, technique_params={"iti": {"heads": 4}}) == ["iti-heads"]
    no_held_out = {**FAITHFUL_FITS, "caa": [{"pool": 1627, "select": 0, "layer": 0}, {"pool": 1627, "select": 0, "layer": 1}]}
    assert ids(techniques=FOLLOWING, fitted=no_held_out) == ["caa-layer-not-selected"]
    # CAA fitted on a train split instead of two folds; a fit-pool limit that cut it adds its own entry
    assert ids(techniques=FOLLOWING, pool=("train", 5000, 3254)) == ["fit-pool-split"]
    assert ids(techniques=FOLLOWING, pool=("train", 5000, 100), fit_pool_limit=100) == ["fit-pool-split", "fit-pool-limit"]
    assert ids(techniques=("baseline", "temp0.7"), pool=("train", 5000, 100), fit_pool_limit=100) == []  # nothing fits on it


def test_caa_folds_of_the_evaluated_items_and_a_small_split_are_recorded():
    # no train split at --limit 8: the folds are the evaluated items themselves, 4 facts each
    small_folds = {**FAITHFUL_FITS, "caa": [{"pool": 4, "select": 1, "layer": 3}, {"pool": 4, "select": 1, "layer": 2}]}
    protocol, _ = run_protocol(KeeSettings(techniques=FOLLOWING), True, None, small_folds)
    folds = next(d for d in protocol.deviations if d.id == "fit-pool-folds")
    assert "8 evaluated items themselves (4 and 4 facts)" in folds.kbench and "3254" in folds.paper
    # a train split smaller than MAPLE's pool, used whole: the limit did not cut it, but it is not 3,254 facts
    assert ids(techniques=FOLLOWING, pool=("train", 120, 120)) == ["fit-pool-split", "fit-pool-limit"]
    limit = run_protocol(KeeSettings(techniques=FOLLOWING), True, ("train", 120, 120), FAITHFUL_FITS)[0].deviations[1]
    assert limit.kbench == "120 of the train split's 120 items (the whole split, smaller than MAPLE's pool)"


def test_interpretations_are_listed_apart_and_keep_a_run_faithful():
    protocol, _ = run_protocol(KeeSettings(techniques=FOLLOWING), True, None, FAITHFUL_FITS)
    assert protocol.faithful and protocol.block()["faithful"] is True
    readings = {i.id: i for i in protocol.interpretations}
    assert list(readings) == ["sgr-recovery-rule", "matching-case", "vote-grouping", "prs-gold-token"]
    rule = readings["sgr-recovery-rule"]
    assert "any of the first K" in rule.kbench and "MAPLE-21, 22 and 24" in rule.effect
    assert [a.split(":")[0] for a in rule.alternatives] == ["majority of K", "one sample"]
    assert readings["matching-case"].kbench.startswith("case-insensitive")
    # --case-sensitive is the other reading, not a departure
    sensitive, _ = run_protocol(KeeSettings(techniques=FOLLOWING, case_sensitive=True), True, None, FAITHFUL_FITS)
    assert sensitive.faithful and "--case-sensitive" in {i.id: i for i in sensitive.interpretations}["matching-case"].kbench
    # the vote option is a deviation, and the recovery rule then has no reading to record
    vote, _ = run_protocol(KeeSettings(techniques=FOLLOWING, sgr_recovery="majority-vote"), True, None, FAITHFUL_FITS)
    assert "sgr-recovery-rule" not in [i.id for i in vote.interpretations]
    # without a temperature method there is no recovery rule or vote to read
    alone, _ = run_protocol(KeeSettings(techniques=("caa",)), True, None, FAITHFUL_FITS)
    assert [i.id for i in alone.interpretations] == ["matching-case", "prs-gold-token"]


def test_the_module_docstring_names_what_maple_defaults_emit():
    import kbench.tasks.kee.protocol as module

    always = ids(techniques=ALL_TECHNIQUES)
    assert always == ["recite-sampled-recitations", "decore-synthetic-retrieval-heads"]
    assert all(f"`{i}`" in module.__doc__ for i in always) and "give none for the baseline" in module.__doc__


def test_the_truthfulqa_fixture_is_never_truthfulqa(tmp_path, monkeypatch):
    monkeypatch.setenv("KBENCH_DATA_DIR", str(tmp_path))
    fixture = read_probing_set(FIXTURE)
    reason = not_truthfulqa(fixture)
    assert reason is not None and "6 questions" in reason and "817" in reason
    fitted = {**FAITHFUL_FITS, "iti": [{"probe_source": "truthfulqa", "not_truthfulqa": reason, "heads_used": 48}]}
    protocol, _ = run_protocol(KeeSettings(techniques=FOLLOWING), True, None, fitted)
    assert not protocol.faithful and [d.id for d in protocol.deviations] == ["iti-probes-not-truthfulqa"]
    assert "6 questions" in protocol.deviations[0].kbench


def test_a_file_is_truthfulqa_by_its_817_questions_or_its_fetched_sha256(tmp_path, monkeypatch):
    monkeypatch.setenv("KBENCH_DATA_DIR", str(tmp_path))
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for n in range(817):
        writer.writerow(["Adversarial", "Misc", f"Question {n}?", "Yes", "Yes; Indeed", "No", "src"])
    full = tmp_path / "full.csv"
    full.write_text(out.getvalue(), encoding="utf-8")
    assert not_truthfulqa(read_probing_set(full)) is None
    # the fixture's bytes, recorded by `kbench data fetch truthfulqa` as the pinned file's: accepted
    write_json(tmp_path / "kbench-data.lock", {"kbench_data_lock": 1, "files": {
        TRUTHFULQA_CSV: {"sha256": hashlib.sha256(FIXTURE.read_bytes()).hexdigest(), "size": FIXTURE.stat().st_size}}})
    assert not_truthfulqa(read_probing_set(FIXTURE)) is None


def test_seed_b_samples_follow_the_sweep_not_a_technique_parameter():
    from kbench.errors import UserError

    with pytest.raises(UserError, match="recovery_samples follows --sweep-max"):
        ids(techniques=FOLLOWING, technique_params={"temp0.7": {"recovery_samples": 5}})
