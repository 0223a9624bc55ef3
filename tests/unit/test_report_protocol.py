"""The protocol block in `kbench report` (docs/protocol.md): "faithful to NAME", the deviations
listed, "protocol not recorded" for an older file (never faithful), and a comparison whose runs'
protocols differ says what makes it not like for like (HTML, comparison.md, terminal lines)."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path

import pytest

from kbench.errors import UserError
from kbench.metrics.uncertainty import bin_differences
from kbench.protocol import REFERENCES, Deviation, ProtocolRecord, comparison_differences
from kbench.report.build import build_report
from tests.report_runs import extraction_run, lama_items, predict

FEWSHOT = Deviation("fewshot", "asks each fact zero-shot", "1 solved example before each item", "every reported number")
LIMIT = Deviation("sample-limit", "evaluates every item", "a seeded sample of 20 of the 30 items", "every number")
VOCAB = Deviation("no-common-vocab", "ranks over LAMA's common vocabulary", "full vocabulary", "lama_p_at_1")


def with_protocol(run: Path, protocol: ProtocolRecord | None) -> Path:
    results = json.loads((run / "results.json").read_text())
    if protocol is not None:
        results["protocol"] = protocol.block()
    (run / "results.json").write_text(json.dumps(results))
    return run


def run_with(tmp_path: Path, shared_data: Path, name: str, protocol: ProtocolRecord | None, every: int = 3) -> Path:
    return with_protocol(extraction_run(tmp_path / name, name, predict(lama_items(shared_data, 30), every)), protocol)


def page(out: Path) -> str:
    return unescape((out / "index.html").read_text())


def test_faithful_deviations_and_not_recorded(shared_data, tmp_path):
    runs = [
        run_with(tmp_path, shared_data, "faithful", ProtocolRecord("maple-extraction", REFERENCES["maple"])),
        run_with(tmp_path, shared_data, "deviating", ProtocolRecord("lama-strict-p@1", REFERENCES["lama"], (FEWSHOT, VOCAB))),
    ]
    out = tmp_path / "report"
    lines: list[str] = []
    build_report(runs[:1], out, echo=lines.append)
    html = page(out)
    assert "faithful to maple-extraction" in html and REFERENCES["maple"] in html
    assert lines == ["faithful (extraction): faithful to maple-extraction"]

    build_report(runs[1:], out)
    html = page(out)
    assert "2 deviations from lama-strict-p@1" in html and "faithful to" not in html
    for d in (FEWSHOT, VOCAB):  # every field of every entry, in a row of the run's table
        assert f"<tr><td>{d.id}</td><td>{d.paper}</td><td>{d.kbench}</td><td>{d.effect}</td></tr>" in html

    old = extraction_run(tmp_path / "old", "old", predict(lama_items(shared_data, 30), 3))  # no block at all
    lines.clear()
    build_report([old], out, echo=lines.append)
    html = page(out)
    assert "protocol not recorded" in html and "faithful to" not in html
    assert lines == ["old (extraction): protocol not recorded"]


def test_a_comparison_of_different_protocols_says_why_it_is_not_like_for_like(shared_data, tmp_path):
    maple = ProtocolRecord("maple-extraction", REFERENCES["maple"])
    runs = [
        run_with(tmp_path, shared_data, "a", maple),
        run_with(tmp_path, shared_data, "b", maple.with_deviations([FEWSHOT, LIMIT]), every=2),
    ]
    out = tmp_path / "report"
    lines: list[str] = []
    build_report(runs, out, echo=lines.append)
    html, markdown = page(out), (out / "comparison.md").read_text()
    for text in (html, markdown, "\n".join(lines)):
        assert "not like for like" in text.lower()
        assert "fewshot differs between the runs (a: as the paper (asks each fact zero-shot); " in text
        assert "b: 1 solved example before each item); it touches every reported number" in text
        assert "sample-limit differs" not in text  # the paired test on shared items handles a sample
    assert "Protocols: a: faithful to maple-extraction; b: 2 deviations from maple-extraction." in html

    same = [run_with(tmp_path, shared_data, "c", maple), run_with(tmp_path, shared_data, "d", maple.with_deviations([LIMIT]))]
    lines.clear()
    build_report(same, tmp_path / "same", echo=lines.append)
    assert "not like for like" not in page(tmp_path / "same").lower() and not any("warning" in line for line in lines)


def test_comparison_differences():
    maple, lama = ProtocolRecord("maple-extraction", "M"), ProtocolRecord("lama-strict-p@1", "L")
    assert comparison_differences({"a": maple, "b": maple}) == []
    assert comparison_differences({"a": maple.with_deviations([FEWSHOT]), "b": maple.with_deviations([FEWSHOT])}) == []
    different = comparison_differences({"a": maple, "b": lama})
    assert len(different) == 1 and different[0].startswith("different procedures: a is maple-extraction, b is lama-strict-p@1")
    unrecorded = comparison_differences({"a": maple, "b": None})
    assert len(unrecorded) == 1 and unrecorded[0].startswith("protocol not recorded for b")
    assert comparison_differences({"a": maple, "b": maple.with_deviations([LIMIT])}, same_items=("sample-limit",)) == []


@pytest.mark.parametrize(
    ("block", "key"),
    [
        ("not an object", "`protocol` is not an object"),
        ({"schema": "kbench.protocol.v1", "name": "x", "reference": "r", "faithful": True, "deviations": [{"id": "a"}]},
         "protocol.deviations[0]"),
        ({"schema": "kbench.protocol.v1", "name": "x", "reference": "r", "faithful": True,
          "deviations": [FEWSHOT.as_dict()]}, "protocol.faithful"),
    ],
)
def test_a_malformed_block_names_file_and_key_and_writes_nothing(shared_data, tmp_path, block, key):
    good = run_with(tmp_path, shared_data, "good", ProtocolRecord("maple-extraction", REFERENCES["maple"]))
    bad = extraction_run(tmp_path / "bad", "bad", predict(lama_items(shared_data, 30), 3))
    results = json.loads((bad / "results.json").read_text())
    (bad / "results.json").write_text(json.dumps({**results, "protocol": block}))
    out = tmp_path / "report"
    out.mkdir()
    (out / "index.html").write_text("the previous report")
    with pytest.raises(UserError, match=f"{bad / 'results.json'}: .*") as raised:
        build_report([good, bad], out)
    assert key in str(raised.value) and "\n" not in str(raised.value)
    assert sorted(p.name for p in out.iterdir()) == ["index.html"] and (out / "index.html").read_text() == "the previous report"


def test_standardized_scores_name_each_protocol_and_what_is_not_like_for_like(shared_data, tmp_path):
    from kbench.report.standardize import standardize_runs

    maple = ProtocolRecord("maple-extraction", REFERENCES["maple"])
    runs = [run_with(tmp_path, shared_data, "a", maple), run_with(tmp_path, shared_data, "b", None, every=2)]
    result = standardize_runs(runs, tmp_path / "std")
    assert result["protocols"] == {"a|extraction:maple_accuracy": "faithful to maple-extraction",
                                   "b|extraction:maple_accuracy": "protocol not recorded"}
    assert result["not_like_for_like"]["extraction:maple_accuracy"][0].startswith("protocol not recorded for b")
    markdown = (tmp_path / "std" / "standardized.md").read_text()
    assert "- a on extraction:maple_accuracy: faithful to maple-extraction" in markdown
    assert "**extraction:maple_accuracy: not like for like**" in markdown


def test_head_tail_differences_say_where_their_bins_came_from(shared_data, tmp_path):
    """A head - tail difference drawn from a dataset whose bins stand in for MAPLE's pageview bins
    says so beside it; a dataset that recorded no construction protocol cannot vouch for its bins."""
    run = run_with(tmp_path, shared_data, "binned", ProtocolRecord("maple-extraction", REFERENCES["maple"]))
    results = json.loads((run / "results.json").read_text())
    per_bin = results["metrics"]["per_frequency_bin"]  # the numbers the note stands beside
    results["metrics"]["frequency_bin_differences"] = bin_differences(per_bin, ["maple_accuracy"])
    (run / "results.json").write_text(json.dumps(results))
    out = tmp_path / "report"
    build_report([run], out)
    assert "frequency bins of unknown provenance" in page(out)

    evidence = Deviation("frequency-evidence-counts", "pageviews", "T-REx evidence counts", "head/tail bins")
    results["dataset"]["construction_protocol"] = ProtocolRecord("lama-derived", REFERENCES["lama"], (evidence,)).block()
    (run / "results.json").write_text(json.dumps(results))
    build_report([run], out)
    assert "Head − tail, head − torso:</b> frequency bins are a stand-in for MAPLE's pageview bins (frequency-evidence-counts)" in page(out)
