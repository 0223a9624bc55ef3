"""The protocol block of `evaluate extraction` and `evaluate qa` (issue #29, docs/protocol.md): the
paper's defaults give `faithful: true` (MAPLE's: a chat model; the tiny model has no chat template, so
its plain question is recorded); each departing option adds exactly its entry, made by the code path
that departs; MAPLE's silences are interpretations, apart. Real runs of the tiny models through the engine."""

from __future__ import annotations

import pytest

from kbench.evaluate.engine import evaluate, validate
from kbench.tasks.extraction.task import Extraction, ExtractionSettings
from kbench.tasks.kee.task import KeeSettings, run_protocol
from kbench.tasks.qa.task import KnowledgeUpdateQA, QASettings
from kbench.evaluate.task import RunContext, Summary, Task
from kbench.models.loading import load_model
from kbench.models.runner import ModelRunner
from kbench.protocol import REFERENCES, ProtocolRecord
from tests.dataset_folders import evolving_dataset
from tests.unit.test_extraction import write_dataset_folder


@pytest.fixture(scope="module")
def causal(tiny_causal_dir):
    return ModelRunner(load_model(str(tiny_causal_dir)))


@pytest.fixture(scope="module")
def masked(tiny_masked_dir):
    return ModelRunner(load_model(str(tiny_masked_dir)))


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    return write_dataset_folder(tmp_path_factory.mktemp("facts"))


@pytest.fixture(scope="module")
def evolving(tmp_path_factory):
    return evolving_dataset(tmp_path_factory.mktemp("evo"))


def _block(task: Task, model, dataset, out, settings) -> dict:
    results = evaluate(task, RunContext(settings=settings, dataset=dataset, model=model, run_dir=out))
    validate(results, "results.v2.json")
    block = results["protocol"]
    assert ProtocolRecord.from_block(block, "results.json").faithful is block["faithful"]  # reads back
    return block


def _ids(block: dict) -> list[str]:
    return [d["id"] for d in block["deviations"]]


def test_maple_extraction_plain_question_is_recorded_as_kee_records_it(causal, facts, tmp_path):
    # MAPLE's instruct models answer through their chat template: a plain question prompt departs,
    # in extraction as in KEE (the same id and text)
    block = _block(Extraction(), causal, facts, tmp_path / "run", ExtractionSettings(prompt="question"))
    assert block["name"] == "maple-extraction" and block["reference"] == REFERENCES["maple"]
    assert block["faithful"] is False and _ids(block) == ["prompt-question-form"]
    kee, _ = run_protocol(KeeSettings(techniques=("baseline",), prompt="question"), False, None, {})
    assert block["deviations"][0]["paper"] == kee.deviations[0].paper
    # where MAPLE is silent: interpretations, apart from the deviations
    readings = {i["id"]: i for i in block["interpretations"]}
    assert set(readings) == {"matching-case", "question-wording"}
    assert readings["matching-case"]["kbench"].startswith("case-insensitive") and readings["matching-case"]["alternatives"]


@pytest.mark.parametrize(
    ("options", "entry", "said"),
    [
        ({"prompt": "cloze"}, "prompt-form", "--prompt cloze"),
        ({"prompt": "question", "fewshot": 1}, "fewshot", "1 solved example from the train split"),
        ({"prompt": "question", "limit": 4}, "sample-limit", "4 of the 9 items (--limit 4, --seed 0)"),
    ],
)
def test_each_maple_extraction_option_adds_exactly_its_entry(causal, facts, tmp_path, options, entry, said):
    block = _block(Extraction(), causal, facts, tmp_path / "run", ExtractionSettings(max_new_tokens=2, **options))
    question = ["prompt-question-form"] if options["prompt"] == "question" else []
    assert block["faithful"] is False and _ids(block) == [entry, *question]
    assert said in block["deviations"][0]["kbench"] and block["deviations"][0]["paper"]


def test_case_sensitive_matching_is_the_other_reading_not_a_deviation(causal, facts, tmp_path):
    block = _block(Extraction(), causal, facts, tmp_path / "run", ExtractionSettings(prompt="question", case_sensitive=True))
    assert _ids(block) == ["prompt-question-form"]
    case = next(i for i in block["interpretations"] if i["id"] == "matching-case")
    assert "--case-sensitive" in case["kbench"] and case["alternatives"][0].startswith("case-insensitive")


