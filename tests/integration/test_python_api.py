"""The public Python API (`kbench.build`, `kbench.evaluate`, `kbench.report`): every docstring
example runs, in order, in one namespace; the API and the CLI give the same numbers; `import
kbench` stays light; `kbench.evaluate` is both the function and the package of the engine."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT, run_kbench


@pytest.fixture(scope="module")
def examples(shared_data, tiny_causal_dir, tmp_path_factory):
    """The namespace after running every example of kbench.api: build, then evaluate, then report."""
    import kbench.api

    namespace = {"tmp": tmp_path_factory.mktemp("api"), "data": shared_data, "tiny_model": str(tiny_causal_dir)}
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for function in (kbench.api.build, kbench.api.evaluate, kbench.api.report):
        test = parser.get_doctest(function.__doc__, namespace, function.__qualname__, kbench.api.__file__, 0)
        assert test.examples, f"{function.__qualname__} has no example"
        runner.run(test, clear_globs=False)
        namespace = test.globs  # a DocTest copies its globals: carry them to the next example
    assert runner.failures == 0, "a docstring example failed (see the output above)"
    return namespace


def test_every_docstring_example_runs(examples):
    assert (examples["tmp"] / "report" / "index.html").is_file()


def test_the_api_and_the_cli_give_the_same_numbers(examples, tmp_path):
    result = examples["result"]
    out = tmp_path / "cli-run"
    done = run_kbench("evaluate", "extraction", "--dataset", str(examples["built"].path), "--model", examples["tiny_model"],
                      "--limit", "8", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "results.json").read_text())["headline"] == result.headline
    assert result.results["settings"] == json.loads((out / "results.json").read_text())["settings"]
    assert result.items.columns and result.items.height == 8


def test_an_opened_model_names_the_same_default_run_folder_as_its_name(examples, tmp_path, monkeypatch):
    import kbench
    from kbench.models.interface import ModelSpec
    from kbench.models.cached import open_model

    monkeypatch.chdir(tmp_path)
    by_name = kbench.evaluate("extraction", dataset=examples["built"].path, model=examples["tiny_model"], limit=4)
    opened = open_model(ModelSpec(name=examples["tiny_model"]))
    by_model = kbench.evaluate("extraction", dataset=examples["built"].path, model=opened, limit=4)
    assert by_name.run_dir == by_model.run_dir and by_name.run_dir.parent.name == "runs"
    assert by_model.results["timing"]["items_computed"] == 0   # the second call resumed the first's run
    assert by_name.headline == by_model.headline


def test_a_bad_setting_names_the_keyword(examples):
    import kbench
    from kbench.errors import UserError

    with pytest.raises(UserError, match="limit"):
        kbench.evaluate("extraction", dataset=examples["built"].path, model=examples["tiny_model"], limit=0)


def test_import_kbench_is_light_and_evaluate_is_also_the_engine_package():
    probe = ("import sys, kbench; light = sorted(m for m in sys.modules if m.split('.')[0] in ('polars', 'torch', 'kbench'));"
             "import kbench.evaluate.engine as engine; "
             "print(light, callable(kbench.evaluate), callable(kbench.report), kbench.evaluate.engine is engine, "
             "kbench.build.__module__)")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["['kbench']", "True", "True", "True", "kbench.api"]


def test_truefalse_closed_book_from_the_api_matches_the_cli(shared_data, tiny_causal_dir, tmp_path):
    """The task decides the roles: `checkpoint=` is judged and `model` is the base, from either door."""
    import kbench
    from tests.dataset_folders import left_dataset

    left = left_dataset(shared_data, tmp_path / "left")
    model = str(tiny_causal_dir)
    api = kbench.evaluate("truefalse", dataset=left, model=model, setting="closed-book", checkpoint=model, limit=4,
                          out=tmp_path / "api")
    assert api.results["model"]["name"] == model and api.metrics["base_model"]["name"] == model
    assert {"before_accuracy", "closed-book - prior"} <= set(api.headline)
    out = tmp_path / "cli"
    done = run_kbench("evaluate", "truefalse", "--dataset", str(left), "--model", model, "--setting", "closed-book",
                      "--checkpoint", model, "--limit", "4", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "results.json").read_text())["headline"] == api.headline
    bad = run_kbench("evaluate", "truefalse", "--dataset", str(left), "--model", model, "--setting", "closed-book",
                     "--checkpoint", str(tmp_path / "nope"), "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "--checkpoint" in bad.stderr and "not a folder" in bad.stderr, bad.stderr


def test_kee_cli_and_api_run_the_same_techniques_by_default():
    from kbench.cli.common import EVALUATE_COMMANDS, settings_for
    from kbench.tasks.kee.task import ALL_TECHNIQUES, KeeSettings

    command = EVALUATE_COMMANDS.get("kee")
    parsed = command.click_command().make_context("kee", ["--dataset", "d", "--model", "m"]).params
    _, call = command.call(command.flags(), dict(parsed))
    assert settings_for("kee", call.values).techniques == KeeSettings().techniques == ALL_TECHNIQUES


def test_xteval_seeds_and_epochs_shorthands_are_settings(tmp_path):
    """`seeds=` and the epochs carried to the soft prompt live in XtevalSettings, so the CLI and the API agree."""
    from kbench.cli.common import EVALUATE_COMMANDS, settings_for
    from kbench.tasks.xteval.pipeline import XtevalSettings

    command = EVALUATE_COMMANDS.get("xteval")
    argv = ["--dataset", "d", "--model", "m", "--seeds", "1", "--split-seeds", "2", "--epochs", "4"]
    _, call = command.call(command.flags(), dict(command.click_command().make_context("xteval", argv).params))
    cli = settings_for("xteval", call.values)
    api = XtevalSettings(seeds=1, split_seeds=2, finetune={"epochs": 4})
    assert cli == api and (api.extraction_seeds, api.split_seeds, api.finetune_seeds) == (1, 2, 1)
    assert api.softprompt.epochs == 4 and XtevalSettings(finetune={"epochs": 4}, softprompt={"epochs": 9}).softprompt.epochs == 9
    assert XtevalSettings(**api.model_dump()) == api   # the CLI validates, then the API validates the dump again


def test_kee_from_the_api_writes_the_comparison_files_the_cli_writes(examples, tmp_path):
    import kbench

    result = kbench.evaluate("kee", dataset=examples["built"].path, model=examples["tiny_model"], limit=4,
                             techniques="baseline,genread", out=tmp_path / "kee")
    table = (result.run_dir / "comparison.md").read_text()
    assert "| genread |" in table and (result.run_dir / "prs.png").is_file() and (result.run_dir / "gain_loss.png").is_file()
