"""What every `kbench evaluate TASK` shares: the options (each defined once, meaning the same
everywhere), the model set-up, the run itself and its headline table.

A task's options are generated from its `Settings` model (`settings_options`), its help is the task
class's docstring: a task folder without `cli.py` needs nothing more. A command file
(`kbench/tasks/<name>/cli.py`) adds only what cannot be derived, and registers at the definition:

    @evaluate_command("kee", exclude=("technique_params",))
    def kee(values: dict, technique_param: list[str] = typer.Option(...)) -> TaskCall:
        \"\"\"Help text.\"\"\"
        return TaskCall({**values, ...}, after=...)   # values: the settings the user gave

The function may take options of its own (typer parameters) and may return a `TaskCall` instead of
the values, to act on the results afterwards (KEE's comparison report); which models a task runs
(LEFT's closed book: the checkpoint and the base model) is the task's `roles`, shared with the API.
Commands are built when first asked for (`EvaluateCommands`), so `kbench --help` and `kbench build`
never import the tasks (and torch).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from kbench.cli import settings_options
from kbench.registry import Registry

LOG = logging.getLogger(__name__)

DATASET = typer.Option(..., "--dataset", help="A dataset folder built by `kbench build`, or a Hub dataset ORG/NAME[@REVISION].")
MODEL = typer.Option(
    ...,
    "--model",
    help="smollm2-135m, gemma3-270m, a .gguf file, a model folder, a hub id, openai:URL (a server), vllm:MODEL (vLLM in-process)",
)
SPLIT = typer.Option(None, "--split", help="Dataset split to evaluate (default: the task's, e.g. test).")
CONFIG = typer.Option(None, "--config", help="Dataset config (default: 'default' or the only one).")
LIMIT = typer.Option(None, "--limit", help="Evaluate a seeded sample of N items.")
SEED = typer.Option(0, "--seed", help="Seeds the --limit sample and anything else the task draws.")
OUT = typer.Option(None, "--out", help="Run directory (default: runs/<task>-<settings hash>).")
BATCH_SIZE = typer.Option(None, "--batch-size", help="Prompts per forward pass (default: automatic).")
DTYPE = typer.Option("float32", "--dtype", help="float32 | bfloat16 | float16")
DEVICE = typer.Option("cpu", "--device", help="cpu | cuda | cuda:N (under accelerate launch: each process's GPU)")
TRUST_REMOTE_CODE = typer.Option(False, "--trust-remote-code", help="Run code shipped with the model (off by default).")
NO_CACHE = typer.Option(False, "--no-cache", help="Neither read nor write the shared result cache.")


#: (parameter name, type, option): the options every evaluate command takes, in --help order.
SHARED_OPTIONS = (
    ("dataset", Path, DATASET),
    ("model", str, MODEL),
    ("split", Optional[str], SPLIT),
    ("config", Optional[str], CONFIG),
    ("limit", Optional[int], LIMIT),
    ("seed", int, SEED),
    ("out", Optional[Path], OUT),
    ("batch_size", Optional[int], BATCH_SIZE),
    ("dtype", str, DTYPE),
    ("device", str, DEVICE),
    ("trust_remote_code", bool, TRUST_REMOTE_CODE),
    ("no_cache", bool, NO_CACHE),
)


@dataclass
class TaskCall:
    """What a command asks of the run beyond its settings."""

    values: dict[str, Any]
    after: Callable[[dict, Path], None] | None = None  # called with (results, run dir) on the main process


@dataclass
class EvaluateCommand:
    """One `kbench evaluate TASK`: the command function and how its Settings become options."""

    task: str
    fn: Callable
    prefixes: dict[str, str]
    renames: dict[str, str]
    exclude: tuple[str, ...]
    comma: tuple[str, ...]
    help: str | None = None  # the command's help; None: the function's docstring

    def flags(self) -> list[settings_options.Flag]:
        from kbench.evaluate.task import TASKS

        settings = TASKS.get(self.task).Settings
        return settings_options.settings_flags(settings, self.prefixes, self.renames, self.exclude, self.comma)

    def call(self, flags: list[settings_options.Flag], kwargs: dict[str, Any]) -> tuple[dict[str, Any], TaskCall]:
        """The parsed options -> (the shared options, what the command function asks of the run)."""
        common = {name: kwargs.pop(name) for name, _, _ in SHARED_OPTIONS}
        call = self.fn(settings_options.collect(flags, kwargs), **kwargs)
        return common, call if isinstance(call, TaskCall) else TaskCall(values=call)

    def click_command(self):
        """The click command: shared options, then the settings' options, then the function's own."""
        import typing

        flags = self.flags()
        hints = typing.get_type_hints(self.fn)  # the command modules use postponed (string) annotations
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation), kind=inspect.Parameter.KEYWORD_ONLY)
            for p in list(inspect.signature(self.fn).parameters.values())[1:]  # the first takes the settings values
        ]
        shared = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
            for name, kind, option in SHARED_OPTIONS
        ]
        flag_names = {f.path: f.flag for f in flags}

        def command(**kwargs):
            common, call = self.call(flags, kwargs)
            values = {k: common[k] for k in ("split", "config", "limit", "seed")} | call.values
            model_options = {
                "dtype": common["dtype"],
                "device": _process_device(common["device"]),
                "batch_size": common["batch_size"],
                "trust_remote_code": common["trust_remote_code"],
                "use_cache": not common["no_cache"],
            }
            results, run_dir = run_task(
                self.task, values, common["model"], model_options, common["dataset"], common["out"], flag_names=flag_names
            )
            if results is not None and call.after is not None:
                call.after(results, run_dir)

        command.__signature__ = inspect.Signature([*shared, *settings_options.parameters(flags), *own])
        command.__doc__ = self.help or self.fn.__doc__
        app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        app.command(self.task)(command)
        built = typer.main.get_command(app)
        built.name = self.task
        return built


def _settings_only(values: dict) -> dict:
    return values


class CommandRegistry(Registry[EvaluateCommand]):
    """task name -> its evaluate command: the one its folder's `cli.py` registers, else one generated
    from the task's Settings and docstring. Every task has one."""

    def __init__(self) -> None:
        super().__init__("evaluate command")

    def names(self) -> list[str]:
        from kbench.evaluate.task import TASKS

        return TASKS.names()

    def __contains__(self, name: str) -> bool:
        from kbench.evaluate.task import TASKS

        return name in TASKS

    def items(self) -> dict[str, EvaluateCommand]:
        return {name: self.get(name) for name in self.names()}

    def get(self, name: str) -> EvaluateCommand:
        from kbench.evaluate.task import TASKS, folder_module

        task = TASKS.get(name)
        if name not in self._entries:
            folder_module(task, "cli")  # registers its command, when the folder has one
        if name not in self._entries:
            self.add(name, EvaluateCommand(name, _settings_only, {}, {}, (), (), help=task.__doc__))
        return self._entries[name]