def test_a_limit_that_keeps_every_item_is_no_deviation(causal, facts, tmp_path):
    block = _block(Extraction(), causal, facts, tmp_path / "run", ExtractionSettings(prompt="question", limit=50))
    assert _ids(block) == ["prompt-question-form"]   # no sample-limit


def test_lama_over_lamas_common_vocabulary_is_faithful(masked, facts, tmp_path, shared_data):
    vocab = shared_data / "lama_trex" / "common_vocab_cased.txt"
    block = _block(Extraction(), masked, facts, tmp_path / "run", ExtractionSettings(protocol="lama", common_vocab=str(vocab)))
    assert block["name"] == "lama-strict-p@1" and block["reference"] == REFERENCES["lama"]
    assert block["faithful"] is True and block["deviations"] == []
    # the same words in another order, with other line endings, are still LAMA's list
    words = vocab.read_text(encoding="utf-8").split("\n")
    shuffled = tmp_path / "common_vocab_crlf.txt"
    shuffled.write_bytes("\r\n".join(reversed(words)).encode("utf-8"))
    settings = ExtractionSettings(protocol="lama", common_vocab=str(shuffled))
    assert _block(Extraction(), masked, facts, tmp_path / "again", settings)["faithful"] is True


def test_lama_departures(masked, causal, facts, tmp_path):
    full = _block(Extraction(), masked, facts, tmp_path / "full", ExtractionSettings(protocol="lama"))
    assert _ids(full) == ["no-common-vocab"] and "full vocabulary" in full["deviations"][0]["kbench"]
    own = tmp_path / "words.txt"
    own.write_text("Paris\nBerlin\nRome\n")
    other = _block(Extraction(), masked, facts, tmp_path / "own", ExtractionSettings(protocol="lama", common_vocab=str(own)))
    assert _ids(other) == ["common-vocab-not-lama"] and "3 words" in other["deviations"][0]["kbench"]
    # a causal LM asked questions, with examples, on a sample: each its entry, in the order applied
    settings = ExtractionSettings(protocol="lama", prompt="question", fewshot=1, limit=5)
    several = _block(Extraction(), causal, facts, tmp_path / "several", settings)
    assert _ids(several) == ["sample-limit", "prompt-form", "fewshot", "no-common-vocab"]


def test_qa_paper_defaults_are_faithful(causal, evolving, tmp_path):
    block = _block(KnowledgeUpdateQA(), causal, evolving, tmp_path / "qa", QASettings(max_new_tokens=2))
    assert block["name"] == "evolvingqa" and block["reference"] == REFERENCES["evolvingqa"]
    assert block["faithful"] is True and block["deviations"] == []
    # the paper states how to score an answer, not how to decode it: kbench's reading, apart
    (decoding,) = block["interpretations"]
    assert decoding["id"] == "answer-decoding" and "after 2 new tokens" in decoding["kbench"] and decoding["alternatives"]


@pytest.mark.parametrize(
    ("options", "entry"),
    [({"metric": "card"}, "card-scorer"), ({"fewshot": 1}, "fewshot"), ({"limit": 2}, "sample-limit")],
)
def test_each_qa_option_adds_exactly_its_entry(causal, evolving, tmp_path, options, entry):
    block = _block(KnowledgeUpdateQA(), causal, evolving, tmp_path / "qa", QASettings(max_new_tokens=2, **options))
    assert block["faithful"] is False and _ids(block) == [entry]


def test_qa_chat_prompt_is_a_deviation(causal, evolving, tmp_path):
    tokenizer = causal.tokenizer
    tokenizer.chat_template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<assistant>"
    try:
        instruct = ModelRunner(causal.loaded)  # a model reads its chat template when it is opened (`ModelInfo`)
        block = _block(KnowledgeUpdateQA(), instruct, evolving, tmp_path / "qa", QASettings(max_new_tokens=2, prompt="chat"))
    finally:
        tokenizer.chat_template = None
    assert _ids(block) == ["prompt-form"] and "chat template" in block["deviations"][0]["kbench"]


class _Silent(Extraction):
    """A task that forgets to name its protocol."""

    def aggregate(self, ctx, state, rows) -> Summary:
        summary = super().aggregate(ctx, state, rows)
        return Summary(summary.headline, summary.metrics)


def test_the_engine_refuses_a_task_without_protocol(causal, facts, tmp_path):
    with pytest.raises(AssertionError, match="aggregate returned no protocol"):
        evaluate(_Silent(), RunContext(settings=ExtractionSettings(limit=2), dataset=facts, model=causal, run_dir=tmp_path / "r"))
    assert not (tmp_path / "r" / "results.json").exists()
