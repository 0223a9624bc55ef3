"""The packaged suites (`kbench suite list`): each paper's claim set at a CPU size and at the
papers' size, every one a valid suite; `[suite] claims` must find its claim sets' tasks in the
suite, or the run stops before anything runs (exit 2)."""

from __future__ import annotations

import pytest

from tests.conftest import run_kbench

SUITE = """[suite]
name = "tiny"
CLAIMS

[[models]]
model = "smollm2-135m"

[[datasets]]
name = "facts"
path = "facts"

[[tasks]]
task = "extraction"
"""


def test_every_packaged_suite_is_valid_and_listed():
    from kbench.suite.spec import load_suite, packaged_suites

    names = sorted(packaged_suites())
    per_paper = [f"{s}-{size}" for s in ("maple", "xteval", "left", "evolvingqa") for size in ("cpu", "paper")]
    assert names == sorted([*per_paper, "claims-cpu"])
    for name in names:
        suite = load_suite(name)  # a packaged name stands for its file
        assert suite.spec.suite.claims and suite.spec.suite.name == name
        cpu = {m.model for m in suite.spec.models}
        assert cpu == {"smollm2-135m", "gemma3-270m"} if name.endswith("-cpu") else all("/" in m for m in cpu)
    assert len(load_suite("maple-paper").spec.models) == 6  # MAPLE's Table 2 models: 5+ decide across models
    listed = run_kbench("suite", "list")
    assert listed.returncode == 0 and "maple-cpu: claims maple, kola; models smollm2-135m, gemma3-270m" in listed.stdout
    assert "claims-cpu: claims maple, kola, xteval, left, evolvingqa; models smollm2-135m, gemma3-270m" in listed.stdout


def test_the_claims_cpu_suite_has_the_entries_its_claims_compare():
    """docs/claims.md comes from claims-cpu: every claim set, DeCoRe at 10, 20 and more masked
    heads (MAPLE-28), XTEVAL at the three learning rates of XTEVAL-16, KEE at MAPLE's K (MAPLE-26)."""
    from kbench.claims.sets import SET_NAMES
    from kbench.suite.spec import load_suite

    suite = load_suite("claims-cpu").spec
    assert sorted(suite.suite.claims) == sorted(SET_NAMES)
    kee = [t.settings for t in suite.tasks if t.task == "kee"]
    heads = sorted(s["technique_params"]["decore"]["retrieval_heads"] for s in kee if "decore" in s["techniques"])
    assert heads[:2] == [10, 20] and heads[-1] > 20
    assert any(s["k"] == 20 and s["sweep_max"] == 30 for s in kee)
    assert sorted(t.settings["finetune"]["lr"] for t in suite.tasks if t.task == "xteval") == [1e-5, 3e-5, 5e-5]


@pytest.mark.parametrize("claims, message", [
    ('claims = ["maple"]', "claim set maple needs task(s) kee, which the suite lacks"),
    ('claims = ["nope"]', "no claim set 'nope'"),
])
def test_a_claim_set_without_its_task_stops_the_suite_before_it_runs(tmp_path, claims, message):
    (tmp_path / "facts").mkdir()
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.replace("CLAIMS", claims))
    done = run_kbench("suite", "run", str(suite), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and f"{suite}:3 [suite.claims]: {message}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()  # nothing ran


def test_an_unknown_suite_name_is_refused():
    done = run_kbench("suite", "run", "maple-gpu")
    assert done.returncode == 2 and "'maple-gpu' is neither a suite file nor a packaged suite; packaged: " in done.stderr
