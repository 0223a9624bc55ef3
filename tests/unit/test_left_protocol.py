"""LEFT's protocol block (kbench/tasks/truefalse/protocol.py) and the paper's prior: a model
fine-tuned on BoolQ (kbench/models/training/boolq.py), here a tiny real fine-tune of the tiny
random Llama on a handful of BoolQ-shaped rows, then judged by `kbench evaluate truefalse`."""

from __future__ import annotations

import json

import pytest

import kbench
from kbench.errors import UserError
from kbench.tasks.truefalse.protocol import left_protocol
from kbench.tasks.truefalse.task import TrueFalseSettings
from kbench.models.training.boolq import MARKER, finetune_boolq
from kbench.tasks.truefalse.prompt import truefalse_prompt
from tests.dataset_folders import left_dataset as build_left_dataset

# BoolQ's shape (question, answer), written here: no download
BOOLQ_ROWS = [
    {"question": "is paris the capital of france", "answer": True},
    {"question": "is berlin the capital of italy", "answer": False},
    {"question": "was marie curie born in warsaw", "answer": True},
    {"question": "is nokia a company from japan", "answer": False},
    {"question": "is rome the capital of italy", "answer": True},
    {"question": "was albert einstein born in madrid", "answer": False},
]


@pytest.fixture(scope="module")
def left_dataset(shared_data, tmp_path_factory):
    return build_left_dataset(shared_data, tmp_path_factory.mktemp("left-protocol"))


def ids(**settings) -> list[str]:
    return [d.id for d in left_protocol(TrueFalseSettings(**settings), 4).deviations]


def test_each_setting_names_its_procedure_and_records_the_zero_shot_judge():
    block = left_protocol(TrueFalseSettings(), 10).block()
    assert block["name"] == "left-prior" and block["faithful"] is False and "Go to School" in block["reference"]
    assert [d["id"] for d in block["deviations"]] == ["zero-shot-judge"]
    assert "BoolQ" in block["deviations"][0]["paper"] and "logP(' True')" in block["deviations"][0]["kbench"]
    assert ids(setting="open-book", retriever="sbert") == ["zero-shot-judge", "sbert-chapter-scope", "passage-cut"]
    assert ids(setting="open-book", retriever="gold") == ["zero-shot-judge", "gold-paragraph-by-overlap", "passage-cut"]
    assert ids(limit=4) == ["zero-shot-judge", "sample-limit"]
    assert left_protocol(TrueFalseSettings(setting="open-book", retriever="sbert"), 4).name == "left-open-book"


def test_open_book_sbert_records_its_chapter_scope_and_its_readings():
    protocol = left_protocol(TrueFalseSettings(setting="open-book", retriever="sbert"), 4)
    scope = next(d for d in protocol.deviations if d.id == "sbert-chapter-scope")
    assert "statement's own chapter" in scope.kbench and "hint" in scope.kbench and "textbook" in scope.paper
    assert [i.id for i in protocol.interpretations] == ["sbert-checkpoint", "sbert-query"]
    assert all(i.alternatives for i in protocol.interpretations)
    # goldIR retrieves nothing: neither the scope nor the sBERT readings
    gold = left_protocol(TrueFalseSettings(setting="open-book", retriever="gold"), 4)
    assert "sbert-chapter-scope" not in [d.id for d in gold.deviations] and gold.interpretations == ()


def test_closed_book_records_its_zero_shot_judge(tmp_path):
    closed = left_protocol(TrueFalseSettings(setting="closed-book", checkpoint=str(tmp_path)), 4)
    assert closed.name == "left-closed-book" and [d.id for d in closed.deviations] == ["zero-shot-judge"]


def test_a_boolq_checkpoint_must_be_a_causal_model_folder(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        TrueFalseSettings(boolq_checkpoint=str(tmp_path / "missing"))
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "config.json").write_text(json.dumps({"architectures": ["BertForSequenceClassification"]}))
    with pytest.raises(ValueError, match="sequence-classification"):
        TrueFalseSettings(boolq_checkpoint=str(tmp_path / "cls"))
    with pytest.raises(ValueError, match="prior and open-book"):
        TrueFalseSettings(setting="closed-book", checkpoint=str(tmp_path), boolq_checkpoint=str(tmp_path / "cls"))


def test_the_boolq_fine_tuned_prior_replaces_the_zero_shot_entry(tiny_causal_dir, left_dataset, tmp_path):
    folder = finetune_boolq(str(tiny_causal_dir), BOOLQ_ROWS, tmp_path / "tiny-boolq", prompt=truefalse_prompt, epochs=4,
                            lr=1e-3, batch_size=3,
                            source="six inline rows")
    record = json.loads((folder / MARKER).read_text())
    assert record["questions"] == 6 and record["base_model"] == str(tiny_causal_dir) and not record["passages"]
    assert record["train_loss"][-1] < record["train_loss"][0]   # it learned something from the six rows
    result = kbench.evaluate("truefalse", dataset=left_dataset, model=str(tiny_causal_dir), boolq_checkpoint=str(folder),
                             limit=4, out=tmp_path / "prior-boolq", use_cache=False)
    protocol = result.results["protocol"]
    assert protocol["name"] == "left-prior"
    assert "zero-shot-judge" not in [d["id"] for d in protocol["deviations"]]
    # six questions are not BoolQ's 9,427: that is left to say, beside the --limit this test asked for
    assert [d["id"] for d in protocol["deviations"]] == ["boolq-subset", "sample-limit"]
    assert "6 questions from six inline rows" in protocol["deviations"][0]["kbench"]
    judge = result.metrics["judge"]
    assert judge["kind"] == "boolq-fine-tuned" and judge["boolq"]["rows_sha256"] == record["rows_sha256"]
    assert result.results["model"]["name"] == str(folder)   # the fine-tune is the judged model
    zero_shot = kbench.evaluate("truefalse", dataset=left_dataset, model=str(tiny_causal_dir), limit=4,
                                out=tmp_path / "prior", use_cache=False)
    assert [d["id"] for d in zero_shot.results["protocol"]["deviations"]] == ["zero-shot-judge", "sample-limit"]
    assert zero_shot.metrics["judge"] == {"kind": "zero-shot"}
    margins = [result.items["margin"].to_list(), zero_shot.items["margin"].to_list()]
    assert margins[0] != margins[1]   # the prior comes from the fine-tuned weights


def test_a_folder_without_its_boolq_record_is_named_as_such(tiny_causal_dir, tmp_path):
    folder = finetune_boolq(str(tiny_causal_dir), BOOLQ_ROWS[:2], tmp_path / "ft", prompt=truefalse_prompt, epochs=1)
    (folder / MARKER).unlink()
    assert ids(boolq_checkpoint=str(folder)) == ["boolq-training-unrecorded"]
    (folder / MARKER).write_text("{")
    with pytest.raises(UserError, match="boolq.json"):
        TrueFalseSettings(boolq_checkpoint=str(folder))
    with pytest.raises(UserError, match="answer"):
        finetune_boolq(str(tiny_causal_dir), [{"question": "is it", "answer": "yes"}], tmp_path / "bad", prompt=truefalse_prompt)
