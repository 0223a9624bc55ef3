"""MAPLE's claims as encoded (issue #38), each on a constructed suite whose counts are chosen:
- MAPLE-15: temperature sampling has no PRS (its rank is the baseline's: Tied 1.0 by
  construction), so ITI's Tied share is compared with the other techniques only, in runs that
  record τ's PRS as undefined and in older runs that still carry a computed one;
- MAPLE-21 ("comparably to or lag behind"): a non-superiority claim, which MAPLE's own example
  (AD's SGR 5.96 % against τ1.2's 16.06 %) supports, in both parts (SGR and DGR);
- family scopes: MAPLE-4 / 9 / 22 are about Llama3, MAPLE-10 / 21 about OLMo2 and Qwen2.5, MAPLE-5
  about OLMo2 and Qwen2.5-32B, MAPLE-6 excludes Qwen2.5-7B; a model outside gets no verdict;
- MAPLE-11: CAA's Gain and Loss on Qwen2.5 against every other model's;
- MAPLE-12: ITI's Gain inside the paper's 1.21–4.91 %."""

from __future__ import annotations

import json
from pathlib import Path

from kbench.claims.verdicts import test_suite as claims_of_suite
from kbench.metrics.uncertainty import proportion
from tests.integration.test_claims_papers import write_run

MODELS = {  # label -> the model spec the paper's suite names
    "llama3-8b": "meta-llama/Meta-Llama-3-8B-Instruct",
    "olmo2-7b": "allenai/OLMo-2-1124-7B-Instruct",
    "qwen2.5-7b": "Qwen/Qwen2.5-7B-Instruct",
    "qwen2.5-32b": "Qwen/Qwen2.5-32B-Instruct",
}
TEMPERATURE = {"temp0.7": {"temperature": 0.7, "votes": 10}, "temp1.2": {"temperature": 1.2, "votes": 10}}


