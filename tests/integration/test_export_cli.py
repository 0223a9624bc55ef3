"""`kbench export lm-eval|inspect` through the CLI on datasets built from ../shared/data.

No model runs here (tests/slow/test_export_smollm2.py runs SmolLM2 through both harnesses): the
exported tasks are loaded by the real lm-eval and Inspect, their documents and requests are
checked against what `kbench evaluate` would prompt, and the exported scoring code is checked
item by item against kbench's on real items.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys

import pytest

from kbench.dataset import read_rows, seeded_sample, split_path
from kbench.evaluate.prompts import build_probes
from kbench.tasks.truefalse.task import prompt_text
from kbench.metrics.matching import exact_match, maple_correct
from tests.conftest import run_kbench

LIMIT = 40


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module   # Inspect's registry looks the task's module up by name
    spec.loader.exec_module(module)
    return module


def lmeval_task(folder, name):
    from lm_eval.tasks import TaskManager

    task = TaskManager(include_path=str(folder)).load(name)["tasks"][name]
    task.build_all_requests()
    return task


@pytest.fixture(scope="module")
def lama_export(built_lama, tmp_path_factory):
    out = tmp_path_factory.mktemp("lm-lama") / "task"
    proc = run_kbench("export", "lm-eval", str(built_lama), "--out", str(out), "--limit", str(LIMIT), "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert "kbench_lama_test_cloze" in proc.stdout
    return out


def test_lmeval_task_prompts_as_kbench_does(lama_export, built_lama):
    rows = seeded_sample(read_rows(split_path(built_lama, "test", None)), LIMIT, 3)
    prompts = build_probes(rows, "cloze", "causal")
    task = lmeval_task(lama_export, "kbench_lama_test_cloze")
    requests = sorted(task.instances, key=lambda r: r.doc_id)
    assert [r.doc["id"] for r in requests] == [row["id"] for row in rows]   # the same seeded sample, same order
    assert [r.arguments[0] for r in requests] == [p.prompt.text for p in prompts]   # no BOS text, description or few-shot
    gen = requests[0].arguments[1]
    assert gen["until"] == list(prompts[0].stop) and gen["max_gen_toks"] == 16 and gen["do_sample"] is False


def test_fewshot_question_prompts_as_kbench_does(built_lama, tmp_path):
    out = tmp_path / "task"
    proc = run_kbench("export", "lm-eval", str(built_lama), "--out", str(out), "--prompt", "question",
                      "--fewshot", "2", "--limit", "5", "--seed", "7")
    assert proc.returncode == 0, proc.stderr
    rows = seeded_sample(read_rows(split_path(built_lama, "test", None)), 5, 7)
    train = read_rows(split_path(built_lama, "train", None))
    prompts = build_probes(rows, "question", "causal", 2, train, 7)
    task = lmeval_task(out, "kbench_lama_test_question")
    requests = sorted(task.instances, key=lambda r: r.doc_id)
    assert [r.arguments[0] for r in requests] == [p.prompt.text for p in prompts]
    assert requests[0].arguments[1]["until"] == ["\n"] and requests[0].arguments[0].count("Question:") == 3


def test_exported_scoring_agrees_with_kbench_item_by_item(lama_export):
    utils = load_module(lama_export / "utils.py", "exported_lama_utils")
    docs = [json.loads(line) for line in (lama_export / "data.jsonl").read_text().splitlines()]
    checked = 0
    for doc in docs:
        gold, alias = doc["object"], doc["answers"][-1]
        for answer in (f" {gold}", f" {gold.upper()} ", f" the {alias} one", " nothing", "", f"{gold[:-1]}"):
            scores = utils.process_results(doc, [answer])
            assert scores["maple_acc"] == float(maple_correct(answer.strip(), doc["answers"]))
            assert scores["exact_match"] == float(exact_match(answer.strip(), doc["answers"]))
            checked += 1
    assert checked == 6 * LIMIT


def test_exported_code_runs_without_kbench(lama_export, built_lama, tmp_path):
    """Both exported task files import, load their data and score with every `kbench` import made to fail."""
    inspect_file = tmp_path / "kbench_lama_plain.py"
    assert run_kbench("export", "inspect", str(built_lama), "--out", str(inspect_file), "--limit", "4").returncode == 0
    script = (
        "import importlib.util, json, sys\n"
        "sys.modules['kbench'] = None  # any `import kbench...` now raises ImportError\n"
        "def load(path, name):\n"
        "    spec = importlib.util.spec_from_file_location(name, path)\n"
        "    module = sys.modules[name] = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(module)\n"
        "    return module\n"
        f"utils = load({str(lama_export / 'utils.py')!r}, 'utils')\n"
        "doc = utils.load_docs()['test'][0]\n"
        f"task = load({str(inspect_file)!r}, 'kbench_lama_plain').kbench_lama_plain()\n"
        "print(json.dumps([utils.process_results(doc, [' ' + doc['object'] + ' indeed']), len(task.dataset)]))\n")
    proc = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == [{"maple_acc": 1.0, "exact_match": 0.0}, 4]


def test_lmeval_folder_moves(lama_export, tmp_path):
    import shutil

    moved = tmp_path / "elsewhere"
    shutil.copytree(lama_export, moved)
    lines = (moved / "data.jsonl").read_text().splitlines()[:5]
    (moved / "data.jsonl").write_text("\n".join(lines) + "\n")   # the moved task reads the data beside it
    task = lmeval_task(moved, "kbench_lama_test_cloze")
    assert len(list(task.test_docs())) == 5


def test_left_exports_as_multiple_choice(built_left, tmp_path):
    out = tmp_path / "left"
    proc = run_kbench("export", "lm-eval", str(built_left), "--out", str(out), "--limit", "6")
    assert proc.returncode == 0, proc.stderr
    task = lmeval_task(out, "kbench_left_dev")
    docs = list(task.test_docs())
    assert len(docs) == 6 and sorted(d["label"] for d in docs) == [False] * 3 + [True] * 3
    for doc in docs:
        requests = [r for r in task.instances if r.doc["id"] == doc["id"]]
        assert [r.arguments for r in requests] == [(prompt_text(doc["statement"], None, 0), a) for a in (" True", " False")]
    utils = load_module(out / "utils.py", "exported_left_utils")
    # the pair with the higher margin is called true (pair a: both right); a tie calls both false (b: one right)
    assert utils.pair_calibrated_accuracy([("a", True, -1.0), ("a", False, -2.0), ("b", True, 0.5), ("b", False, 0.5)]) == 0.5   # pair a right; b tied, so wrong as a whole
    assert utils.process_results({"label": False, "pair_id": "a"}, [(-1.0, True), (-2.0, False)]) == {
        "acc": 0.0, "pair_acc": ("a", False, 1.0)}


def test_inspect_task_loads_and_scores_known_answers(built_lama, tmp_path):
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    out = tmp_path / "kbench_lama_chat.py"
    proc = run_kbench("export", "inspect", str(built_lama), "--out", str(out), "--limit", "5", "--fewshot", "1")
    assert proc.returncode == 0, proc.stderr
    module = load_module(out, "kbench_lama_chat")
    task = module.kbench_lama_chat()
    rows = seeded_sample(read_rows(split_path(built_lama, "test", None)), 5, 0)
    samples = list(task.dataset)
    assert [s.id for s in samples] == [r["id"] for r in rows]
    first = samples[0]
    assert [m.role for m in first.input] == ["user", "assistant", "user"]   # one solved example, then the item
    assert first.input[-1].content.endswith(rows[0]["question"]) and first.target == rows[0]["answers"]
    assert task.config.max_tokens == 16 and task.config.stop_seqs == ["\n"] and task.config.temperature == 0.0
    scorer = task.scorer[0]

    def score(completion: str):
        state = TaskState(model="none/none", sample_id=first.id, epoch=1, input=first.input, messages=first.input,
                          output=ModelOutput.from_content("none/none", completion))
        return asyncio.run(scorer(state, Target(first.target))).value

    gold = rows[0]["object"]
    assert score(f"It is {gold}.\nMore text") == {"maple": "C", "exact": "I"}
    assert score(f" {gold}\n") == {"maple": "C", "exact": "C"}
    assert score(f"Not known.\n{gold}") == {"maple": "I", "exact": "I"}   # cut at the stop string first


@pytest.mark.parametrize("args, message", [
    (["lm-eval", "{missing}", "--out", "{tmp}/x"], "is not a folder"),
    (["lm-eval", "{lama}", "--out", "{tmp}/x", "--prompt", "chat"], "lm-eval export takes cloze or question"),
    (["lm-eval", "{lama}", "--out", "{tmp}/x", "--split", "nope"], "no split 'nope'"),
    (["lm-eval", "{left}", "--out", "{tmp}/x", "--prompt", "question"], "one prompt form"),
    (["inspect", "{left}", "--out", "{tmp}/left.py"], "export them with `kbench export lm-eval`"),
    (["inspect", "{lama}", "--out", "{tmp}/bad-name.py"], "must be a Python identifier"),
])
def test_bad_input_exits_2(args, message, built_lama, built_left, tmp_path):
    values = {"missing": tmp_path / "nothing", "lama": built_lama, "left": built_left, "tmp": tmp_path}
    proc = run_kbench("export", *[a.format(**values) for a in args])
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_refuses_a_folder_holding_another_task(built_lama, tmp_path):
    out = tmp_path / "tasks"
    assert run_kbench("export", "lm-eval", str(built_lama), "--out", str(out), "--limit", "3").returncode == 0
    proc = run_kbench("export", "lm-eval", str(built_lama), "--out", str(out), "--limit", "3", "--prompt", "question")
    assert proc.returncode == 2 and "already holds other tasks" in proc.stderr
