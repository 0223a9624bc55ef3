"""Every comparison the papers draw (MAPLE, KoLA, LEFT; XTEVAL's live in its own tests), computed on
the real SmolLM2-135M-Instruct at a CPU-sized setting. The test asserts that each statistic and
its interval are computed and well-formed, not that any paper's claim holds on this model.

- KEE (MAPLE): exact McNemar between every two techniques, the PRS sign test of Improved against
  Worsened, the Kendall tau of the ranking with its bootstrap interval, head - tail / head - torso;
  ITI's probes train on a TruthfulQA-format CSV placed in the data root, and say so.
- Extraction (MAPLE, KoLA): head - tail and head - torso, unpaired Newcombe differences.
- LEFT: open book - prior, paired on statements across two runs.

The frequency bins here are assigned by position (a third each): they exercise the statistics;
the recipes' bins come from pageviews or evidence counts."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import polars as pl
import pytest

from kbench.construct.stages.to_questions import load_question_templates
import kbench
from kbench.evaluate.engine import validate
from kbench.models.loading import load_model
from kbench.report.items import read_items
from kbench.tasks.kee.report import write_report
from kbench.tasks.truefalse.report import setting_comparisons
from kbench.report.runs import load_runs
from tests.dataset_folders import left_dataset
from tests.fixtures_models import cached_model
from tests.question_rows import question_row

pytestmark = pytest.mark.slow
RELATIONS = ("P103", "P27", "P1412")
PER_RELATION = 6
BINS = ("head", "torso", "tail")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def binned_dataset(shared_data: Path, root: Path) -> Path:
    templates = load_question_templates()
    rows = []
    for relation in RELATIONS:
        for line in (shared_data / "lama_trex" / "TREx" / f"{relation}.jsonl").read_text(encoding="utf-8").splitlines()[:PER_RELATION]:
            fact = json.loads(line)
            rows.append(question_row(id=fact["uuid"], relation=relation, subject=fact["sub_label"], object=fact["obj_label"],
                                     answers=[fact["obj_label"]], question=templates[relation].replace("[X]", fact["sub_label"]),
                                     frequency_bin=BINS[len(rows) % 3]))
    (root / "data" / "default").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(root / "data" / "default" / "test.parquet")
    return root


def well_formed(estimate: dict, paired: bool | None = None) -> None:
    assert estimate["value"] is not None and estimate["n"] > 0, estimate
    assert estimate["ci_low"] <= estimate["value"] <= estimate["ci_high"] and estimate["ci_low"] < estimate["ci_high"], estimate
    assert all(math.isfinite(estimate[k]) for k in ("value", "ci_low", "ci_high"))
    if paired is not None:
        assert estimate["paired"] is paired


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory):
    return cached_model(load_model("smollm2-135m"), tmp_path_factory.mktemp("cache") / "c.sqlite")


def test_kee_and_extraction_comparisons(smollm2, shared_data, tmp_path, monkeypatch):
    data_root = tmp_path / "data"
    (data_root / "truthfulqa").mkdir(parents=True)
    shutil.copy(FIXTURES / "truthfulqa" / "TruthfulQA.csv", data_root / "truthfulqa" / "TruthfulQA.csv")
    monkeypatch.setenv("KBENCH_DATA_DIR", str(data_root))
    dataset = binned_dataset(shared_data, tmp_path / "dataset")
    settings = {"techniques": ("baseline", "iti", "activation_decoding"), "k": 3, "sweep_max": 3, "temperatures": (0.7,)}
    results = kbench.evaluate("kee", dataset=dataset, model=smollm2, out=tmp_path / "kee", **settings).results   # validated against the schemas
    m = results["metrics"]
    print("KEE", json.dumps({"per_technique": {t: {k: v["value"] for k, v in x.items() if isinstance(v, dict) and "value" in v}
                                               for t, x in m["per_technique"].items()},
                             "pairwise": m["pairwise_tests"], "sign": {t: x["prs"]["sign_test"] for t, x in m["per_technique"].items()},
                             "bins": m["frequency_bin_differences"], "tau": m["ranking_stability"]}, default=str))
    assert len(m["pairwise_tests"]) == 3 and all(t["n_shared"] == len(RELATIONS) * PER_RELATION for t in m["pairwise_tests"])
    assert all(0 <= t["p_value"] <= t["p_holm"] <= 1 for t in m["pairwise_tests"])
    for technique in ("iti", "activation_decoding"):
        sign = m["per_technique"][technique]["prs"]["sign_test"]
        assert 0 <= sign["p_value"] <= 1 and sign["plus"] + sign["minus"] <= m["per_technique"][technique]["prs"]["n"]
    for contrast in ("head - tail", "head - torso"):
        for technique in settings["techniques"]:
            well_formed(m["frequency_bin_differences"][contrast][technique]["accuracy"], paired=False)
    for k, tau in m["ranking_stability"]["0.7"]["sgr"].items():
        assert tau["seed"] == 0 and tau["resamples"] == 1000 and tau["interval"] == "bootstrap"
        if tau["ci_low"] is not None:
            assert -1 <= tau["ci_low"] <= tau["ci_high"] <= 1
    iti = m["technique_details"]["iti"]
    assert {f["probe_source"] for f in iti["fitted"]} == {"truthfulqa"}
    # the 6-question fixture trains the probes but is not TruthfulQA: never reported as faithful
    assert "iti-probes-not-truthfulqa" in iti["deviations"]
    assert "iti-probes-not-truthfulqa" in [d["id"] for d in results["protocol"]["deviations"]]
    assert m["technique_details"]["baseline"]["deviations"] == []
    write_report(results, tmp_path / "kee")
    table = (tmp_path / "kee" / "comparison.md").read_text()
    assert "## Paired tests between techniques" in table and "## Frequency bins" in table and "Kendall" in table

    extraction = kbench.evaluate("extraction", dataset=dataset, model=smollm2, out=tmp_path / "extraction", max_new_tokens=8).results
    differences = extraction["metrics"]["frequency_bin_differences"]
    print("extraction", json.dumps(differences))
    for contrast in ("head - tail", "head - torso"):
        well_formed(differences[contrast]["maple_accuracy"], paired=False)
        assert extraction["headline"][f"maple_accuracy {contrast}"] == differences[contrast]["maple_accuracy"]


def test_left_open_book_minus_prior(smollm2, shared_data, tmp_path):
    dataset = left_dataset(shared_data, tmp_path / "left")
    for name, settings in (("prior", {"limit": 10}), ("open", {"setting": "open-book", "retriever": "gold", "limit": 10})):
        results = kbench.evaluate("truefalse", dataset=dataset, model=smollm2, out=tmp_path / name, **settings).results
        validate(results["metrics"], "results.truefalse.v2.json")
    runs = load_runs([tmp_path / "prior", tmp_path / "open"])
    (got,) = setting_comparisons(runs, [read_items(r.path) for r in runs])
    print("LEFT", json.dumps(got))
    assert got["difference"]["n"] == 10 and got["paired_test"]["n_shared"] == 10
    well_formed(got["difference"], paired=True)
    assert 0 <= got["paired_test"]["p_value"] <= 1
