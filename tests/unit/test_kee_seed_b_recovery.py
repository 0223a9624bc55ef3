"""SGR / DGR of the temperature baselines on a tiny real model: K new seed-B samples (MAPLE's draw)
decide recovery under kbench's reading (any of the K correct; MAPLE does not say), not the
10-sample majority vote; every reading (any of K, majority of K, one sample) is recomputed from
the samples stored in items.jsonl. The golds are picked from the model's own samples so that, on
some items, the vote misses the gold while a later sample reaches it."""

from __future__ import annotations

import json

import polars as pl
import pytest

import kbench
from kbench.tasks.kee.techniques.base import ANSWER_STOP, MAX_ANSWER_TOKENS, KeeContext, clean_answer, majority_vote, use_chat
from kbench.metrics.matching import maple_correct, normalize_for_matching
from tests.fixtures_models import cached_model, tiny_causal, tiny_causal_dir  # noqa: F401
from tests.question_rows import question_row

K = 12  # more than the vote's 10 samples: samples past the vote count too
QUESTIONS = ["What is the capital of France?", "Where was Marie Curie born?", "Which country is Toyota from?",
             "What is the capital of Italy?", "Where was Dante born?", "What language did Goethe write in?",
             "Who founded Microsoft?", "What is the capital of Spain?"]
UNREACHED = "qqqqzzzzxxxx"  # no sample of a random 400-token model spells it


def _gold_reached_only_outside_the_vote(samples: list[str], greedy: str) -> str | None:
    """A 4-character piece of a seed-B sample that neither the greedy answer nor the vote contains."""
    vote = normalize_for_matching(majority_vote(samples[:10]))
    for text in samples[:K]:
        norm = normalize_for_matching(text)
        for start in range(len(norm) - 3):
            piece = norm[start : start + 4]
            if piece not in vote and piece not in normalize_for_matching(greedy):
                return piece
    return None


@pytest.fixture(scope="module")
def runs(tiny_causal, tmp_path_factory):  # noqa: F811
    root = tmp_path_factory.mktemp("seed-b")
    model = cached_model(tiny_causal, root / "cache.sqlite")
    context = KeeContext(model=model, fit_dir=root / "fits", chat=use_chat(model.info, "auto"))
    prompts = [context.answer_prompt(q) for q in QUESTIONS]
    greedy = [clean_answer(t) for t in model.generate(prompts, MAX_ANSWER_TOKENS, ANSWER_STOP)]
    drawn = model.sample(prompts, k=K, temperature=0.7, seed=0, max_new_tokens=MAX_ANSWER_TOKENS, stop=ANSWER_STOP)
    golds = []
    for n, (texts, answer) in enumerate(zip(drawn, greedy)):
        piece = _gold_reached_only_outside_the_vote([clean_answer(t) for t in texts], answer)
        golds.append(piece if piece and n % 4 else UNREACHED)  # every fourth item: reached by no sample
    rows = [question_row(id=f"q{n}", question=q, object=g, answers=[g], frequency_bin="head") for n, (q, g) in
            enumerate(zip(QUESTIONS, golds))]
    (root / "dataset" / "data" / "default").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(root / "dataset" / "data" / "default" / "test.parquet")
    settings = {"techniques": ("baseline", "temp0.7"), "k": K, "sweep_max": K, "temperatures": (0.7,)}
    out = {}
    for recovery in ("seed-b", "majority-vote"):
        result = kbench.evaluate("kee", dataset=root / "dataset", model=model, out=root / recovery, sgr_recovery=recovery,
                                 **settings)
        items = [json.loads(line) for line in (root / recovery / "items.jsonl").read_text().splitlines()]
        out[recovery] = (result.results, {(r["technique"], r["item_id"]): r for r in items})
    return out


def _recount(items: dict, reached) -> dict[str, tuple[int, int]]:
    """{"sgr" | "dgr": (recovered, failures)} recomputed from the stored rows; `reached(row)`
    says whether temp0.7 recovers the item."""
    counts = {"sgr": [0, 0], "dgr": [0, 0]}
    for (technique, item_id), base in items.items():
        if technique != "baseline" or base["correct"]:
            continue
        partition = json.loads(items[("partition@0.7", item_id)]["detail"])["samples"][:K]
        rate = "sgr" if any(maple_correct(s, base["answers"]) for s in partition) else "dgr"
        counts[rate][0] += reached(items[("temp0.7", item_id)])
        counts[rate][1] += 1
    return {rate: tuple(c) for rate, c in counts.items()}


def _within_k(row) -> bool:
    return any(maple_correct(s, row["answers"]) for s in json.loads(row["detail"])["samples"][:K])


