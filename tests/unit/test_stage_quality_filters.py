"""quality_filters on inline triplets with outcomes checked by hand."""

from __future__ import annotations

import polars as pl

from kbench.construct.context import StageContext
from kbench.construct.stage import stage_registry


def _run(tmp_path, rows, **params):
    cls = stage_registry()["quality_filters"]
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path, seed=0)
    out = cls(cls.Params(**params), ctx).run(pl.DataFrame(rows).lazy())
    kept, rejected = out.kept.collect(), out.rejected.collect()
    assert kept.height + rejected.height == len(rows)
    return kept["subject"].to_list(), dict(zip(rejected["subject"], rejected["reason"]))


ROWS = [
    {"subject": "Graham Land", "relation": "P30", "relation_label": "continent", "object": "Antarctica"},
    {"subject": "hot", "relation": "P461", "relation_label": "opposite of", "object": "cold"},
    {"subject": "Mars", "relation": None, "relation_label": "Different From ", "object": "Mars bar"},
    {"subject": "Chelopech Hill", "relation": "P138", "relation_label": "named after", "object": "Chelopech"},
    {"subject": "The Wall", "relation": "P175", "relation_label": "performer", "object": "Pink Floyd"},
    {"subject": "Bank of England", "relation": "P17", "relation_label": "country", "object": "England"},
    {"subject": "X", "relation": "P1", "relation_label": "motto", "object": "one two three four five six seven eight nine"},
    {"subject": "Q", "relation": "P2", "relation_label": "r", "object": None},
]


def test_default_filters(tmp_path):
    kept, dropped = _run(tmp_path, ROWS)
    # "The Wall"/"Pink Floyd" share only the stopword-free token set {} -> kept; a null object is not judged here
    assert kept == ["Graham Land", "The Wall", "Q"]
    assert dropped == {"hot": "uninformative_relation", "Mars": "uninformative_relation",
                       "Chelopech Hill": "lexical_overlap", "Bank of England": "lexical_overlap",
                       "X": "object_too_long"}


def test_thresholds_are_configurable(tmp_path):
    rows = [{"subject": "New York Yankees", "relation": "P1", "relation_label": "r", "object": "York Stadium"}]
    # shared {york}: 1 / min(3, 2) = 0.5
    assert _run(tmp_path, rows, max_token_overlap=0.5)[0] == ["New York Yankees"]
    assert _run(tmp_path, rows, max_token_overlap=0.4)[1] == {"New York Yankees": "lexical_overlap"}
    assert _run(tmp_path, ROWS[1:2], uninformative_relations=[])[0] == ["hot"]
