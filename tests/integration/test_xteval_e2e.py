"""`kbench evaluate xteval` end to end on tiny random models (a decoder and an encoder) over a
small dataset folder made of real LAMA T-REx facts: runs, resumes, writes schema-valid results."""

import json

import polars as pl
import pytest

from kbench.cli.main import main
from kbench.evaluate.engine import validate
from kbench.tasks.xteval.pipeline import load_facts
from kbench.report.build import build_report
from tests.conftest import run_kbench

RELATIONS = ("P19", "P20", "P27", "P101", "P106", "P1412")
PER_RELATION = 6


def _question(fact: dict, rel: dict, split: str) -> dict:
    template = rel["template"]
    subject, obj = fact["sub_label"], fact["obj_label"]
    filled = template.replace("[X]", subject)
    return {"id": fact["uuid"], "relation": rel["relation"], "relation_label": rel["label"], "template": template,
            "subject": subject, "subject_id": fact["sub_uri"], "object": obj, "object_id": fact["obj_uri"],
            "source": "trex", "evidence_count": 0, "subject_aliases": [], "object_aliases": [], "answers": [obj],
            "prompt_cloze": filled.split("[Y]")[0].strip(), "prompt_masked": filled.replace("[Y]", "[MASK]"),
            "question": f"{rel['label']} of {subject}?", "frequency": None, "frequency_bin": None, "domain": None,
            "split": split}


def write_lama_folder(shared_data, folder, relations=RELATIONS, per_relation=PER_RELATION):
    """A dataset folder (data/default/test.parquet, Question rows) of the first `per_relation` real
    LAMA T-REx facts of each relation."""
    rels = {}
    for line in (shared_data / "lama_trex" / "relations.jsonl").read_text().splitlines():
        row = json.loads(line)
        rels[row["relation"]] = row
    rows = []
    for relation in relations:
        with open(shared_data / "lama_trex" / "TREx" / f"{relation}.jsonl") as fh:
            for _, line in zip(range(per_relation), fh):
                rows.append(_question(json.loads(line), rels[relation], "test"))
    (folder / "data" / "default").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(folder / "data" / "default" / "test.parquet")
    for split in ("train", "dev"):  # AutoPrompt facts of the same relations (soft-prompt training data)
        extra = []
        for relation in relations:
            with open(shared_data / "lama_trex_autoprompt_splits" / relation / f"{split}.jsonl") as fh:
                for i, line in zip(range(per_relation), fh):
                    fact = {**json.loads(line), "uuid": f"{relation}-{split}-{i}"}
                    extra.append(_question(fact, rels[relation], split))
        pl.DataFrame(extra).write_parquet(folder / "data" / "default" / f"{split}.parquet")
    return rows


@pytest.fixture(scope="module")
def lama_folder(shared_data, tmp_path_factory):
    """The small folder plus known_facts.parquet naming all its facts: random tiny models know
    nothing, so D^theta is given the way an extraction run would give it."""
    folder = tmp_path_factory.mktemp("lama-small")
    rows = write_lama_folder(shared_data, folder)
    pl.DataFrame({"id": [r["id"] for r in rows], "correct": [True] * len(rows)}).write_parquet(folder / "known_facts.parquet")
    return folder


def kbench_in_process(*args: str) -> int:
    """The CLI's `main` in this process (no second torch import); returns the exit code."""
    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _args(folder, model, out, *extra):
    return ("evaluate", "xteval", "--dataset", str(folder), "--model", str(model), "--out", str(out),
            "--known-facts", str(folder / "known_facts.parquet"), "--epochs", "1", "--seeds", "1",
            "--distractors-per-type", "4", "--train-batch-size", "8", "--device", "cpu", *extra)


def journal(out) -> dict[str, list[dict]]:
    """The run's finished units: {unit key: rows}."""
    lines = (out / "journal.jsonl").read_text().splitlines()
    return {record["unit"]: record["rows"] for record in map(json.loads, lines)}


