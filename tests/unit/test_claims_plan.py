"""`kbench claims plan` on the packaged claims-cpu suite (no model runs) and on constructed suite
files: sizes from the settings, Holm over the directional tests, the paper's effect, the models."""

from __future__ import annotations

import json
import math

from kbench.claims import power
from kbench.claims.plan import plan
from kbench.claims.sets import claim_set
from kbench.suite.spec import load_suite
from tests.conftest import run_kbench

SUITE = """[suite]
name = "planned"
claims = ["maple", "kola"]
{models}
[[datasets]]
name = "facts"
path = "org/facts"

[[tasks]]
task = "kee"
datasets = ["facts"]
[tasks.settings]
limit = {limit}
techniques = ["baseline", "temp0.7", "temp1.2", "recite", "genread", "caa", "iti", "decore", "activation_decoding"]

[[tasks]]
task = "extraction"
datasets = ["facts"]
[tasks.settings]
limit = 300
"""


def _suite(tmp_path, models: int = 2, limit: int = 400):
    text = "".join(
        f'[[models]]\nmodel = "smollm2-135m"\nname = "llama-3-m{i}"\ndtype = "{("float32", "bfloat16", "float16")[i % 3]}"\n'
        f'device = "cuda:{i}"\n'
        for i in range(models)
    )
    path = tmp_path / "planned.toml"
    path.write_text(SUITE.format(models=text, limit=limit))
    return load_suite(path)


def test_every_claim_of_the_packaged_cpu_suite_is_planned():
    found = plan(load_suite("claims-cpu"))
    suite = load_suite("claims-cpu")
    assert [s["name"] for s in found["sets"]] == list(suite.spec.suite.claims)
    for chosen in found["sets"]:
        rows = chosen["rows"]
        assert {c.label for c in claim_set(chosen["name"]).tested} == {r["claim"] for r in rows}
        assert not [r for r in rows if r["n"].startswith("no size plan")]  # every statistic has a design
        directional = [r for r in rows if r["directional"]]
        assert chosen["holm_tests"] == sum(1 if "models in scope" in r["n"] else len(r["models"]) for r in directional)
        assert all(a["needed"] == power.sign_test_models() == 5 for a in chosen["across"])


def test_every_packaged_suite_is_planned():
    from kbench.suite.spec import packaged_suites

    for name in packaged_suites():
        found = plan(load_suite(name))
        unplanned = [r["claim"] for chosen in found["sets"] for r in chosen["rows"] if r["n"].startswith("no size plan")]
        assert found["sets"] and not unplanned, name


def test_sizes_come_from_the_settings_and_the_paper_effect_from_the_claim(tmp_path):
    found = plan(_suite(tmp_path, models=2, limit=400))
    [maple] = [s for s in found["sets"] if s["name"] == "maple"]
    rows = {r["claim"]: r for r in maple["rows"]}
    alpha = 0.05 / maple["holm_tests"]
    # Gain: F_base is half the 400 facts under the assumed 50% accuracy
    assert rows["MAPLE-1"]["n"] == "F_base ≈ 50% of 400 facts, per technique"
    assert rows["MAPLE-1"]["detectable"] == f"{power.detectable_two(0.5, 200, 200, alpha):.1%} at 50%"
    # MAPLE-22: CAA's DGR 4.10% against 0.24% (the paper's Table 3), on D_deep (a quarter of the facts)
    needed = power.n_two_proportions(0.041, 0.0024, alpha)
    assert rows["MAPLE-22"]["paper"] == f"4.1% vs 0.2%: n {needed} per group, limit {math.ceil(needed / 0.25)}"
    assert rows["MAPLE-22"]["limit_needed"] == math.ceil(needed / 0.25)
    # an equivalence claim: the interval against the margin, and the limit at which it fits
    assert rows["MAPLE-6"]["limit_needed"] == math.ceil(power.n_for_margin(0.5, 0.5, 0.05) / 0.5)
    # MAPLE-25's PRS level leaves the temperature baselines out (their PRS is undefined): 6 techniques
    assert rows["MAPLE-25 (PRS)"]["n"] == "6 techniques"
    # a claim about other families (MAPLE-10: OLMo2 and Qwen2.5) has no model of this suite in its scope
    assert rows["MAPLE-10 (gain)"]["n"] == "outside the claim's scope: every model" and rows["MAPLE-10 (gain)"]["models"] == []
    assert rows["MAPLE-22"]["models"] == ["llama-3-m0", "llama-3-m1"]  # the Llama3 claim, by the models' labels
    assert {a["claim"]: a["models"] for a in maple["across"]}["MAPLE-1"] == 2


