"""The documentation pages written from the code at build time (mkdocs-gen-files runs this file):
one page per evaluation task (its Settings: every option with its flag, type, default and description),
one per packaged recipe (each stage with its parameters), the CLI reference (the click tree `kbench`
runs) and the Python API reference (mkdocstrings reads the docstrings). Nothing here is typed by hand,
so the pages cannot drift from the code."""

from __future__ import annotations

import inspect
import re
import sys
import tomllib
import typing

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from kbench.cli.main import command
from kbench.cli.settings_options import SHARED_FIELDS
from kbench.construct.recipe_names import packaged_recipes
from kbench.construct.stage import STAGES
from kbench.evaluate.task import TASKS


def cell(text: object) -> str:
    """One markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: object) -> str:
    """One table cell in backticks: a pipe inside a code span does not split the row (and `\\|` would show)."""
    return "`" + " ".join(str(text).split()) + "`"


def type_name(annotation: object) -> str:
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    return re.sub(r"\b(typing|pathlib|kbench(\.\w+)*)\.", "", str(annotation)).replace("NoneType", "None")


def default_text(info) -> str:
    if info.default is PydanticUndefined and info.default_factory is None:
        return "required"
    value = info.get_default(call_default_factory=True)
    return code(value.model_dump() if isinstance(value, BaseModel) else repr(value))


def first_paragraph(obj: object) -> str:
    return (inspect.getdoc(obj) or "").split("\n\n")[0].replace("\n", " ")


def settings_rows(model: type[BaseModel], prefix: str = "") -> list[str]:
    """One row per field; a nested model's fields follow under its dotted name."""
    rows = []
    for name, info in model.model_fields.items():
        kind = typing.get_args(info.annotation) or (info.annotation,)
        nested = [k for k in kind if isinstance(k, type) and issubclass(k, BaseModel)]
        if nested:
            rows += settings_rows(nested[0], f"{prefix}{name}.")
            continue
        rows.append(
            f"| `{prefix}{name}` | {code(type_name(info.annotation))} | {default_text(info)} | {cell(info.description or '')} |"
        )
    return rows


def task_page(name: str, task_cls) -> str:
    from kbench.cli.common import EVALUATE_COMMANDS

    about = task_cls.__doc__ or sys.modules[task_cls.__module__].__doc__ or ""  # the class's own, else its module's
    lines = [
        f"# Task `{name}`",
        "",
        inspect.cleandoc(about),
        "",
        f"Run it with `kbench evaluate {name} --dataset DIR --model M`.",
    ]
    lines += [
        "",
        "## Settings",
        "",
        "The task's `Settings` (`" + task_cls.Settings.__module__ + "." + task_cls.Settings.__name__ + "`): "
        "the CLI's options and `kbench.evaluate(...)`'s keywords. Shared by every task: "
        + ", ".join(f"`{f}`" for f in SHARED_FIELDS)
        + ".",
        "",
        "| setting | type | default | description |",
        "| --- | --- | --- | --- |",
        *settings_rows(task_cls.Settings),
    ]
    if name in EVALUATE_COMMANDS:
        flags = EVALUATE_COMMANDS.get(name).flags()
        lines += ["", "## Command-line flags", "", "| setting | flag |", "| --- | --- |"]
        lines += [f"| `{'.'.join(f.path)}` | `{f.flag}` |" for f in flags]
    return "\n".join(lines) + "\n"


def recipe_page(recipe) -> str:
    raw = tomllib.loads(recipe.path.read_text(encoding="utf-8"))
    header = raw.get("pipeline", {})
    lines = [
        f"# Recipe `{recipe.name}`",
        "",
        recipe.description,
        "",
        f"`kbench build {recipe.name}`; the file is `pipelines/{recipe.path.name}`.",
        "",
        "| key | value |",
        "| --- | --- |",
        *(f"| `{k}` | {code(v)} |" for k, v in header.items() if k != "description"),
    ]
    for n, stage in enumerate(raw.get("stages", [])):
        stage_cls = STAGES.get(stage["stage"])
        given = {k: v for k, v in stage.items() if k not in ("stage", "id")}
        lines += [
            "",
            f"## {n + 1}. `{stage.get('id', stage['stage'])}`: stage `{stage['stage']}`",
            "",
            first_paragraph(stage_cls),
            "",
        ]
        lines += ["| parameter | type | default | this recipe | description |", "| --- | --- | --- | --- | --- |"]
        for name, info in stage_cls.Params.model_fields.items():
            value = code(repr(given[name])) if name in given else ""
            kind, description = code(type_name(info.annotation)), cell(info.description or "")
            lines.append(f"| `{name}` | {kind} | {default_text(info)} | {value} | {description} |")
    return "\n".join(lines) + "\n"