def run_row(out, key: str) -> tuple[dict, list[dict]]:
    rows = journal(out)[key]
    return next(r for r in rows if r["kind"] == "run"), [r for r in rows if r["kind"] == "query"]


def check_envelope(out) -> dict:
    results = json.loads((out / "results.json").read_text())
    validate(results, "results.v2.json")
    validate(results["metrics"], "results.xteval.v2.json")
    return results


@pytest.mark.parametrize("model_fixture", ["tiny_causal_dir", "tiny_masked_dir"])
def test_xteval_runs_resumes_and_writes_valid_results(model_fixture, request, lama_folder, tmp_path, shared_data):
    model = request.getfixturevalue(model_fixture)
    out = tmp_path / "run"
    # The encoder run also draws documents from the LAMA paraphrases (relations.jsonl + LPAQA).
    paraphrases = ("--templates-dir", str(shared_data / "lama_trex")) if model_fixture == "tiny_masked_dir" else ()
    assert kbench_in_process(*_args(lama_folder, model, out, "--setting", "both", *paraphrases)) == 0
    results = check_envelope(out)
    metrics = results["metrics"]
    assert set(metrics["settings"]) == {"iid", "ood"}
    n = len(RELATIONS) * PER_RELATION
    for agg in metrics["settings"].values():
        assert agg["acc_D"]["mean"] == 1.0   # every fact is in the given D^theta
        run = agg["runs"][0]
        assert run["gap1"] == 0.0 and run["usable_knowledge"] + run["gap2"] == pytest.approx(1.0)
        assert agg["acc_D"]["std_over"] == "extraction seeds" and agg["acc_D"]["n"] == 1
        assert 0 < agg["chance_accuracy"]["mean"] < 1
    assert results["headline"]["acc_D"]["value"] == 1.0 and results["headline"]["acc_D"]["n"] == n
    # one extraction seed, acc_D = 1: a Wilson interval over the facts, not [1, 1], that says what it covers
    acc_d, gap1 = results["headline"]["acc_D"], results["headline"]["gap1"]
    assert acc_d["ci_low"] < 1.0 == acc_d["ci_high"] and gap1["ci_low"] == 0.0 < gap1["ci_high"]
    assert acc_d["covers"].startswith("facts only") and acc_d["seeds"] == 1
    # the protocol block: exactly the departures this command asked for, and the interval's scope
    protocol = results["protocol"]
    assert protocol["name"] == "xteval" and protocol["faithful"] is False
    # 36 facts cannot give 4 distinct documents of every distractor type: the shortfall is recorded
    assert [d["id"] for d in protocol["deviations"]] == [
        "known-facts-file", "finetune-epochs", "finetune-batch-size", "distractors-per-type", "distractors-available",
        "split-seeds", "finetune-seeds", "acc-d-interval-facts-only"]
    assert "minimum / median over the" in protocol["deviations"][4]["kbench"]
    assert [i["id"] for i in protocol["interpretations"]] == ["retrieval-ties"]
    assert "seed-to-seed spread is not inside" in protocol["deviations"][-1]["kbench"]
    iid, queries = run_row(out, "iid/e0-s0-f0")
    assert iid["n_train"] + iid["n_test"] == n and iid["n_test"] == round(n * 0.4) == len(queries)
    assert all(q["n_candidates"] > 1 for q in queries)
    assert iid["chance_accuracy"] == pytest.approx(sum(1 / q["n_candidates"] for q in queries) / iid["n_test"])
    runs = metrics["settings"]["iid"]["runs"]   # a mean over runs, not a pool of their queries
    headline = results["headline"]["iid_downstream_accuracy"]
    assert headline["runs"] == len(runs) == 1 and headline["n"] == len({q["fact_id"] for q in queries}) == len(queries)
    assert headline["value"] == pytest.approx(sum(r["downstream_accuracy"] for r in runs) / len(runs))
    # one run (--seeds 1): the interval comes from the run's test queries, never zero-width
    for name in ("iid_downstream_accuracy", "iid_usable_knowledge", "iid_gap2", "ood_downstream_accuracy"):
        estimate = results["headline"][name]
        assert estimate["ci_low"] <= estimate["value"] <= estimate["ci_high"] and estimate["ci_high"] > estimate["ci_low"]
    # queries name their facts (the dataset's ids) and their run
    assert {q["fact_id"] for q in queries} <= {str(r["id"]) for r in pl.read_parquet(lama_folder / "data/default/test.parquet").to_dicts()}
    assert all(q["run"] == "iid/e0-s0-f0" and q["split_seed"] == 0 for q in queries)
    # both settings ran: IID - OOD beside the numbers it compares
    difference = results["headline"]["iid_minus_ood_downstream_accuracy"]
    assert difference["value"] == pytest.approx(headline["value"] - results["headline"]["ood_downstream_accuracy"]["value"])
    assert difference["ci_low"] <= difference["value"] <= difference["ci_high"]
    assert metrics["iid_minus_ood"]["on_shared_facts"]["n_shared"] >= 0 and "paired on runs" in metrics["iid_minus_ood"]["pairing"]
    assert metrics["extraction"]["top1"]["criterion"] == "known-facts-file"
    ood, ood_queries = run_row(out, "ood/e0-s0-f0")
    test_rel = {q["relation"] for q in ood_queries}   # relation-disjoint: whole relations go to test
    assert 0 < len(test_rel) < len(RELATIONS) and ood["n_test"] == PER_RELATION * len(test_rel)
    items = pl.read_parquet(out / "items.parquet")
    assert items.height == results["items"]["count"] and set(items["kind"]) == {"extraction", "run", "query"}
    from kbench.tasks.xteval.claims import xteval_iid_minus_ood  # XTEVAL-11 reads the run: clustered by relation
    from kbench.report.runs import load_run

    claim11 = xteval_iid_minus_ood(load_run(out))
    assert claim11["estimate"]["clusters"] >= len(test_rel) and 0 < claim11["p_value"] <= 1
    report = (out / "report.md").read_text()
    assert report.count("|") > 10 and "Protocol: 8 deviations from xteval" in report
    assert "- `acc-d-interval-facts-only`: paper:" in report and "facts only: one extraction seed" in report
    assert (out / "gaps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Rerun: every unit is reused (the journal is untouched), results identical.
    before = (out / "journal.jsonl").read_bytes()
    assert kbench_in_process(*_args(lama_folder, model, out, "--setting", "both", *paraphrases)) == 0
    assert (out / "journal.jsonl").read_bytes() == before
    assert json.loads((out / "results.json").read_text())["metrics"] == metrics
    if model_fixture == "tiny_causal_dir":
        _report_pairs_facts_of_two_runs(lama_folder, model, out, tmp_path)


def _report_pairs_facts_of_two_runs(lama_folder, model, out, tmp_path):
    """A second D^theta (every other fact) gives another test split: `kbench report` pairs facts by id."""
    every = pl.read_parquet(lama_folder / "data/default/test.parquet")["id"].to_list()
    ids = every[::2]
    half = tmp_path / "half.parquet"
    pl.DataFrame({"id": ids}).write_parquet(half)
    other = tmp_path / "other"
    args = list(_args(lama_folder, model, other, "--setting", "iid"))
    args[args.index("--known-facts") + 1] = str(half)
    assert kbench_in_process(*args) == 0
    build_report([out, other], tmp_path / "report")
    tests = [{q["fact_id"] for q in run_row(folder, "iid/e0-s0-f0")[1]} for folder in (out, other)]
    text = (tmp_path / "report" / "comparison.md").read_text()
    assert f"Shared probed facts (extraction): {len(every)}." in text   # the facts not in D^theta were probed too
    left = f"{len(tests[0]) - len(tests[0] & tests[1])} of {len(tests[0])}"
    assert f"### downstream iid\n\nShared facts: {len(tests[0] & tests[1])}. Left out: {model.name} (run) {left}" in text
    assert "downstream ood" not in text   # only one run has OOD


def test_rerun_with_other_settings_is_refused_and_tiny_d_theta_is_explained(lama_folder, tiny_causal_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert kbench_in_process(*_args(lama_folder, tiny_causal_dir, out, "--limit", "12")) == 0
    # A real user's view (subprocess): other settings in the same folder -> exit 2, one clear line.
    other = run_kbench(*_args(lama_folder, tiny_causal_dir, out, "--limit", "12", "--lr", "3e-5"))
    assert other.returncode == 2 and "differs in: settings" in other.stderr and "Traceback" not in other.stderr
    # Discrete extraction with the dataset's cloze prompts: a random model knows (almost) nothing.
    capsys.readouterr()
    code = kbench_in_process("evaluate", "xteval", "--dataset", str(lama_folder), "--model", str(tiny_causal_dir),
                             "--out", str(tmp_path / "discrete"), "--extraction", "discrete", "--epochs", "1",
                             "--seeds", "1", "--device", "cpu")
    assert code == 2 and "D^theta holds" in capsys.readouterr().err
    discrete = journal(tmp_path / "discrete")["extraction/e0"]   # the finished extraction unit is kept
    n = len(RELATIONS) * PER_RELATION
    assert len(discrete) == n and not [r for r in discrete if r["status"] == "unreadable"]   # a causal LM reads every tail
    # Soft extraction: one soft prompt per relation of D, trained on the dataset's train/dev splits, saved.
    code = kbench_in_process("evaluate", "xteval", "--dataset", str(lama_folder), "--model", str(tiny_causal_dir),
                             "--out", str(tmp_path / "soft"), "--extraction", "soft", "--limit", "6", "--epochs", "1",
                             "--seeds", "1", "--prompt-train-limit", "4", "--device", "cpu")
    extraction = journal(tmp_path / "soft")["extraction/e0"]
    saved = {p.stem for p in (tmp_path / "soft" / "softprompts" / "seed-0").glob("*.safetensors")}
    assert saved == {r["relation"] for r in load_facts(lama_folder, "test", 6)} and len(extraction) == 6
    assert code in (0, 2)   # 2 when the random model knows fewer than 3 facts (said in one line)
    capsys.readouterr()
    code = kbench_in_process("evaluate", "xteval", "--dataset", str(tmp_path), "--model", str(tiny_causal_dir),
                             "--out", str(tmp_path / "x"))
    assert code == 2 and "not a dataset folder" in capsys.readouterr().err


def test_masked_lm_facts_with_multi_token_tails_leave_the_denominator(lama_folder, tiny_masked_dir, tmp_path, capsys):
    """The tiny BERT's vocabulary holds few LAMA tails as one token: those facts are not probed,
    and acc_D is counted over the probed facts only."""
    out = tmp_path / "masked"
    code = kbench_in_process("evaluate", "xteval", "--dataset", str(lama_folder), "--model", str(tiny_masked_dir),
                             "--out", str(out), "--extraction", "discrete", "--epochs", "1", "--seeds", "1",
                             "--device", "cpu")
    assert code == 2 and "D^theta holds" in capsys.readouterr().err   # a random model knows too little
    unit = journal(out)["extraction/e0"]
    assert len(unit) == len(RELATIONS) * PER_RELATION
    statuses = [r["status"] for r in unit]
    assert statuses.count("unreadable") > 0 and set(statuses) <= {"known", "unknown", "unreadable"}


def test_data_parallel_launch_on_two_cpu_processes(lama_folder, tiny_causal_dir, tmp_path):
    """The same command under a 2-process launcher (DDP over gloo on CPU): both processes train,
    the main one writes the run folder, results are valid."""
    from tests.launchers import accelerate_launch

    out = tmp_path / "dp"
    done = accelerate_launch(_args(lama_folder, tiny_causal_dir, out, "--setting", "iid"), {"OMP_NUM_THREADS": "1"}, 300)
    assert done.returncode == 0, done.stderr[-3000:]
    check_envelope(out)
    unit, queries = run_row(out, "iid/e0-s0-f0")
    assert unit["processes"] == 2
    assert len(queries) == unit["n_test"]   # every test query answered once, gathered from both