def test_a_packaged_recipe_caps_the_limit_at_its_rows(tmp_path):
    path = tmp_path / "capped.toml"
    text = SUITE.format(models='[[models]]\nmodel = "smollm2-135m"\n', limit=400)
    path.write_text(text.replace('path = "org/facts"', 'recipe = "maple-wiki"'))
    [maple, _] = plan(load_suite(path))["sets"]
    assert maple["rows"][0]["n"] == "F_base ≈ 50% of 133 facts, per technique"  # the maple-wiki demo's 133 facts
    found = plan(load_suite("claims-cpu"))
    rows = {(r["claim"], r["column"]): r for s in found["sets"] for r in s["rows"]}
    assert rows[("XTEVAL-1", "xteval-lr1e-5 / lama")]["n"] == "155 facts of D"  # 31 relations × 5 facts
    assert rows[("MAPLE-1", "kee / maple-wiki")]["n"] == "F_base ≈ 50% of 8 facts, per technique"
    # a claim about models after continual pretraining, on a suite with none; entries the suite lacks
    assert rows[("EVQA-1", "qa / *")]["n"].startswith("setting not met: no model is a model after continual pretraining")
    assert rows[("XTEVAL-7", "xteval / lama")]["n"] == (
        "no data: the suite runs no negatives_per_type = 2, negatives_per_type = 10 entry"
    )


def test_a_larger_limit_detects_a_smaller_difference(tmp_path):
    small, large = (plan(_suite(tmp_path, limit=limit)) for limit in (100, 1000))
    first = lambda found: float(next(r for r in found["sets"][0]["rows"] if r["claim"] == "MAPLE-1")["detectable"].split("%")[0])  # noqa: E731
    assert first(large) < first(small)


def test_the_cli_prints_writes_and_refuses(tmp_path):
    done = run_kbench("claims", "plan", "claims-cpu", "--json", "--out", str(tmp_path / "plan.md"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["suite"] == "claims-cpu"
    assert (tmp_path / "plan.md").read_text().startswith("# Claims plan for suite claims-cpu\n")
    table = run_kbench("claims", "plan", "claims-cpu", env={"COLUMNS": "250"})
    assert table.returncode == 0 and "MAPLE-1" in table.stdout and "(across models)" in table.stdout
    broken = tmp_path / "broken.toml"
    broken.write_text("[suite\nname = 1\n")
    for args, message in (
        ((str(broken),), "broken.toml: not valid TOML"),
        (("missing.toml",), "missing.toml: suite file not found"),
        ((), "kbench claims plan SUITE: give a suite file"),
        (("claims-cpu", "--set", "maple"), "--set and --check go with `kbench claims SUITE_DIR`"),
    ):
        refused = run_kbench("claims", "plan", *args)
        assert refused.returncode == 2 and message in refused.stderr and "Traceback" not in refused.stderr, refused.stderr


def test_a_suite_naming_no_claim_set_is_refused(tmp_path):
    path = tmp_path / "none.toml"
    path.write_text(SUITE.format(models='[[models]]\nmodel = "smollm2-135m"\n', limit=10).replace('["maple", "kola"]', "[]"))
    refused = run_kbench("claims", "plan", str(path))
    assert refused.returncode == 2 and "names no claim set to plan" in refused.stderr


def test_docs_claims_plan_md_is_the_commands_output():
    from kbench.claims.plan_render import markdown
    from tests.conftest import REPO_ROOT

    written = (REPO_ROOT / "docs" / "claims-plan.md").read_text(encoding="utf-8")
    assert written == markdown(plan(load_suite("claims-cpu"))), (
        "regenerate: kbench claims plan claims-cpu --out docs/claims-plan.md"
    )
