"""Claim scopes over models (globs on the label, the model spec and the hub id's last part), the
non-superiority verdict ("not_greater") and the settings a claim requires."""

from __future__ import annotations

from kbench.claims.sets import Claim, in_scope, provides
from kbench.claims.verdicts import _verdict


def claim(**fields) -> Claim:
    return Claim(id="X-1", statement="s", quote="q", source="here", task="kee", statistic="technique_above", **fields)


def test_a_scope_matches_the_label_the_spec_or_the_hub_ids_last_part():
    llama = claim(models=("*llama-3*",))
    assert in_scope(llama, "l8", {"model": "meta-llama/Meta-Llama-3-8B-Instruct"})  # the hub id's last part
    assert in_scope(llama, "Llama-3-8b", None)  # the label, case-insensitive
    assert not in_scope(llama, "olmo", {"model": "allenai/OLMo-2-1124-7B-Instruct"})
    assert in_scope(claim(), "anything", None)  # no models: every model
    but_qwen7 = claim(except_models=("*qwen2.5-7b*",))
    assert not in_scope(but_qwen7, "q7", {"model": "Qwen/Qwen2.5-7B-Instruct"})
    assert in_scope(but_qwen7, "q32", {"model": "Qwen/Qwen2.5-32B-Instruct"})


def test_non_superiority_is_decided_by_the_interval_against_the_margin():
    worse = {"estimate": {"value": -0.10, "ci_low": -0.14, "ci_high": -0.06, "n": 500}, "p_value": 1e-6}
    better = {"estimate": {"value": 0.20, "ci_low": 0.12, "ci_high": 0.28, "n": 500}, "p_value": 1e-6}
    close = {"estimate": {"value": 0.02, "ci_low": -0.03, "ci_high": 0.07, "n": 500}, "p_value": 0.4}
    no_better = claim(direction="not_greater", margin=0.05)
    assert _verdict(no_better, worse, None) == "supported"  # a significant drop supports "no better than"
    assert _verdict(no_better, better, None) == "contradicted"
    assert _verdict(no_better, close, None) == "inconclusive"  # the upper bound reaches past the margin


def test_continual_pretraining_is_a_kbench_read_checkpoint():
    assert provides("continual-pretraining", {"read": {"steps": 10}})
    assert not provides("continual-pretraining", {"model": "org/static"}) and not provides("continual-pretraining", None)
