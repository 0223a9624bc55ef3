"""XTEVAL's IID vs OOD claim on the real SmolLM2-135M, CPU-sized: the statistic and its interval.

The paper finds models use their knowledge less on held-out relations (OOD) than on held-out
facts of seen relations (IID). This test runs both settings in the slow test's learning setting
(`test_xteval_smollm2.py`: 7 relations SmolLM2 knows, 40 facts each, discrete extraction) at one
epoch, and checks that IID - OOD of downstream accuracy and usable knowledge is computed with a
well-formed interval, and the paired comparison on the facts in both test splits; it does not
assert the paper's claim. It prints what SmolLM2 shows; measured here (acc_D 0.164): downstream IID
0.833 [0.618, 0.948] (18 test facts), OOD 0.333 [0.178, 0.504] (27), IID - OOD 0.500 [0.228, 0.694];
usable knowledge IID - OOD 0.082 [0.036, 0.124]; on the 11 facts in both test splits b = 7, c = 0,
p = 0.0156. The interval excludes 0: on this setting SmolLM2 uses its knowledge less under OOD, as
the paper claims. 190 s CPU at one thread on a loaded 2-core machine.
"""

import json

import pytest

from kbench.evaluate.engine import validate
from tests.integration.test_xteval_e2e import kbench_in_process, write_lama_folder
from tests.slow.test_xteval_smollm2 import LEARNING_SETTING, RELATIONS

ONE_EPOCH = tuple("1" if previous == "--epochs" else arg for previous, arg in zip(("",) + LEARNING_SETTING, LEARNING_SETTING))


@pytest.mark.slow
def test_smollm2_iid_minus_ood_has_an_interval(shared_data, tmp_path):
    folder = tmp_path / "lama"
    folder.mkdir()
    write_lama_folder(shared_data, folder, RELATIONS, per_relation=40)
    out = tmp_path / "run"
    code = kbench_in_process("evaluate", "xteval", "--dataset", str(folder), "--model", "smollm2-135m", "--out", str(out),
                             *ONE_EPOCH, "--setting", "both", "--device", "cpu")
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    validate(results, "results.v2.json")
    validate(results["metrics"], "results.xteval.v2.json")
    headline = results["headline"]
    for figure in ("downstream_accuracy", "usable_knowledge"):
        iid, ood, diff = (headline[f"{p}_{figure}"] for p in ("iid", "ood", "iid_minus_ood"))
        print(f"{figure}: IID {iid['value']:.3f} [{iid['ci_low']:.3f}, {iid['ci_high']:.3f}] (n {iid['n']}), "
              f"OOD {ood['value']:.3f} [{ood['ci_low']:.3f}, {ood['ci_high']:.3f}] (n {ood['n']}), "
              f"IID - OOD {diff['value']:.3f} [{diff['ci_low']:.3f}, {diff['ci_high']:.3f}]")
        assert diff["value"] == pytest.approx(iid["value"] - ood["value"])
        assert -1 <= diff["ci_low"] <= diff["value"] <= diff["ci_high"] <= 1 and diff["ci_high"] > diff["ci_low"]
        for single in (iid, ood):   # one run per setting: intervals from the queries, never zero-width
            assert single["runs"] == 1 and single["ci_high"] > single["ci_low"]
    shared = results["metrics"]["iid_minus_ood"]["on_shared_facts"]
    print(f"on {shared['n_shared']} facts in both test splits: b {shared['b']}, c {shared['c']}, p {shared['p_value']:.3g}, "
          f"difference {shared['difference']['value']}")
    assert 0 <= shared["p_value"] <= 1 and shared["b"] + shared["c"] <= shared["n_shared"]
    assert "IID - OOD" in (out / "report.md").read_text()