EVALUATE_COMMANDS = CommandRegistry()


def evaluate_command(
    task_name: str,
    prefixes: dict[str, str] | None = None,
    renames: dict[str, str] | None = None,
    exclude: tuple[str, ...] = (),
    comma: tuple[str, ...] = (),
) -> Callable:
    """Register `fn(values, **own_options)` as `kbench evaluate TASK` (see the module docstring).
    `prefixes`, `renames`, `exclude` and `comma` (dotted settings paths) shape the generated
    options: see `settings_options.settings_flags`."""

    def decorate(fn: Callable) -> Callable:
        EVALUATE_COMMANDS.add(task_name, EvaluateCommand(task_name, fn, prefixes or {}, renames or {}, exclude, comma))
        return fn

    return decorate


class EvaluateCommands(TyperGroup):
    """The `kbench evaluate` group: its commands are the registered ones, built when asked for."""

    def list_commands(self, ctx) -> list[str]:
        return sorted({*super().list_commands(ctx), *EVALUATE_COMMANDS.names()})

    def get_command(self, ctx, cmd_name: str):
        if cmd_name not in self.commands and cmd_name in EVALUATE_COMMANDS:
            from kbench.cli.help_text import escape_help

            self.commands[cmd_name] = escape_help(EVALUATE_COMMANDS.get(cmd_name).click_command())
        return super().get_command(ctx, cmd_name)


def _process_device(device: str) -> str:
    """Under `accelerate launch`, "cuda" means this process's own GPU (LOCAL_RANK)."""
    import os

    if device == "cuda" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    return device


def settings_for(task_name: str, values: dict[str, Any], flag_names: dict[tuple, str] | None = None):
    """The task's validated settings; None values mean "the task's default". An error names the
    flag (`flag_names`: settings path -> the flag the user typed; else --path-with-dashes)."""
    from pydantic import ValidationError

    from kbench.errors import UserError
    from kbench.evaluate.task import TASKS

    task_cls = TASKS.get(task_name)
    given = {k: v for k, v in values.items() if v is not None}
    try:
        return task_cls.Settings(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        if not first["loc"]:  # a check across options names them itself
            raise UserError(message) from None
        loc = tuple(str(p) for p in first["loc"])
        flag = (flag_names or {}).get(loc) or (flag_names or {}).get(loc[:-1])  # loc[:-1]: an item of a tuple
        raise UserError(f"{flag or '--' + '.'.join(loc).replace('_', '-')}: {message}") from None


def run_task(
    task_name: str,
    values: dict[str, Any],
    model: str,
    model_options: dict[str, Any],
    dataset: Path,
    out: Optional[Path],
    flag_names: dict[tuple, str] | None = None,
) -> tuple[dict | None, Path]:
    """Validate settings (errors name the flag the user typed), then run `kbench.evaluate` (the
    Python API: the engine shows the progress, the run folder's log.txt gets the run's records) and
    print the headline. Returns (results, the run directory); results are None on the non-main
    processes of `accelerate launch`."""
    from kbench.api import evaluate

    settings = settings_for(task_name, values, flag_names)  # first, so an error names the flag the user typed
    result = evaluate(task_name, dataset=dataset, model=model, out=out, **model_options, **settings.model_dump())
    if result is None:
        return None, Path(out or ".")
    print_headline(result.results, result.run_dir)
    return result.results, result.run_dir


def print_headline(results: dict, run_dir: Path) -> None:
    """The finished run's headline numbers, the same table for every task."""
    from rich.console import Console
    from rich.table import Table

    from kbench.metrics.uncertainty import SMALL_N, format_estimate

    dataset = results["dataset"]
    table = Table(
        title=f"{results['task']}: {results['model']['name']} on {Path(dataset['path']).name}"
        f"{'/' + dataset['split'] if dataset.get('split') else ''}"
    )
    for column in ("metric", "value [95% CI]", "n"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for name, estimate in results["headline"].items():
        table.add_row(name, format_estimate(estimate), str(estimate["n"]))
    Console().print(table)
    # the procedure behind these numbers, and where this run departed from it (docs/protocol.md)
    from kbench.protocol import read_protocol
    from kbench.report.protocols import block_lines

    for line in block_lines(read_protocol(results, str(run_dir / "results.json"))):
        Console().print(f"protocol: {line}" if not line.startswith(" ") else line, markup=False, highlight=False, soft_wrap=True)
    console = Console(stderr=True)
    console.print(
        f"* marks n < {SMALL_N}; intervals: Wilson for proportions, seeded bootstrap for means. "
        f"results: {run_dir / 'results.json'}"
    )
