"""`kbench evaluate TASK` options generated from each task's Settings: one home for every default,
and errors that name the flag the user typed. Parses real command lines with the built click
commands (nothing is run)."""

from __future__ import annotations

import pytest

from kbench.cli.common import EVALUATE_COMMANDS, settings_for
from kbench.errors import UserError
from kbench.evaluate.task import TASKS

REQUIRED = ["--dataset", "ds", "--model", "m"]


def parse(task: str, *args: str):
    """(validated settings, TaskCall) for a command line, as the command would run it."""
    entry = EVALUATE_COMMANDS.get(task)
    flags = entry.flags()
    command = entry.click_command()
    ctx = command.make_context(task, [*REQUIRED, *args])
    common, call = entry.call(flags, dict(ctx.params))
    values = {k: common[k] for k in ("split", "config", "limit", "seed")} | call.values
    return settings_for(task, values, {f.path: f.flag for f in flags}), call


def test_every_task_has_a_command_and_every_setting_an_option():
    assert EVALUATE_COMMANDS.names() == TASKS.names() == ["choice", "extraction", "kee", "qa", "truefalse", "xteval"]
    for task in TASKS.names():
        params = {p.name for p in EVALUATE_COMMANDS.get(task).click_command().params}
        settings = TASKS.get(task).Settings
        derived = {f.path[0] for f in EVALUATE_COMMANDS.get(task).flags()}
        assert derived | {"split", "config", "limit", "seed", "technique_params"} >= set(settings.model_fields), task
        assert {"dataset", "model", "limit", "out"} <= params


def test_defaults_come_from_the_settings_model():
    for task in TASKS.names():
        settings, _ = parse(task)
        assert settings == TASKS.get(task).Settings(), task


def test_kee_cli_and_library_run_the_same_techniques():
    settings, _ = parse("kee")
    assert settings.techniques == TASKS.get("kee").Settings().techniques
    assert len(settings.techniques) == 9 and settings.techniques[0] == "baseline"
    assert parse("kee", "--techniques", "caa,iti")[0].techniques == ("baseline", "caa", "iti")


def test_help_shows_the_models_default_and_description():
    help_of = {p.opts[0]: p.help for p in EVALUATE_COMMANDS.get("xteval").click_command().params}
    assert help_of["--lr"] == "Fine-tuning learning rate (paper: 1e-5). (default: 1e-05)"
    assert help_of["--prompt-lr"].endswith("(default: 0.0001)")
    assert "(discrete | soft)" in help_of["--extraction"]


def test_xteval_nested_settings_and_conveniences():
    settings, _ = parse("xteval", "--lr", "3e-5", "--train-batch-size", "4", "--prompt-train-limit", "6",
                        "--epochs", "2", "--seeds", "1", "--split-seeds", "2", "--template-variants", "LPAQA,ParaRel")
    assert settings.finetune.lr == 3e-5 and settings.finetune.batch_size == 4 and settings.finetune.epochs == 2
    assert settings.softprompt.max_train_facts == 6 and settings.softprompt.epochs == 2  # --epochs: both, unless --prompt-epochs
    assert (settings.extraction_seeds, settings.split_seeds, settings.finetune_seeds) == (1, 2, 1)
    assert settings.template_variants == ("LPAQA", "ParaRel")
    assert parse("xteval", "--epochs", "2", "--prompt-epochs", "5")[0].softprompt.epochs == 5


def test_errors_name_the_flag_the_user_typed():
    with pytest.raises(UserError, match=r"^--lr: Input should be greater than 0"):
        parse("xteval", "--lr", "0")
    with pytest.raises(UserError, match=r"^--train-batch-size: "):
        parse("xteval", "--train-batch-size", "0")
    with pytest.raises(UserError, match=r"^--protocol: Input should be 'maple' or 'lama'"):
        parse("extraction", "--protocol", "lamma")
    with pytest.raises(UserError, match=r"^--techniques: unknown technique\(s\) cot"):
        parse("kee", "--techniques", "baseline,cot")


def test_repeatable_and_command_own_options():
    settings, _ = parse("extraction", "--stop", "\n", "--stop", ". ")
    assert settings.stop == ("\n", ". ")
    settings, call = parse("kee", "--technique-param", "iti.heads=13")
    assert settings.technique_params == {"iti": {"heads": 13}} and call.after is not None


def test_a_folder_without_cli_py_gets_its_command_from_settings_and_docstring():
    """choice, extraction, qa and truefalse have no cli.py: their help is the task class's docstring,
    and choice's Settings asks for `--top-k 5,10` itself (json_schema_extra)."""
    import inspect

    from kbench.evaluate.task import folder_of

    without = [t for t in TASKS.names() if not (folder_of(TASKS.get(t)) / "cli.py").exists()]
    assert without == ["choice", "extraction", "qa", "truefalse"]
    for task in without:
        assert EVALUATE_COMMANDS.get(task).click_command().help == inspect.getdoc(TASKS.get(task)), task
    assert EVALUATE_COMMANDS.get("kee").help is None  # kee/cli.py's function keeps its own docstring
    assert parse("choice", "--top-k", "1,3")[0].top_k == (1, 3)
