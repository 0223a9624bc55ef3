"""Readings of MAPLE's unstated recovery rule for temperature sampling (issue #38, §2): a KEE run
records τ's SGR / DGR under each reading (any of K, majority of K, one sample); a claim that reads
them is decided under each. Here AD's SGR is 30/503 and τ1.2's 81/504 under any of K, 10/504 under
a majority of K and 40/504 with one sample, so MAPLE-21's SGR part ("no better than τ") is
supported, inconclusive and supported: it depends on the reading. Its DGR part agrees under every
reading, and a claim that reads no τ rate (MAPLE-20) reports no readings. A run without readings
is decided as before."""

from __future__ import annotations

from kbench.claims.check import parse_claims
from kbench.claims.render import markdown
from kbench.claims.sets import claim_set
from kbench.metrics.uncertainty import proportion
from tests.unit.test_claims_maple_encodings import kee_metrics, suite, verdicts

READINGS = {
    "any-of-k": {"sgr": proportion(81, 504), "dgr": proportion(2, 480)},
    "majority-of-k": {"sgr": proportion(10, 504), "dgr": proportion(0, 480)},
    "one-sample": {"sgr": proportion(40, 504), "dgr": proportion(1, 480)},
}


def with_readings() -> dict:
    metrics = kee_metrics(undefined_prs=True)
    for name in ("temp0.7", "temp1.2"):
        metrics["per_technique"][name]["beyond_sampling"]["1.2"]["readings"] = READINGS
    for name in ("recite", "genread"):
        metrics["per_technique"][name]["beyond_sampling"] = {"1.2": {"sgr": proportion(200, 504), "dgr": proportion(100, 480)}}
    return metrics


def test_a_verdict_that_differs_between_readings_depends_on_the_reading(tmp_path):
    found = verdicts(suite(tmp_path, {"olmo2-7b": with_readings()}))
    [sgr] = found["MAPLE-21 (sgr)"].cells
    assert sgr.verdict == "depends on the reading"
    assert sgr.reading_verdicts == {"any-of-k": "supported", "majority-of-k": "inconclusive", "one-sample": "supported"}
    assert abs(sgr.readings["majority-of-k"]["estimate"]["value"] - (30 / 503 - 10 / 504)) < 1e-12
    [dgr] = found["MAPLE-21 (dgr)"].cells
    assert dgr.verdict == "supported" and set(dgr.reading_verdicts.values()) == {"supported"}
    [shallow] = found["MAPLE-20"].cells
    assert shallow.readings == {}  # SGR − DGR of DeCoRe / AD / CAA reads no τ rate
    [prompting] = found["MAPLE-24 (sgr)"].cells  # directional: Holm run again under each reading
    assert set(prompting.reading_holm) == set(READINGS) and all(p is not None for p in prompting.reading_holm.values())

    text = markdown("readings", [(claim_set("maple"), list(found.values()))])
    part = text.split("### MAPLE-21 (sgr): ")[1].split("\n### ")[0]
    assert "| olmo2-7b | kee / data |" in part and "| depends on the reading |" in part
    assert "| olmo2-7b · reading majority-of-k | kee / data |" in part and "| inconclusive |" in part
    assert "| llama3-8b" not in part  # no Llama3 model in this suite
    assert "the verdict is the same under every reading" in text.split("### MAPLE-21 (dgr): ")[1].split("\n### ")[0]
    numbers = parse_claims(text)
    beyond = numbers["MAPLE-4 | olmo2-7b | kee / data"].split(
        " | "
    )  # Llama3's claim on OLMo2: no verdict, but does it generalise?
    assert beyond[3:5] == ["—", "outside the claim's scope; does it generalise? inconclusive (p unadjusted)"]
    assert numbers["MAPLE-21 (sgr) | olmo2-7b · reading one-sample | kee / data"].endswith(
        "| supported | — | " + sgr.readings["one-sample"]["test"]
    )


def test_a_run_without_readings_is_decided_as_before(tmp_path):
    [sgr] = verdicts(suite(tmp_path, {"olmo2-7b": kee_metrics(undefined_prs=True)}))["MAPLE-21 (sgr)"].cells
    assert sgr.verdict == "supported" and sgr.readings == {} and sgr.reading_verdicts == {}