def _rates(results) -> dict[str, tuple[int, int]]:
    got = results["metrics"]["per_technique"]["temp0.7"]["beyond_sampling"]["0.7"]
    return {rate: (got[rate]["k"], got[rate]["n"]) for rate in ("sgr", "dgr")}


def test_sgr_dgr_count_items_reached_within_k_seed_b_samples(runs):
    results, items = runs["seed-b"]
    temp = [r for (t, _), r in items.items() if t == "temp0.7"]
    assert all(len(json.loads(r["detail"])["samples"]) == K and len(r["sample_correct"]) == K for r in temp)
    disagree = [r for r in temp if _within_k(r) and not r["correct"]]
    assert len(disagree) >= 2, "the fixture needs items whose vote misses a gold that a seed-B sample reaches"
    assert _rates(results) == _recount(items, _within_k)
    assert _recount(items, _within_k) != _recount(items, lambda row: row["correct"])   # the vote would count otherwise
    # Gain keeps the majority vote, as MAPLE
    failures = [i for (t, i), r in items.items() if t == "baseline" and not r["correct"]]
    gain = results["metrics"]["per_technique"]["temp0.7"]["gain"]
    assert (gain["k"], gain["n"]) == (sum(items[("temp0.7", i)]["correct"] for i in failures), len(failures))
    assert "sgr-majority-vote" not in [d["id"] for d in results["protocol"]["deviations"]]


def test_majority_vote_option_reads_the_vote_and_is_recorded(runs):
    results, items = runs["majority-vote"]
    assert _rates(results) == _recount(items, lambda row: row["correct"])
    assert all(r["sample_correct"] is None for (t, _), r in items.items() if t == "temp0.7")
    seed_b = {d["id"] for d in runs["seed-b"][0]["protocol"]["deviations"]}
    vote = {d["id"] for d in results["protocol"]["deviations"]}
    assert vote - seed_b == {"sgr-majority-vote"} and seed_b <= vote
    # the vote itself is the same either way: the first 10 of the same seed-B draw
    assert results["metrics"]["per_technique"]["temp0.7"]["gain"] == runs["seed-b"][0]["metrics"]["per_technique"]["temp0.7"]["gain"]


def test_sgr_dgr_under_each_reading_recomputed_from_the_stored_samples(runs):
    results, items = runs["seed-b"]
    readings = {
        "any-of-k": any,
        "majority-of-k": lambda flags: 2 * sum(flags) > K,
        "one-sample": lambda flags: flags[0],
    }
    got = results["metrics"]["per_technique"]["temp0.7"]["beyond_sampling"]["0.7"]["readings"]
    for reading, rule in readings.items():
        expected = _recount(items, lambda row: rule(row["sample_correct"][:K]))
        assert {rate: (got[reading][rate]["k"], got[reading][rate]["n"]) for rate in ("sgr", "dgr")} == expected, reading
    assert got["any-of-k"] == {rate: results["metrics"]["per_technique"]["temp0.7"]["beyond_sampling"]["0.7"][rate]
                               for rate in ("sgr", "dgr")}
    # the majority vote option keeps no seed-B samples: no readings to compute
    assert "readings" not in runs["majority-vote"][0]["metrics"]["per_technique"]["temp0.7"]["beyond_sampling"]["0.7"]


def test_temperature_methods_have_no_prs(runs):
    results, _ = runs["seed-b"]
    prs = results["metrics"]["per_technique"]["temp0.7"]["prs"]
    assert prs["n"] == 0 and prs["tied"]["value"] is None and "baseline's" in prs["undefined"]


def test_a_run_with_tau_carries_the_recovery_rule_as_an_interpretation(runs):
    results, _ = runs["seed-b"]
    protocol = results["protocol"]
    assert protocol["schema"] == "kbench.protocol.v2"
    rule = next(i for i in protocol["interpretations"] if i["id"] == "sgr-recovery-rule")
    assert "any of the first K" in rule["kbench"] and "not said" in rule["paper"]
    assert [a.split(":")[0] for a in rule["alternatives"]] == ["majority of K", "one sample"]
    assert "temp0.7" in rule["effect"] and "readings" in rule["effect"]
    # kept apart from the deviations: no deviation carries the rule
    assert "sgr-recovery-rule" not in [d["id"] for d in protocol["deviations"]]
    # and the readings are there to compare, overall and per frequency bin
    assert set(results["metrics"]["per_frequency_bin"]["head"]["temp0.7"]["beyond_sampling"]["0.7"]["readings"]) == {
        "any-of-k", "majority-of-k", "one-sample"}
    # the comparison report shows them side by side
    from kbench.tasks.kee.report import comparison_tables

    markdown, _ = comparison_tables(results)
    assert '## SGR / DGR under each reading of "recovered"' in markdown and "`sgr-recovery-rule`" in markdown
