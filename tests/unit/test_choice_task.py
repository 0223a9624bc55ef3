"""The choice task (kbench/tasks/choice) on a tiny random model: its scores are the statements'
log-likelihoods computed here independently by a direct forward pass, per option, and its
numbers follow from them."""

from __future__ import annotations

import json

import pytest

import kbench
from kbench.errors import UserError
from kbench.tasks.choice import answers
from kbench.tasks.choice.metrics import predicted_index, prior_bias, rank_of, size_bucket, summary
from kbench.tasks.choice.statements import fill
from tests.dataset_folders import question_dataset

BORN, CAPITAL = "[X] was born in [Y] .", "The capital of [X] is [Y] ."
FACTS = [("P19", BORN, "Marie Curie", "Warsaw", "people"), ("P19", BORN, "Albert Einstein", "Ulm", "people"),
         ("P19", BORN, "Dante", "Florence", "people"), ("P36", CAPITAL, "France", "Paris", "places"),
         ("P36", CAPITAL, "Germany", "Berlin", "places"), ("P36", CAPITAL, "Italy", "Rome", "places"),
         ("P36", CAPITAL, "Spain", "Madrid", "places")]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    rows = [{"id": f"q{i}", "relation": r, "template": t, "subject": s, "object": o, "domain": d, "source": "trex"}
            for i, (r, t, s, o, d) in enumerate(FACTS)]
    return question_dataset(tmp_path_factory.mktemp("choice-ds"), rows)


