"""XTEVAL with the real SmolLM2-135M at minimal settings: discrete extraction through the
extraction task, one seed, one epoch; the gap figures must be consistent (0 <= Gap 2 <= acc_D)."""

import json

import pytest

from kbench.evaluate.rundir import validate_results
from tests.integration.test_xteval_e2e import kbench_in_process, write_lama_folder

# Relations SmolLM2 often gets right (languages, countries), so D^theta is not tiny.
RELATIONS = ("P103", "P27", "P407", "P178", "P527")


@pytest.mark.slow
def test_smollm2_gap_figures(shared_data, tmp_path):
    folder = tmp_path / "lama"
    folder.mkdir()
    write_lama_folder(shared_data, folder, RELATIONS, per_relation=8)
    out = tmp_path / "run"
    code = kbench_in_process("evaluate", "xteval", "--dataset", str(folder), "--model", "smollm2-135m",
                             "--out", str(out), "--epochs", "1", "--seeds", "1", "--distractors-per-type", "5",
                             "--device", "cpu")
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    validate_results(results, "results.xteval.v1.json")
    figures = results["settings"]["iid"]
    acc_d, gap2 = figures["acc_D"]["mean"], figures["gap2"]["mean"]
    assert 0.05 < acc_d < 0.9            # SmolLM2 knows some, not all, of these facts
    assert 0.0 <= gap2 <= acc_d
    assert figures["gap1"]["mean"] == pytest.approx(1 - acc_d)
    assert figures["usable_knowledge"]["mean"] + gap2 == pytest.approx(acc_d)
