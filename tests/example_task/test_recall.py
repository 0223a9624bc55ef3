"""The recall task end to end through the real CLI, on the tiny random model: the envelope and its
metrics against the task's schema.json, a rerun that computes nothing, a bad flag named."""

import json

from kbench.cli.main import main
from tests.dataset_folders import FACTS, fact_rows, question_dataset


def kbench(*args: str) -> int:
    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_recall(tiny_causal_dir, tmp_path, capsys):
    dataset = question_dataset(tmp_path / "ds", fact_rows(FACTS))
    out = tmp_path / "run"
    args = ["evaluate", "recall", "--dataset", str(dataset), "--model", str(tiny_causal_dir), "--out", str(out)]
    assert kbench(*args, "--max-new-tokens", "2") == 0
    results = json.loads((out / "results.json").read_text())
    assert results["task"] == "recall" and results["items"]["count"] == len(FACTS)
    assert results["metrics"]["accuracy"]["n"] == len(FACTS) and results["settings"]["max_new_tokens"] == 2
    assert "accuracy" in capsys.readouterr().out  # the headline table

    assert kbench(*args, "--max-new-tokens", "2") == 0
    assert json.loads((out / "results.json").read_text())["timing"]["items_computed"] == 0

    assert kbench(*args, "--max-new-tokens", "0") == 2
    assert "--max-new-tokens" in capsys.readouterr().err


def test_recall_help(capsys):
    assert kbench("evaluate", "recall", "--help") == 0
    shown = capsys.readouterr().out
    assert "Complete each fact's cloze prompt greedily" in shown and "--max-new-tokens" in shown
