"""`evaluate extraction` on a tiny random model and a small inline dataset folder."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from kbench.errors import UserError
from kbench.evaluate.engine import evaluate, validate
from kbench.tasks.extraction.task import Extraction, ExtractionSettings
from kbench.evaluate.prompts import build_probes, require_chat
from kbench.evaluate.task import RunContext
from kbench.models.loading import load_model
from kbench.models.prompt import Prompt
from kbench.models.runner import ModelRunner

FACTS = [  # relation, template, subject, object, bin
    ("P36", "The capital of [X] is [Y] .", "France", "Paris", "head"),
    ("P36", "The capital of [X] is [Y] .", "Germany", "Berlin", "head"),
    ("P36", "The capital of [X] is [Y] .", "Italy", "Rome", "torso"),
    ("P36", "The capital of [X] is [Y] .", "Spain", "Madrid", "tail"),
    ("P19", "[X] was born in [Y] .", "Marie Curie", "Warsaw", "torso"),
    ("P19", "[X] was born in [Y] .", "Albert Einstein", "Ulm", "tail"),
    ("P19", "[X] was born in [Y] .", "Dante", "Florence", None),
    ("P495", "[X] is a company from [Y] .", "Toyota", "Japan", "head"),
    ("P495", "[X] is a company from [Y] .", "Nokia", "Finland", "torso"),
]


def _row(i: int, fact, split: str) -> dict:
    relation, template, subject, obj, bin_ = fact
    cloze = template.split("[Y]")[0].replace("[X]", subject).strip()
    return {"id": f"{split}-{i}", "relation": relation, "relation_label": relation, "template": template,
            "subject": subject, "subject_id": None, "object": obj, "object_id": None, "source": "inline",
            "evidence_count": 1, "subject_aliases": [], "object_aliases": [obj.lower()], "answers": [obj, obj.lower()],
            "prompt_cloze": cloze, "prompt_masked": template.replace("[X]", subject).replace("[Y]", "[MASK]"),
            "question": f"What is the {relation} of {subject}?", "frequency": 1.0, "frequency_bin": bin_, "split": split}


def write_dataset_folder(root: Path, facts=FACTS) -> Path:
    folder = root / "data" / "default"
    folder.mkdir(parents=True)
    pl.DataFrame([_row(i, f, "test") for i, f in enumerate(facts)]).write_parquet(folder / "test.parquet")
    train = [_row(i, f, "train") for i, f in enumerate(reversed(facts))]
    pl.DataFrame(train).write_parquet(folder / "train.parquet")
    return root


@pytest.fixture(scope="module")
def causal(tiny_causal_dir):
    return load_model(str(tiny_causal_dir))


@pytest.fixture()
def dataset(tmp_path) -> Path:
    return write_dataset_folder(tmp_path / "ds")


def _results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def run_extraction(loaded, runner, dataset: Path, out: Path, settings: ExtractionSettings) -> dict:
    return evaluate(Extraction(), RunContext(settings=settings, dataset=dataset, model=runner, run_dir=out))


def value(estimate: dict) -> float:
    return estimate["value"]


def test_outputs_aggregates_and_known_facts(causal, tmp_path):
    # Make two facts "known": their object is what the tiny model greedily says.
    runner = ModelRunner(causal)
    facts = list(FACTS)
    for i in (0, 4):
        cloze = facts[i][1].split("[Y]")[0].replace("[X]", facts[i][2]).strip()
        said = runner.generate([cloze], max_new_tokens=3, stop=["\n", ". ", ","])[0].strip()
        assert said, "the tiny model must say something for this test to mean anything"
        facts[i] = (*facts[i][:3], said, facts[i][4])
    dataset = write_dataset_folder(tmp_path / "ds", facts)
    out = tmp_path / "run"
    results = run_extraction(causal, runner, dataset, out, ExtractionSettings(max_new_tokens=3))
    validate(results, "results.v2.json")
    assert results == _results(out)
    items = pl.read_parquet(out / "items.parquet")
    assert items["id"].to_list() == [f"test-{i}" for i in range(len(FACTS))]
    assert items.filter(pl.col("correct"))["id"].to_list() == ["test-0", "test-4"]
    metrics = results["metrics"]
    accuracy = metrics["overall"]["maple_accuracy"]
    assert (accuracy["n"], accuracy["k"], accuracy["value"]) == (9, 2, pytest.approx(2 / 9))
    from kbench.metrics.uncertainty import wilson
    assert (accuracy["ci_low"], accuracy["ci_high"]) == wilson(2, 9)
    assert results["headline"]["maple_accuracy"] == accuracy
    assert "lama_p_at_1" not in metrics["overall"] and "first_token_p1_macro" in results["headline"]
    assert value(metrics["per_relation"]["P36"]["maple_accuracy"]) == pytest.approx(1 / 4)
    assert set(metrics["per_frequency_bin"]) == {"head", "torso", "tail", "unbinned"}
    assert metrics["per_frequency_bin"]["unbinned"]["maple_accuracy"]["n"] == 1
    from kbench.metrics.uncertainty import difference_unpaired
    bins = metrics["per_frequency_bin"]
    for contrast, other in (("head - tail", "tail"), ("head - torso", "torso")):
        got = metrics["frequency_bin_differences"][contrast]["maple_accuracy"]
        head, low = bins["head"]["maple_accuracy"], bins[other]["maple_accuracy"]
        assert got == difference_unpaired(head["k"], head["n"], low["k"], low["n"]) and got["paired"] is False
        assert results["headline"][f"maple_accuracy {contrast}"] == got
    assert "mean_gold_logprob" not in metrics["frequency_bin_differences"]["head - tail"]   # a mean has no Newcombe interval
    assert metrics["stop"] == ["\n", ". ", ","] and set(metrics["per_source"]) == {"inline"}
    known = pl.read_parquet(out / "known_facts.parquet")
    assert known["id"].to_list() == ["test-0", "test-4"] and known["correct"].all()
    assert {"subject", "object", "answers", "prompt_cloze", "gold_rank", "prediction"} <= set(known.columns)
    assert len((out / "items.jsonl").read_text().splitlines()) == 9


def test_resume_computes_only_unfinished_items(causal, dataset, tmp_path):
    out = tmp_path / "run"
    settings = ExtractionSettings(max_new_tokens=2)
    first = run_extraction(causal, ModelRunner(causal), dataset, out, settings)
    first_items = (out / "items.parquet").read_bytes()
    journal = out / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    assert len(lines) == 1   # 9 items are one unit
    journal.write_text(lines[0][:40])  # a crash in the middle of the unit's line
    seen: list[int] = []   # prompts per prefill: tokens at position 0 that are not padding
    pad = ModelRunner(causal).pad_id
    handle = causal.model.model.register_forward_pre_hook(
        lambda m, a, kw: seen.append(int(((kw["position_ids"] == 0) & (kw["input_ids"] != pad)).sum()))
        if kw["input_ids"].shape[1] > 1 else None, with_kwargs=True)
    try:
        again = run_extraction(causal, ModelRunner(causal), dataset, out, settings)
    finally:
        handle.remove()
    assert sum(seen) == 9  # the unfinished unit is recomputed whole, one prefill per item
    strip = lambda r: {k: v for k, v in r.items() if k != "timing"}  # noqa: E731
    assert strip(again) == strip(first)
    assert (out / "items.parquet").read_bytes() == first_items


def test_other_settings_refuse_the_same_run_dir(causal, dataset, tmp_path):
    out = tmp_path / "run"
    run_extraction(causal, ModelRunner(causal), dataset, out, ExtractionSettings(max_new_tokens=2, limit=3))
    with pytest.raises(UserError, match="differs in: settings"):
        run_extraction(causal, ModelRunner(causal), dataset, out, ExtractionSettings(max_new_tokens=2, limit=4))


def test_limit_is_a_seeded_sample(causal, dataset, tmp_path):
    ids = {}
    for seed in (0, 0, 1):
        out = tmp_path / f"run-{seed}-{len(ids)}"
        run_extraction(causal, ModelRunner(causal), dataset, out, ExtractionSettings(limit=4, seed=seed, max_new_tokens=1))
        ids.setdefault(seed, []).append(pl.read_parquet(out / "items.parquet")["id"].to_list())
    assert ids[0][0] == ids[0][1] and len(ids[0][0]) == 4
    assert ids[1][0] != ids[0][0]


def test_prompt_forms_and_fewshot(causal, dataset):
    rows = pl.read_parquet(dataset / "data/default/test.parquet").to_dicts()
    train = pl.read_parquet(dataset / "data/default/train.parquet").to_dicts()
    cloze = build_probes(rows[:1], "cloze", "causal")[0]
    assert (cloze.prompt, cloze.gold) == (Prompt("The capital of France is"), " Paris")
    question = build_probes(rows[:1], "question", "causal")[0]
    assert question.prompt.text.endswith("Question: What is the P36 of France?\nAnswer:")
    shots = build_probes(rows[:1], "cloze", "causal", fewshot=2, train_rows=train, seed=3)[0]
    examples = shots.prompt.text.splitlines()[:-1]
    assert len(examples) == 2 and all(e.startswith("The capital of") and "France" not in e for e in examples)
    assert shots == build_probes(rows[:3], "cloze", "causal", fewshot=2, train_rows=train, seed=3)[0]
    chat = build_probes(rows[:1], "chat", "causal", fewshot=1, train_rows=train)[0]
    assert [m.role for m in chat.prompt.messages] == ["user", "assistant", "user"] and chat.gold == "Paris"
    plain = ModelRunner(causal)
    with pytest.raises(UserError, match="chat template"):
        require_chat(plain.info)
    with pytest.raises(UserError, match="chat template"):
        plain.render(chat.prompt)
    tok = causal.tokenizer
    tok.chat_template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<assistant>"
    try:
        instruct = ModelRunner(causal)
        text = instruct.render(chat.prompt)
    finally:
        tok.chat_template = None
    assert instruct.info.chat and instruct.info.prefills_reply and instruct.info.chat_template_sha256
    assert text.startswith("<user>") and text.endswith("<assistant>") and text.count("<assistant>") == 2


def test_lama_protocol_on_a_masked_lm(tiny_masked_dir, dataset, tmp_path):
    masked = load_model(str(tiny_masked_dir))
    vocab = tmp_path / "common_vocab.txt"
    vocab.write_text("Paris\nBerlin\nRome\nWarsaw\nJapan\n")
    settings = ExtractionSettings(protocol="lama", common_vocab=str(vocab))
    results = run_extraction(masked, ModelRunner(masked), dataset, tmp_path / "run", settings)
    tok = masked.tokenizer
    single = [f[3] for f in FACTS if len(tok(f[3], add_special_tokens=False)["input_ids"]) == 1]
    kept = [o for o in single if o in vocab.read_text().split()]
    assert results["headline"]["lama_p_at_1"]["n"] == len(kept)
    assert results["metrics"]["protocol_drops"]["not_in_common_vocab"] == 4  # Madrid, Ulm, Florence, Finland
    items = pl.read_parquet(tmp_path / "run/items.parquet")
    assert items["gold_rank"].max() <= 5  # ranked among the 5 vocabulary words only
    assert (items["correct"] == (items["gold_rank"] == 1)).all()
    overall = results["metrics"]["overall"]   # nothing generated: no MAPLE / exact number under lama
    assert "maple_accuracy" not in overall and "exact_accuracy" not in overall and "first_token_p1_macro" not in overall
    with pytest.raises(UserError, match="extraction .--protocol maple. needs the capability 'generate'"):  # a masked LM
        run_extraction(masked, ModelRunner(masked), dataset, tmp_path / "run2", ExtractionSettings())