def cli_page() -> str:
    lines = ["# CLI reference", "", "Every command of `kbench`, read from the command tree the `kbench` program runs.", ""]
    todo = [((), command())]
    while todo:
        path, cmd = todo.pop(0)
        ctx = cmd.context_class(cmd, info_name=" ".join(("kbench", *path)))
        lines += [
            f"## `{' '.join(('kbench', *path))}`",
            "",
            f"`{' '.join(('kbench', *path, *cmd.collect_usage_pieces(ctx)))}`",
            "",
        ]
        lines += [unescape(inspect.cleandoc(cmd.help or "")), ""]
        params = [p for p in cmd.params if not getattr(p, "hidden", False)]
        if params:
            lines += ["| argument or option | type | default | description |", "| --- | --- | --- | --- |"]
            for p in params:
                names = ", ".join(f"`{o}`" for o in (*p.opts, *p.secondary_opts))
                default = "" if p.default is None or callable(p.default) or p.required else code(p.default)
                lines.append(
                    f"| {names} | {cell(param_type(p, ctx))} | {default} | {cell(unescape(getattr(p, 'help', None) or ''))} |"
                )
            lines.append("")
        if hasattr(cmd, "list_commands"):
            todo += [((*path, name), cmd.get_command(ctx, name)) for name in cmd.list_commands(ctx)]
    return "\n".join(lines)


def param_type(param, ctx) -> str:
    if hasattr(param, "display_type"):  # typer >= 0.29 (its own click)
        return param.display_type(ctx).strip("<>")
    return param.type.name


def unescape(text: str) -> str:
    return text.replace("\\[", "[")  # the help texts are escaped for Rich (kbench/cli/help_text.py)


API_MODULES = (
    "kbench.api",
    "kbench.evaluate.task",
    "kbench.protocol",
    "kbench.construct.stage",
    "kbench.records",
    "kbench.registry",
    "kbench.errors",
)


def write_pages() -> None:
    import mkdocs_gen_files

    tasks = TASKS.items()
    with mkdocs_gen_files.open("reference/tasks/index.md", "w") as fh:
        fh.write(
            "# Tasks\n\nOne page per evaluation task, generated from its folder (`kbench/tasks/<name>/`) and its `Settings`.\n\n"
        )
        fh.writelines(f"- [`{name}`]({name}.md): {first_paragraph(cls)}\n" for name, cls in sorted(tasks.items()))
    for name, cls in tasks.items():
        with mkdocs_gen_files.open(f"reference/tasks/{name}.md", "w") as fh:
            fh.write(task_page(name, cls))

    recipes = packaged_recipes()
    with mkdocs_gen_files.open("reference/recipes/index.md", "w") as fh:
        fh.write(
            "# Recipes\n\nOne page per packaged recipe (`pipelines/*.toml`), generated from the file and its stages'"
            " parameters.\n\n"
        )
        fh.writelines(f"- [`{r.name}`]({r.name}.md): {r.description}\n" for r in recipes)
    for recipe in recipes:
        with mkdocs_gen_files.open(f"reference/recipes/{recipe.name}.md", "w") as fh:
            fh.write(recipe_page(recipe))

    with mkdocs_gen_files.open("reference/cli.md", "w") as fh:
        fh.write(cli_page())

    with mkdocs_gen_files.open("reference/api.md", "w") as fh:
        fh.write(
            "# Python API reference\n\nFrom the docstrings (mkdocstrings). How to use it: [Python API](../python-api.md).\n\n"
        )
        fh.writelines(f"## `{module}`\n\n::: {module}\n\n" for module in API_MODULES)


if __name__ == "<run_path>":  # mkdocs-gen-files runs this file with runpy; tests import its functions
    write_pages()
