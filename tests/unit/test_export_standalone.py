"""The matching code copied into exported tasks is kbench's, and behaves as kbench's does."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from kbench.export.standalone import MATCHING_IMPORTS, matching_source
from kbench.metrics import matching


def _standalone() -> dict:
    namespace: dict = {}
    exec(compile(f"from __future__ import annotations\n{MATCHING_IMPORTS}\n{matching_source()}", "<export>", "exec"),
         namespace)
    return namespace


COPY = _standalone()
TEXT = st.text(alphabet=st.sampled_from(string.ascii_letters + string.digits + " .,-'\n" + "ÉéßøŁ北京İı"), max_size=12)


def test_the_copy_needs_nothing_from_kbench():
    assert "kbench" not in matching_source().replace("kbench.metrics.matching at export time", "")
    assert {"maple_correct", "exact_match", "normalize_for_matching"} <= set(COPY)


@settings(max_examples=400, deadline=None)
@given(prediction=TEXT, answers=st.lists(TEXT, max_size=3), case_sensitive=st.booleans())
def test_copy_agrees_with_kbench(prediction, answers, case_sensitive):
    for name in ("maple_correct", "exact_match"):
        ours = getattr(matching, name)(prediction, answers, case_sensitive=case_sensitive)
        assert COPY[name](prediction, answers, case_sensitive=case_sensitive) == ours


def test_known_answers():
    assert COPY["maple_correct"]("the city of Paris", ["Paris"]) and not COPY["exact_match"]("the city of Paris", ["Paris"])
    assert COPY["exact_match"]("paris.", ["Paris"]) and not COPY["maple_correct"]("Lyon", ["Paris", "City of Light"])
    assert not COPY["maple_correct"]("anything", ["..."])  # answers normalising to "" match nothing
