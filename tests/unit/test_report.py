"""`kbench report`: the envelope read by shape, the index page (intervals, n, small-n marks,
relation labels), charts, and the CLI. Runs are built from real LAMA facts (tests/report_runs.py)
or are the golden v1 folders of tests/fixtures/results_v1."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kbench.errors import InputError
from kbench.io import write_json
from kbench.metrics.uncertainty import proportion
from kbench.report.build import build_report
from kbench.report.runs import load_run, metric_tables
from tests.report_runs import extraction_run, lama_items, predict, relation_labels

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V1_TASKS = ("extraction", "kee", "qa", "truefalse", "xteval")


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_v2_tables_are_read_by_shape(shared_data, tmp_path):
    run = load_run(extraction_run(tmp_path / "a", "model-a", predict(lama_items(shared_data, 60), 3)))
    assert run.primary == "maple_accuracy" and run.headline["maple_accuracy"] == proportion(20, 60)
    kinds = [(title, kind, len(rows)) for title, kind, rows in metric_tables(run.metrics)]
    assert kinds == [("per_relation", "per_relation", 6), ("per_frequency_bin", "per_frequency_bin", 3)]
    kee = load_run(FIXTURES / "results_v2/kee")
    titles = [title for title, _, _ in metric_tables(kee.metrics)]
    assert titles == ["per_technique", "per_frequency_bin: head", "per_frequency_bin: tail"]
    rows = metric_tables(kee.metrics)[0][2]
    assert rows["recite"]["mcnemar p"] == 0.21875 and rows["recite"]["gain"]["n"] == 28


def test_envelope_errors_name_the_key(tmp_path):
    write_json(tmp_path / "results.json", {"schema": "kbench.results.v2", "task": "extraction", "model": "m",
                                           "headline": {}, "metrics": {}})
    with pytest.raises(InputError, match=r"\[model\]: expected dict"):
        load_run(tmp_path)
    write_json(tmp_path / "results.json", {"schema": "kbench.results.v2", "task": "extraction", "model": {"name": "m"},
                                           "headline": {"acc": 0.5}, "metrics": {}})
    with pytest.raises(InputError, match="no metrics the report can show"):
        load_run(tmp_path)


def test_page_shows_intervals_n_small_marks_and_relation_labels(shared_data, tmp_path):
    items = lama_items(shared_data, 90)
    run = extraction_run(tmp_path / "a", "model-a", predict(items, 3))
    index = build_report([run], tmp_path / "report")
    html = index.read_text()
    labels = relation_labels(shared_data)
    first = sorted({i["relation"] for i in items})[0]
    assert f"<td>{first} · {labels[first]}</td><td>15</td>" in html  # relation with its label, then n
    # 15 items per relation: every cell is marked small; the overall cell (n = 90) is not
    assert "class=small title='n = 15'" in html and "title='n = 90'>0.333 <span class='ci'>[0.245, 0.436]</span></td>" in html
    assert "the items&#x27; relation_label column" in html
    assert '<a href=\'explorer-1.html\'>items</a>' in html
    width, height = _png_size(tmp_path / "report" / "per_relation.png")
    assert width > 300 and height > 150
    assert "<script" not in html and "http" not in html.split("<body>")[1]


def test_report_of_every_v1_task_and_a_v2_run_renders(shared_data, tmp_path):
    runs = [FIXTURES / "results_v1" / t for t in V1_TASKS] + [FIXTURES / "results_v2/kee"]
    index = build_report(runs, tmp_path / "report")
    html = index.read_text()
    for title in ("tiny (extraction): extraction", "tiny (kee): kee", "tiny (qa): qa", "tiny (truefalse): truefalse",
                  "smollm2-135m (xteval): xteval", "smollm2-135m (kee): kee"):
        assert f"<h2>{title}</h2>" in html
    assert "0.305 <span class='ci'>± 0.010 (sd over 2 runs)</span>" in html  # XTEVAL: mean ± sd over seeds
    assert "<h3>per technique</h3>" in html and "<th>prs improved</th>" in html and "<th>SGR τ=0.7</th>" in html
    # two KEE runs on different items (f0.. vs no items file): no pairing, said so
    assert "kee: no paired comparison" in html
    assert sorted(p.name for p in (tmp_path / "report").glob("*.png")) == ["gaps.png", "per_frequency_bin.png",
                                                                          "per_relation.png"]
    assert len(list((tmp_path / "report").glob("explorer-*.html"))) == 4   # xteval v1 and the v2 KEE have no items


def test_labels_from_the_dataset_split_or_a_relations_file(shared_data, tmp_path):
    import polars as pl

    items = lama_items(shared_data, 30, with_labels=False)
    run = extraction_run(tmp_path / "a", "model-a", predict(items, 3))
    plain = build_report([run], tmp_path / "r0").read_text()
    assert "none (bare relation ids)" in plain
    relations = shared_data / "lama_trex/relations.jsonl"
    labelled = build_report([run], tmp_path / "r1", relations_file=relations).read_text()
    assert f"the relations file {relations}" in labelled and "P101 · field of work" in labelled
    # the dataset split the run names in results.json carries labels: they win over the file
    dataset = tmp_path / "a" / "no-such-dataset" / "data" / "default"
    dataset.mkdir(parents=True)
    pl.DataFrame([{**i, "relation_label": f"label of {i['relation']}"} for i in items]).write_parquet(dataset / "test.parquet")
    from_dataset = build_report([run], tmp_path / "r2", relations_file=relations).read_text()
    assert "P101 · label of P101" in from_dataset and "the dataset split (" in from_dataset


def test_handwritten_v2_fixture_beside_a_v1_run_of_the_same_task(shared_data, tmp_path):
    v2 = FIXTURES / "results_v2/extraction"
    html = build_report([v2, FIXTURES / "results_v1/extraction"], tmp_path / "report",
                        relations_file=shared_data / "lama_trex/relations.jsonl").read_text()
    assert "<td>P1412 · languages spoken, written or signed</td><td>30</td><td title='n = 30'>0.067" in html  # n = 30: not small
    assert "<td>P19 · place of birth</td><td>3</td><td class=small title='n = 3'>" in html   # the v1 run's 3 facts
    assert "extraction: no paired comparison, smollm2-135m has no per-item table" in html
    assert "-6.02 <span class='ci'>[-6.31, -5.74]</span>" in html   # a bootstrap interval read as any Estimate


def test_xteval_primary_metric_is_its_first_settings_usable_knowledge():
    from kbench.report.runs import Run

    estimate = {"value": 0.5, "n": 9, "ci_low": 0.2, "ci_high": 0.8, "interval": "bootstrap"}
    headline = {k: estimate for k in ("acc_D", "gap1", "ood_usable_knowledge", "iid_usable_knowledge", "iid_gap2")}
    assert Run(Path("r"), {"task": "xteval", "headline": headline}).primary == "iid_usable_knowledge"
    assert Run(Path("r"), {"task": "extraction", "headline": {"maple_accuracy": estimate}}).primary == "maple_accuracy"
    strict = {"first_token_p1": estimate, "lama_p_at_1": estimate}   # --protocol lama
    assert Run(Path("r"), {"task": "extraction", "headline": strict}).primary == "lama_p_at_1"
