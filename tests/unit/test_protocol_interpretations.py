"""Interpretations in the protocol record (kbench.protocol.v2): kbench's readings where the paper is
silent, kept apart from the deviations (a faithful run can have them), shown apart by every
renderer; a v1 block written before them still reads, with none."""

from __future__ import annotations

import pytest

from kbench.construct.protocol_section import render_protocol
from kbench.errors import UserError
from kbench.io import load_schema
from kbench.evaluate.engine import validate
from kbench.protocol import SCHEMA, Deviation, Interpretation, ProtocolRecord, comparison_differences, read_protocol
from kbench.report.protocols import block_html, block_lines, block_markdown

CASE = Interpretation("matching-case", "case is not mentioned", "case-insensitive", ("case kept",), "every correctness")
SENSITIVE = Interpretation("matching-case", "case is not mentioned", "case kept", ("case-insensitive",), "every correctness")
FEWSHOT = Deviation("fewshot", "zero-shot", "1 solved example", "every number")
V1_BLOCK = {"schema": "kbench.protocol.v1", "name": "maple-extraction", "reference": "MAPLE", "faithful": False,
            "deviations": [FEWSHOT.as_dict()]}


def test_an_old_v1_block_still_reads_with_no_interpretations():
    protocol = read_protocol({"protocol": V1_BLOCK}, "old/results.json")
    assert protocol.deviations == (FEWSHOT,) and protocol.interpretations == ()
    validate(V1_BLOCK, "protocol.v1.json")
    # a results envelope accepts either version
    assert load_schema("results.v2.json")["properties"]["protocol"] == {
        "oneOf": [{"$ref": "kbench/protocol.v2.json"}, {"$ref": "kbench/protocol.v1.json"}]}


def test_a_v2_block_round_trips_and_interpretations_keep_a_run_faithful():
    protocol = ProtocolRecord("maple-kee", "MAPLE", (), (CASE,))
    block = protocol.block()
    assert block["schema"] == SCHEMA == "kbench.protocol.v2" and block["faithful"] is True
    assert block["interpretations"] == [{"id": "matching-case", "paper": "case is not mentioned", "kbench": "case-insensitive",
                                         "alternatives": ["case kept"], "effect": "every correctness"}]
    assert ProtocolRecord.from_block(block, "r.json") == protocol
    validate(block, "protocol.v2.json")
    with pytest.raises(AssertionError, match="interpretations"):   # a v2 block must list its interpretations
        validate({k: v for k, v in block.items() if k != "interpretations"}, "protocol.v2.json")
    assert protocol.with_deviations([FEWSHOT]).interpretations == (CASE,)   # adding a deviation keeps them


@pytest.mark.parametrize(("change", "key"), [
    ({"interpretations": None}, "protocol.interpretations is missing"),
    ({"interpretations": [{"id": "x", "paper": "p", "kbench": "k", "effect": "e"}]}, "protocol.interpretations[0] must have"),
    ({"interpretations": [{**CASE.as_dict(), "alternatives": []}]}, "at least one other reading"),
    ({"interpretations": [{**CASE.as_dict(), "alternatives": "case kept"}]}, "alternatives must be a list"),
])
def test_a_malformed_interpretation_names_the_key(change, key):
    block = {**ProtocolRecord("m", "r", (), (CASE,)).block(), **change}
    with pytest.raises(UserError, match="r.json: ") as raised:
        ProtocolRecord.from_block(block, "r.json")
    assert key in str(raised.value)


def test_every_renderer_shows_interpretations_apart_from_deviations():
    protocol = ProtocolRecord("maple-extraction", "MAPLE", (FEWSHOT,), (CASE,))
    markdown = block_markdown(protocol)
    assert markdown.index("| fewshot |") < markdown.index("**Interpretations") < markdown.index("| matching-case |")
    assert "| matching-case | case is not mentioned | case-insensitive | case kept | every correctness |" in markdown
    assert block_lines(protocol) == ["1 deviation from maple-extraction", "  - fewshot: 1 solved example (touches every number)",
                                     "  ~ matching-case (interpretation; the paper is silent): case-insensitive"]
    html = block_html(ProtocolRecord("maple-extraction", "MAPLE", (), (CASE,)))
    assert html.startswith("<p class='ok'>") and "Interpretations" in html and "<td>case kept</td>" in html
    card = render_protocol(protocol)
    assert card.index("`fewshot`") < card.index("**Interpretations**") < card.index("`matching-case`")


def test_runs_that_read_a_silence_differently_are_not_like_for_like():
    insensitive, sensitive = ProtocolRecord("m", "r", (), (CASE,)), ProtocolRecord("m", "r", (), (SENSITIVE,))
    assert comparison_differences({"a": insensitive, "b": insensitive}) == []
    (line,) = comparison_differences({"a": insensitive, "b": sensitive})
    assert line.startswith("matching-case (the paper is silent) is read differently (a: case-insensitive; b: case kept)")
    # a v1 run records no reading: nothing to compare it on
    assert comparison_differences({"a": insensitive, "b": ProtocolRecord("m", "r")}) == []
