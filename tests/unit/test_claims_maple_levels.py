"""MAPLE-25 (the metric levels move together over techniques) and MAPLE-26 (K = 20 finds about 90%
of the shallow failures K = 30 finds) on a constructed suite: in model "agree" Gain rises with DGR
and falls with PRS Tied, and K = 20 finds 450 of 500; in model "apart" every order is reversed and
K = 20 finds 100 of 200. MAPLE-24 reads a sampling partition, whose key holds a dot. The PRS level
leaves out temperature sampling, whose PRS is undefined."""

from __future__ import annotations

import json

from kbench.claims.verdicts import test_suite as claims_of_suite
from kbench.metrics.uncertainty import proportion
from tests.integration.test_claims_papers import write_run

TECHNIQUES = ("temp0.7", "temp1.2", "decore", "activation_decoding", "iti", "caa", "recite", "genread")


def kee_metrics(agree: bool) -> dict:
    table = {"baseline": {"accuracy": proportion(50, 100)}}
    for rank, name in enumerate(TECHNIQUES):  # Gain grows with the rank
        moved = rank if agree else len(TECHNIQUES) - rank  # Tied falls with Gain in "agree"
        deep = rank if agree else len(TECHNIQUES) - rank
        table[name] = {
            "gain": proportion(5 + 5 * rank, 100),
            "prs": {"n": 40, "tied": proportion(40 - 4 * moved, 40), "improved": proportion(2 * moved, 40),
                    "worsened": proportion(2 * moved, 40)},
            "beyond_sampling": {t: {"dgr": proportion(deep, 30)} for t in ("0.7", "1.2")},
        }
    found = {"20": 450, "30": 500} if agree else {"20": 100, "30": 200}
    return {"per_technique": table, "shallow_by_k": {"0.7": found, "1.2": {"20": 460, "30": 500} if agree else found}}


def test_metric_levels_and_shallow_share_verdicts(tmp_path):
    cells = {}
    for model in ("agree", "apart"):
        key = f"{model}__kee__data"
        write_run(tmp_path / "cells" / key, "kee", model, kee_metrics(model == "agree"))
        cells[key] = {"model": model, "task": "kee", "dataset": "data", "status": "done", "run_dir": f"cells/{key}"}
    suite = {"suite": {"name": "levels"}, "tasks": [{"task": "kee", "name": "kee"}]}
    (tmp_path / "suite.json").write_text(json.dumps({"schema": "kbench.suite.v1", "suite": suite, "cells": cells, "models": {}}))
    [(_, results)] = claims_of_suite(tmp_path, ["maple"])
    by_label = {r.claim.label: {t.model: t for t in r.cells} for r in results}

    prs, dgr = by_label["MAPLE-25 (PRS)"], by_label["MAPLE-25 (DGR)"]
    assert {m: t.verdict for m, t in prs.items()} == {"agree": "supported", "apart": "contradicted"}
    assert {m: t.verdict for m, t in dgr.items()} == {"agree": "supported", "apart": "contradicted"}
    assert prs["agree"].result["estimate"]["value"] == 1.0 and prs["apart"].result["estimate"]["value"] == -1.0
    # temperature sampling has no PRS (its rank is the baseline's): 6 techniques, 2 of the 6! orders as extreme
    assert prs["agree"].result["p_value"] == 2 / 720
    assert "Kendall tau-b of Gain with lower prs.tied over 6 techniques" in prs["agree"].result["test"]

    share = by_label["MAPLE-26"]
    assert {m: t.verdict for m, t in share.items()} == {"agree": "supported", "apart": "contradicted"}
    assert abs(share["agree"].result["estimate"]["value"] - 0.02) < 1e-9  # 460 / 500 − 0.9: farther than 450 / 500
    assert "(the 1.2 partition)" in share["agree"].result["test"]
    assert abs(share["apart"].result["estimate"]["value"] + 0.4) < 1e-9

    # the partitions' keys hold a dot ("0.7"): SGR / DGR claims find them (MAPLE-24 read none before)
    [deciding] = [t for t in by_label["MAPLE-24 (dgr)"].values() if t.model == "agree"]
    assert "beyond_sampling.0.7.dgr: recite − temp1.2 (the deciding pair of 8)" in deciding.result["test"]
