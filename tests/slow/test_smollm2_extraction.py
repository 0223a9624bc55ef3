"""The real SmolLM2-135M-Instruct (fp32, CPU) through the runner, against recorded numbers.

The fixed fact set: the first 10 facts (file order) of the first 10 LAMA T-REx relations
(sorted by id) whose template has [X] before [Y]; the cloze prompt is the text before [Y].
"""

from __future__ import annotations

import json

import pytest

from kbench.metrics.matching import distinct_fact_hits
from kbench.metrics.uncertainty import macro_mean

pytestmark = pytest.mark.slow

# Measured on 2026-11-30 with transformers 5.24, torch 2.13 CPU: 9 of the 100 facts are
# ranked first; macro P@1 over the 10 relations = RECORDED_P_AT_1.
RECORDED_P_AT_1 = 0.09
TOLERANCE = 0.02   # float32 BLAS differences across machines can flip a near-tie or two


@pytest.fixture(scope="module")
def runner():
    from kbench.models.loading import load_model
    from kbench.models.runner import ModelRunner

    return ModelRunner(load_model("smollm2-135m"))


def fixed_facts(shared_data, relations: int = 10, per_relation: int = 10) -> list[dict]:
    templates = {}
    for line in (shared_data / "lama_trex/relations.jsonl").read_text().splitlines():
        rel = json.loads(line)
        before = rel["template"].split("[Y]")[0]
        if "[X]" in before and (shared_data / f"lama_trex/TREx/{rel['relation']}.jsonl").exists():
            templates[rel["relation"]] = before
    facts = []
    for relation in sorted(templates)[:relations]:
        lines = (shared_data / f"lama_trex/TREx/{relation}.jsonl").read_text().splitlines()[:per_relation]
        for line in lines:
            fact = json.loads(line)
            facts.append({"relation": relation, "subject": fact["sub_label"], "object": fact["obj_label"],
                          "prompt": templates[relation].replace("[X]", fact["sub_label"]).strip()})
    return facts


def test_greedy_capital_of_france(runner):
    (answer,) = runner.generate(["The capital of France is"], max_new_tokens=8)
    assert "Paris" in answer


def test_p_at_1_on_fixed_lama_facts(runner, shared_data):
    facts = fixed_facts(shared_data)
    assert len(facts) == 100
    ranks = runner.rank_first_token([f["prompt"] for f in facts], [" " + f["object"] for f in facts])
    p_at_1 = macro_mean(distinct_fact_hits((f["relation"], f["subject"], f["object"], r == 1) for f, (r, _) in zip(facts, ranks)))
    print(f"P@1 macro = {p_at_1['value']:.4f}; hits = {sum(r == 1 for r, _ in ranks)}")
    assert p_at_1["value"] == pytest.approx(RECORDED_P_AT_1, abs=TOLERANCE)