def prs(tied: int, n: int = 400) -> dict:
    moved = n - tied
    return {
        "n": n,
        "tied": proportion(tied, n),
        "improved": proportion(moved // 2, n),
        "worsened": proportion(moved - moved // 2, n),
    }


def kee_metrics(undefined_prs: bool = False, caa: tuple[int, int] = (100, 500)) -> dict:
    """ITI's Tied share (0.325) is the largest but for τ's (1.0); AD's SGR 30/503 (5.96 %) against
    τ1.2's 81/504 (16.07 %), its DGR 0/500 against τ's 2/480 (0.42 %)."""
    table = {"baseline": {"accuracy": proportion(500, 1000)}}
    for name, tied in (("decore", 40), ("activation_decoding", 40), ("caa", 40), ("iti", 130), ("recite", 20), ("genread", 20)):
        table[name] = {"gain": proportion(100, 500), "loss": proportion(20, 500), "prs": prs(tied)}
    table["caa"]["gain"], table["caa"]["loss"] = proportion(*caa), proportion(caa[0] // 5, caa[1])
    table["iti"]["gain"] = proportion(15, 500)  # 3 %: inside 1.21–4.91 %
    for name in TEMPERATURE:
        table[name] = {"gain": proportion(100, 500), "loss": proportion(20, 500)}
        table[name]["prs"] = {"n": 0, "undefined": "rank read on the baseline prompt"} if undefined_prs else prs(400)
    for name in ("decore", "activation_decoding", "caa"):
        table[name]["beyond_sampling"] = {"1.2": {"sgr": proportion(30, 503), "dgr": proportion(0, 480)}}
    for name in TEMPERATURE:
        table[name]["beyond_sampling"] = {"1.2": {"sgr": proportion(81, 504), "dgr": proportion(2, 480)}}
    return {"per_technique": table, "technique_params": {**TEMPERATURE, "iti": {"heads": 48, "alpha": 15.0}}}


def suite(root: Path, metrics: dict[str, dict]) -> Path:
    cells = {}
    for model, found in metrics.items():
        key = f"{model}__kee__data"
        write_run(root / "cells" / key, "kee", model, found)
        cells[key] = {"model": model, "task": "kee", "dataset": "data", "status": "done", "run_dir": f"cells/{key}"}
    document = {
        "schema": "kbench.suite.v1",
        "suite": {"suite": {"name": "maple"}, "tasks": [{"task": "kee", "name": "kee"}]},
        "cells": cells,
        "models": {m: {"model": MODELS.get(m, f"org/{m}")} for m in metrics},
    }
    (root / "suite.json").write_text(json.dumps(document))
    return root


def verdicts(folder: Path) -> dict[str, dict]:
    [(_, results)] = claims_of_suite(folder, ["maple"])
    return {r.claim.label: r for r in results}


def test_maple_15_leaves_temperature_sampling_out_of_the_prs_comparison(tmp_path):
    for undefined in (False, True):  # an older run with τ's computed PRS (Tied 1.0), a run recording it undefined
        found = verdicts(suite(tmp_path / str(undefined), {"llama3-8b": kee_metrics(undefined)}))
        [test] = found["MAPLE-15"].cells
        assert test.verdict == "supported", test.result["test"]  # before: iti − temp0.7 = −0.675, contradicted
        assert "iti − " in test.result["test"] and "temp" not in test.result["test"]
        assert abs(test.result["estimate"]["value"] - (0.325 - 0.1)) < 1e-9  # ITI against the largest other Tied share
        [level] = found["MAPLE-25 (PRS)"].cells
        assert "over 6 techniques" in level.result["test"]  # τ left out of the level agreement too


def test_maple_21_no_better_than_temperature_is_supported_by_a_significant_drop(tmp_path):
    found = verdicts(suite(tmp_path, {"olmo2-7b": kee_metrics()}))
    [sgr], [dgr] = found["MAPLE-21 (sgr)"].cells, found["MAPLE-21 (dgr)"].cells
    assert sgr.verdict == "supported" and sgr.result["estimate"]["ci_high"] < 0  # before: an equivalence, contradicted
    assert "activation_decoding − temp" in sgr.result["test"] or "decore − temp" in sgr.result["test"]
    assert dgr.verdict == "supported"  # 0/480 against 2/480: the upper bound lies below +0.05
    assert found["MAPLE-21 (sgr)"].claim.direction == "not_greater" and sgr.p_holm is None  # outside Holm


def test_family_claims_test_only_their_families(tmp_path):
    found = verdicts(suite(tmp_path, {m: kee_metrics() for m in MODELS}))
    tested = {label: sorted(t.model for t in r.cells) for label, r in found.items()}
    outside = {label: sorted(m for m, _ in r.outside) for label, r in found.items()}
    for label in ("MAPLE-4", "MAPLE-9 (gain)", "MAPLE-9 (loss)", "MAPLE-22"):
        assert tested[label] == ["llama3-8b"] and outside[label] == ["olmo2-7b", "qwen2.5-32b", "qwen2.5-7b"]
    for label in ("MAPLE-10 (gain)", "MAPLE-10 (loss)", "MAPLE-21 (sgr)", "MAPLE-21 (dgr)"):
        assert tested[label] == ["olmo2-7b", "qwen2.5-32b", "qwen2.5-7b"] and outside[label] == ["llama3-8b"]
    assert tested["MAPLE-5"] == ["olmo2-7b", "qwen2.5-32b"] and outside["MAPLE-5"] == ["llama3-8b", "qwen2.5-7b"]
    assert outside["MAPLE-6"] == ["qwen2.5-7b"] and len(tested["MAPLE-6"]) == 3
    assert tested["MAPLE-1"] == sorted(MODELS) and not outside["MAPLE-1"]  # a claim about every model
    # MAPLE-5: decoding's Gain equals τ's (100/500 each): no advantage beyond the margin
    assert {t.verdict for t in found["MAPLE-5"].cells} == {"supported"}
    assert found["MAPLE-4"].across["kee / data"].startswith("holds for 0 of 1 model;")  # the sign test counts Llama3 only
    # beside the verdicts, never one of them: what MAPLE-21's statistic says on Llama3 ("does it generalise?")
    result, verdict = found["MAPLE-21 (sgr)"].beyond[("llama3-8b", "kee / data")]
    assert verdict == "supported" and result["estimate"]["ci_high"] < 0


def test_maple_4_quotes_its_llama3_sentence():
    from kbench.claims.sets import claim_set

    [claim] = [c for c in claim_set("maple").claims if c.id == "MAPLE-4"]
    assert "On Gain, they achieve 1.6–4.9\\times higher values than temperature sampling on the Llama3 family" in claim.quote
    assert not any("kbench tests it on every model" in c.compared for c in claim_set("maple").claims)


def test_maple_11_compares_qwen_with_every_other_model(tmp_path):
    low, high = kee_metrics(caa=(10, 500)), kee_metrics(caa=(100, 500))  # CAA's Gain 2 % on Qwen2.5, 20 % elsewhere
    found = verdicts(suite(tmp_path, {"llama3-8b": high, "olmo2-7b": high, "qwen2.5-7b": low, "qwen2.5-32b": low}))
    for part in ("gain", "loss"):
        [test] = found[f"MAPLE-11 ({part})"].cells
        assert test.model == "2 in scope vs 2 others" and test.verdict == "supported", test.result["test"]
        assert abs(test.result["estimate"]["value"] - (-0.18 if part == "gain" else -0.036)) < 1e-9
    reversed_ = verdicts(suite(tmp_path / "reversed", {"llama3-8b": low, "olmo2-7b": high, "qwen2.5-7b": high}))
    [test] = reversed_["MAPLE-11 (gain)"].cells
    assert (
        test.verdict == "contradicted"
        and "qwen2.5-7b (highest of 1 in scope) − llama3-8b (lowest of 2 others)" in test.result["test"]
    )


def test_maple_12_reads_iti_s_gain_against_the_papers_range(tmp_path):
    metrics = kee_metrics()
    metrics["per_technique"]["iti"]["gain"] = proportion(300, 10000)  # 3 %, interval well inside 1.21–4.91 %
    [test] = verdicts(suite(tmp_path, {"llama3-8b": metrics}))["MAPLE-12 (gain)"].cells
    assert test.verdict == "supported"
    metrics["per_technique"]["iti"]["gain"] = proportion(1000, 10000)  # 10 %: far above the range
    [test] = verdicts(suite(tmp_path / "high", {"llama3-8b": metrics}))["MAPLE-12 (gain)"].cells
    assert test.verdict == "contradicted"
    # the range describes MAPLE's six models: another model gets no verdict on it
    found = verdicts(suite(tmp_path / "other", {"smollm2-135m": metrics}))["MAPLE-12 (gain)"]
    assert not found.cells and [m for m, _ in found.outside] == ["smollm2-135m"]
