"""`kbench report`: reading run directories, the HTML page, the PNG charts, headless rendering."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import run_kbench

from kbench.errors import InputError
from kbench.io import write_json, write_parquet
from kbench.report.build import build_report
from kbench.report.runs import load_run


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def _summary(acc: float, n: int = 40) -> dict:
    return {"n": n, "maple_accuracy": acc, "exact_accuracy": acc / 2, "rank1_accuracy": acc / 2,
            "lama_p_at_1": acc / 2, "mean_gold_logprob": -3.5}


def extraction_run(root: Path, model: str, shift: float) -> Path:
    """results.json shaped as schemas/results.extraction.v1.json (checked below)."""
    write_json(root / "results.json", {
        "schema": "results.extraction.v1", "task": "extraction",
        "model": {"name": model, "identity": "0" * 64, "kind": "causal", "dtype": "float32"},
        "dataset": {"path": "lama", "file": "data/default/test.parquet", "sha256": "1" * 64, "split": "test"},
        "settings": {"split": "test", "config": None, "limit": None, "prompt": "cloze", "fewshot": 0, "seed": 0,
                     "protocol": "maple", "common_vocab": None, "case_sensitive": False, "max_new_tokens": 16},
        "protocol_drops": {}, "overall": _summary(0.4 + shift, 120),
        "per_relation": {"P19": _summary(0.5 + shift), "P20": _summary(0.25 + shift), "P106": _summary(0.1)},
        "per_frequency_bin": {"tail": _summary(0.2 + shift), "head": _summary(0.6 + shift), "torso": _summary(0.4 + shift)},
        "known_facts": {"file": "known_facts.parquet", "count": 48, "criterion": "maple_correct"},
        "timing": {"seconds": 1.0, "items_computed": 120, "items_per_second": 120.0},
    })
    return root


def _technique(acc, gain, loss, improved, sgr) -> dict:
    return {"n": 20, "accuracy": acc, "exact_accuracy": acc, "gain": gain, "loss": loss,
            "prs": {"n": 10, "improved": improved, "tied": 0.1, "worsened": 0.9 - improved if improved is not None else None},
            "beyond_sampling": {"0.7": {"sgr": sgr, "dgr": 0.05, "shallow": 4, "deep": 6}}}


def kee_run(root: Path) -> Path:
    """results.json shaped as schemas/results.kee.v1.json: technique names plus per-slice metrics."""
    baseline, recite = _technique(0.31, 0.0, 0.0, None, None), _technique(0.35, 0.12, 0.05, 0.4, 0.3)
    write_json(root / "results.json", {
        "schema": "results.kee.v1", "task": "kee",
        "model": {"name": "tiny-llama", "identity": "0" * 64, "dtype": "float32"},
        "dataset": {"path": "maple", "file": "data/default/test.parquet", "sha256": "1" * 64, "split": "test",
                    "items": 20, "fitting_pool": "train split"},
        "settings": {"techniques": ["baseline", "recite"], "split": "test", "k": 20, "sweep_max": 30,
                     "temperatures": [0.7], "seed_a": 42, "technique_params": {}},
        "techniques": ["baseline", "recite"],
        "overall": {"baseline": baseline, "recite": recite},
        "per_frequency_bin": {"tail": {"baseline": _technique(0.1, 0.0, 0.0, None, None), "recite": recite},
                              "head": {"baseline": _technique(0.5, 0.0, 0.0, None, None), "recite": recite}},
        "ranking_stability": {}, "timing": {},
    })
    return root


def _aggregate(value: float) -> dict:
    return {"mean": value, "std": 0.01, "values": [value]}


def xteval_run(root: Path, model: str, acc_d: float, down: float) -> Path:
    """results.json shaped as schemas/results.xteval.v1.json, with an iid and an ood setting."""
    def setting(d: float) -> dict:
        figures = {"acc_D": acc_d, "downstream_accuracy": d, "usable_knowledge": acc_d * d,
                   "gap1": 1 - acc_d, "gap2": acc_d * (1 - d)}
        run = {"extraction_seed": 0, "split_seed": 0, "finetune_seed": 0, **figures}
        return {**{k: _aggregate(v) for k, v in figures.items()}, "runs": [run]}
    write_json(root / "results.json", {
        "schema": "results.xteval.v1", "task": "xteval", "model": model, "model_identity": "x", "dataset": "lama",
        "dataset_split": "test", "n_facts": 100,
        "extraction": {"method": "discrete", "seeds": [{"seed": 0, "acc_D": acc_d, "n_known": int(100 * acc_d)}]},
        "settings": {"iid": setting(down), "ood": setting(down / 2)}, "config": {},
    })
    return root


def test_fixture_results_follow_the_published_schemas(tmp_path):
    import json

    from jsonschema import Draft202012Validator

    schemas = Path(__file__).resolve().parents[2] / "schemas"
    for run, name in ((extraction_run(tmp_path / "e", "m", 0.1), "results.extraction.v1.json"),
                      (xteval_run(tmp_path / "x", "m", 0.6, 0.5), "results.xteval.v1.json"),
                      (kee_run(tmp_path / "k"), "results.kee.v1.json")):
        schema = json.loads((schemas / name).read_text())
        Draft202012Validator(schema).validate(json.loads((run / "results.json").read_text()))


def test_reads_tables_from_results_and_falls_back_to_items(tmp_path):
    import polars as pl

    run = load_run(extraction_run(tmp_path / "a", "m1", 0.0))
    assert run.label == "m1" and run.per_relation == {"P19": 0.5, "P20": 0.25, "P106": 0.1}
    assert run.per_bin == {"tail": 0.2, "head": 0.6, "torso": 0.4}
    assert run.headline == {"maple_accuracy": 0.4, "exact_accuracy": 0.2, "rank1_accuracy": 0.2,
                            "lama_p_at_1": 0.2, "mean_gold_logprob": -3.5}
    xt = load_run(xteval_run(tmp_path / "x", "m1", 0.6, 0.5))
    assert sorted(xt.gaps) == ["iid", "ood"] and xt.gaps["ood"]["downstream_accuracy"] == 0.25
    assert xt.gap_std["iid"]["acc_D"] == 0.01

    items_only = tmp_path / "b"
    write_json(items_only / "results.json", {"task": "extraction", "model": "m2", "accuracy": 0.5})
    write_parquet(items_only / "items.parquet", pl.DataFrame({
        "relation": ["P19", "P19", "P20", "P20"], "frequency_bin": ["head", "tail", "head", None],
        "correct": [True, False, True, True]}))
    run = load_run(items_only)
    assert run.per_relation == {"P19": 0.5, "P20": 1.0}
    assert run.per_bin == {"head": 1.0, "tail": 0.0}


def test_run_without_metrics_is_an_input_error(tmp_path):
    write_json(tmp_path / "results.json", {"task": "extraction", "model": "m"})
    with pytest.raises(InputError, match="no metrics"):
        load_run(tmp_path)


def test_report_of_several_runs_has_every_section_and_chart(tmp_path):
    runs = [extraction_run(tmp_path / "r1", "model-a", 0.0), extraction_run(tmp_path / "r2", "model-b", 0.2),
            kee_run(tmp_path / "r3"), xteval_run(tmp_path / "r4", "model-a", 0.6, 0.5)]
    index = build_report(runs, tmp_path / "report")
    html = index.read_text()
    for png in ("accuracy_per_relation.png", "accuracy_per_frequency_bin.png", "model_comparison.png", "gaps.png"):
        assert f'src="{png}"' in html  # relative links: the folder stands alone
        width, height = _png_size(tmp_path / "report" / png)
        assert width > 200 and height > 100
    assert "<h2>Techniques: tiny-llama</h2>" in html and "<th>prs improved</th>" in html and "<th>SGR τ=0.7</th>" in html
    assert "<tr><td>recite</td><td>20</td><td>0.350</td><td>0.350</td><td>0.120</td><td>0.050</td>" in html
    assert "<tr><td>baseline</td><td>0.500</td><td>0.100</td></tr>" in html  # per-bin accuracy, head before tail
    assert "0.600 ± 0.010" in html  # acc_D mean ± std
    assert "<th>model-a (r4) · iid</th>" in html and "<th>model-a (r4) · ood</th>" in html
    # bins in head, torso, tail order whatever order results.json used
    assert html.index("<td>head</td>") < html.index("<td>torso</td>") < html.index("<td>tail</td>")
    assert "<script" not in html and "http" not in html.split("<body>")[1]


def test_cli_report_writes_index_and_pngs(tmp_path):
    run = extraction_run(tmp_path / "ext", "model-a", 0.0)
    out = run_kbench("report", str(run), "--out", str(tmp_path / "report"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "report" / "index.html").is_file()
    assert sorted(p.name for p in (tmp_path / "report").glob("*.png")) == [
        "accuracy_per_frequency_bin.png", "accuracy_per_relation.png"]
    missing = run_kbench("report", str(tmp_path / "nope"), "--out", str(tmp_path / "r2"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def _chromium() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(tmp_path):
    runs = [extraction_run(tmp_path / "r1", "model-a", 0.0), extraction_run(tmp_path / "r2", "model-b", 0.2),
            xteval_run(tmp_path / "r3", "model-a", 0.6, 0.5)]
    index = build_report(runs, tmp_path / "report")
    shot = tmp_path / "screenshot.png"
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1200,2400",
                    f"--screenshot={shot}", index.as_uri()], capture_output=True, timeout=120, check=False)
    assert shot.is_file(), "Chromium wrote no screenshot"
    assert _png_size(shot) == (1200, 2400)
    assert shot.stat().st_size > 30_000  # a blank page compresses to a few KB; charts and tables do not


def test_cli_report_standardize_dispatches_to_the_standardisation_library(tmp_path):
    import importlib.util

    runs = [extraction_run(tmp_path / "r1", "model-a", 0.0), extraction_run(tmp_path / "r2", "model-b", 0.2)]
    out = run_kbench("report", "standardize", *map(str, runs), "--out", str(tmp_path / "std"))
    if importlib.util.find_spec("kbench.report.standardize") is None:
        assert out.returncode == 2 and "kbench.report.standardize" in out.stderr and "Traceback" not in out.stderr
    else:
        assert out.returncode == 0, out.stderr
        assert any((tmp_path / "std").iterdir())