@pytest.fixture(scope="module")
def direct(tiny_causal_dir):
    """Per statement text: its tokens' log-probs after the start token, from one plain forward pass."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_causal_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_causal_dir).eval()
    start = tokenizer.eos_token  # the tiny model has no BOS token

    def token_logprobs(text: str) -> tuple[list[int], list[float]]:
        ids = tokenizer(start + text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].float().log_softmax(-1)
        return ids, [logits[t - 1, ids[t]].item() for t in range(1, len(ids))]

    def scores(subject: str, template: str, candidate: str, option: str) -> float:
        statement = template.replace("[X]", subject).replace("[Y]", candidate)
        statement = statement[0].upper() + statement[1:]
        ids, per_token = token_logprobs(statement)
        if option == "sum":
            return sum(per_token)
        if option == "mean":
            return sum(per_token) / len(per_token)
        before = statement[: statement.index(candidate)].rstrip()  # answer tokens: those that " candidate" adds
        n_before = len(tokenizer(start + before, add_special_tokens=False)["input_ids"])
        n_with = len(tokenizer(start + before + " " + candidate, add_special_tokens=False)["input_ids"])
        return sum(per_token[n_before - 1 : n_with - 1])

    return scores


OPTIONS = [({}, "sum"), ({"reduction": "mean"}, "mean"), ({"score": "answer"}, "answer")]


@pytest.mark.parametrize(("options", "direct_option"), OPTIONS)
def test_ranking_is_the_argmax_of_the_log_likelihoods(tiny_causal_dir, dataset, direct, tmp_path, options, direct_option):
    result = kbench.evaluate("choice", dataset=dataset, model=str(tiny_causal_dir), out=tmp_path / "run", **options)
    spaces = result.metrics["answer_spaces"]
    assert spaces == {"P19": ["Warsaw", "Ulm", "Florence"], "P36": ["Paris", "Berlin", "Rome", "Madrid"]}
    for item in result.items.iter_rows(named=True):
        template = BORN if item["relation"] == "P19" else CAPITAL
        expected = [direct(item["subject"], template, c, direct_option) for c in spaces[item["relation"]]]
        assert item["scores"] == pytest.approx(expected, abs=1e-4)
        best = max(range(len(expected)), key=lambda i: (expected[i], -i))
        assert item["prediction"] == spaces[item["relation"]][best]
        assert item["correct"] == (item["prediction"] == item["object"])
        assert item["answer_space_size"] == len(expected)
    deviations = {d["id"] for d in result.results["protocol"]["deviations"]}
    expected_ids = {"not-bear-data", "answer-space-from-split", "start-token-eos"}
    expected_ids |= {"mean-reduction"} if direct_option == "mean" else set()
    expected_ids |= {"answer-tokens-only"} if direct_option == "answer" else set()
    assert deviations == expected_ids


def test_answer_space_file_limit_and_metrics(tiny_causal_dir, dataset, tmp_path):
    metadata = tmp_path / "metadata_relations.json"  # lm-pub-quiz's form, with a duplicate label
    labels = ["Ulm", "Warsaw", "Florence", "Ulm", "Rome"]
    metadata.write_text(json.dumps({"P19": {"templates": [BORN], "answer_space_labels": labels},
                                    "P36": ["Rome", "Paris", "Berlin", "Madrid"]}))
    result = kbench.evaluate("choice", dataset=dataset, model=str(tiny_causal_dir), out=tmp_path / "run",
                             answer_space=str(metadata), limit=5, top_k=(2,))
    rows = result.items.to_dicts()
    assert len(rows) == 5 and result.metrics["answer_spaces"]["P19"] == ["Ulm", "Warsaw", "Florence", "Rome"]
    assert {d["id"] for d in result.results["protocol"]["deviations"]} == {"not-bear-data", "instance-sample", "start-token-eos"}
    overall = result.metrics["overall"]
    assert overall["accuracy"]["n"] == 5 and overall["accuracy"]["k"] == sum(r["correct"] for r in rows)
    assert overall["p_at_2"]["k"] == sum(r["gold_rank"] <= 2 for r in rows)
    assert set(result.headline) == {"accuracy", "accuracy_macro", "p_at_2"}
    assert set(result.metrics["per_domain"]) == {r["domain"] for r in rows}
    assert set(result.metrics["per_answer_space_size"]) == {"1-10"}
    wrong = [r for r in rows if not r["correct"]]
    assert sum(e["wrong"] for e in result.metrics["prior_bias"].values()) == len(wrong)


def test_masked_models_are_refused_with_the_reason(tiny_masked_dir, dataset, tmp_path):
    with pytest.raises(UserError, match="task choice needs the capability 'loglikelihood'"):
        kbench.evaluate("choice", dataset=dataset, model=str(tiny_masked_dir), out=tmp_path / "run")


def test_statements_are_cut_where_the_candidate_starts():
    s = fill("[X] was born in [Y] .", "dante", "Florence")
    assert (s.prefix, s.answer, s.suffix) == ("Dante was born in", " Florence", " .")
    first = fill("[Y] is the capital of [X] .", "France", "paris")
    assert (first.prefix, first.answer, first.text) == ("", "Paris", "Paris is the capital of France .")


def test_answer_space_errors_name_the_file_and_the_item(tmp_path):
    bad = tmp_path / "spaces.json"
    bad.write_text(json.dumps({"P19": []}))
    with pytest.raises(UserError, match=r"spaces.json \[P19\]"):
        answers.from_file(bad)
    rows = [{"id": "q1", "relation": "P19", "object": "Ulm"}]
    with pytest.raises(UserError, match="gold object 'Ulm' of item q1 is not in the answer space of P19"):
        answers.check_items([{**r, "template": "[X] is [Y] ."} for r in rows], {"P19": ("Warsaw",)}, "f.json", "t.parquet")
    with pytest.raises(UserError, match="t.parquet: the template '\\[X\\] is born' of item q1 has no \\[Y\\]"):
        answers.check_items([{**r, "template": "[X] is born"} for r in rows], {"P19": ("Ulm",)}, "f.json", "t.parquet")


def test_ranks_ties_buckets_and_the_prior():
    assert predicted_index([-1.0, -0.5, -0.5]) == 1
    assert [rank_of([-1.0, -0.5, -0.5], i) for i in range(3)] == [3, 1, 2]  # ties: answer-space order
    assert [size_bucket(n) for n in (2, 10, 11, 200, 201)] == ["1-10", "1-10", "11-50", "51-200", "201+"]
    rows = [{"relation": "P19", "correct": c, "prediction": p, "gold_rank": r, "answer_space_size": 4}
            for c, p, r in [(True, "Ulm", 1), (False, "London", 2), (False, "London", 4), (False, "Paris", 3)]]
    assert prior_bias(rows)["P19"] == {"wrong": 3, "items": 4, "answers": [
        {"answer": "London", "count": 2, "share_of_wrong": 2 / 3}, {"answer": "Paris", "count": 1, "share_of_wrong": 1 / 3}]}
    numbers = summary(rows, (2,))
    assert numbers["overall"]["accuracy"]["value"] == 0.25 and numbers["overall"]["p_at_2"]["value"] == 0.5
    assert numbers["chance_accuracy"] == 0.25 and numbers["per_domain"] == {}
