"""A task's `kbench evaluate` options, generated from its pydantic `Settings` model, so every
default has one home: the model. Each field becomes one option: its name (`fewshot` ->
`--fewshot`), its type, its help (the Field's description) and the default shown in `--help`
(read from the model; the option itself defaults to None, "the model's default", so a command can
tell a flag the user typed from one left out).

A nested model (XTEVAL's `finetune: FinetuneConfig`) gives one option per field of its own, named
with the prefix the command chooses (`finetune` -> "": `--lr`; `softprompt` -> "prompt-":
`--prompt-lr`); `renames` gives single fields another flag (`finetune.batch_size` ->
`--train-batch-size`, as `--batch-size` is the model's). A tuple field is a repeatable option, or
one comma-separated value where the command's `comma` or the field itself asks for it
(`Field(..., json_schema_extra={"comma": True})`: choice's `--top-k 5,10`). Validation errors name the flag.
"""

from __future__ import annotations

import inspect
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Optional

import typer
from pydantic import BaseModel

#: TaskSettings' own fields: shared options every evaluate command declares itself (cli/common.py).
SHARED_FIELDS = ("split", "config", "limit", "seed")


@dataclass(frozen=True)
class Flag:
    path: tuple[str, ...]  # ("finetune", "lr"): where the value goes in the settings
    flag: str  # "--lr"
    annotation: Any  # what typer parses
    option: Any  # the typer.Option
    comma: bool  # a tuple given as one comma-separated value

    @property
    def param(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


def settings_flags(
    settings: type[BaseModel],
    prefixes: dict[str, str] | None = None,
    renames: dict[str, str] | None = None,
    exclude: tuple[str, ...] = (),
    comma: tuple[str, ...] = (),
) -> list[Flag]:
    """One Flag per settings field (dotted paths in `renames`, `exclude` and `comma`)."""
    prefixes, renames = prefixes or {}, renames or {}
    out: list[Flag] = []

    def walk(model: type[BaseModel], path: tuple[str, ...], prefix: str) -> None:
        for name, info in model.model_fields.items():
            dotted = ".".join((*path, name))
            if (not path and name in SHARED_FIELDS) or dotted in exclude:
                continue
            kind, _ = _unwrap(info.annotation)
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                walk(kind, (*path, name), prefixes.get(dotted, f"{name}-"))
                continue
            flag = renames.get(dotted) or f"--{prefix}{name.replace('_', '-')}"
            asks = isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("comma") is True
            out.append(_flag((*path, name), flag, info, dotted in comma or asks))

    walk(settings, (), "")
    flags = [f.flag for f in out]
    if len(set(flags)) != len(flags):
        twice = sorted({f for f in flags if flags.count(f) > 1})
        raise ValueError(f"{settings.__name__}: two settings give the same flag: {twice}; rename one")
    return out


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(the type without `| None`, whether None is allowed)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0] if len(rest) == 1 else annotation, True
    return annotation, False


def _flag(path: tuple[str, ...], flag: str, info, comma: bool) -> Flag:
    kind, _ = _unwrap(info.annotation)
    default = info.get_default(call_default_factory=True)
    help_text = info.description or ""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Literal:
        choices = " | ".join(str(a) for a in args)
        help_text = f"{help_text} ({choices})" if help_text else choices
        kind = type(args[0])
    if kind is bool:
        spelled = f"--no-{flag.removeprefix('--')}" if default else flag
        option = typer.Option(default, f"{flag}/{spelled}" if default else flag, help=help_text, show_default=False)
        return Flag(path, flag, bool, option, comma)
    if origin is tuple:
        item = args[0]
        if comma:
            kind, help_text = str, f"{help_text} Comma-separated." if help_text else "Comma-separated."
        else:
            kind, help_text = list[item], f"{help_text} Repeatable." if help_text else "Repeatable."
        shown = ",".join(map(str, default)) if default else False
    elif kind in (int, float, str):
        shown = str(default) if default is not None else False
    else:
        raise TypeError(f"settings field {'.'.join(path)}: no CLI option for {info.annotation!r}; exclude it and add one")
    if shown:  # as text: typer would put a string default in parentheses, rich reads [..] as markup
        help_text = f"{help_text} (default: {shown})"
    option = typer.Option(None, flag, help=help_text, show_default=False)
    return Flag(path, flag, Optional[kind], option, comma)


def parameters(flags: list[Flag]) -> list[inspect.Parameter]:
    return [inspect.Parameter(f.param, inspect.Parameter.KEYWORD_ONLY, default=f.option, annotation=f.annotation) for f in flags]


def collect(flags: list[Flag], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The values the user gave (popped from `kwargs`), nested as the settings model nests them."""
    values: dict[str, Any] = {}
    for f in flags:
        value = kwargs.pop(f.param)
        if value is None or (isinstance(value, (list, tuple)) and not value):  # a repeatable option not given
            continue
        if f.comma:
            value = tuple(v.strip() for v in value.split(",") if v.strip())
        elif isinstance(value, (list, tuple)):
            value = tuple(value)
        target = values
        for key in f.path[:-1]:
            target = target.setdefault(key, {})
        target[f.path[-1]] = value
    return values
