"""Registry of knowledge-elicitation techniques: one module per technique, registered where it
is defined with `@register_technique("name", **params)`.

`get_technique("caa")` returns a configured instance; an unknown name is a UserError that
lists the known ones. One class may be registered under several names with different
parameters (temp0.7 / temp1.2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbench.errors import UserError
from kbench.registry import Registry

if TYPE_CHECKING:  # base imports this package's registry users; the type alone is needed here
    from kbench.tasks.kee.techniques.base import Technique

TECHNIQUES: Registry[tuple[type[Technique], dict[str, Any]]] = Registry("technique", package=__name__)


def register_technique(name: str, **params: Any) -> Callable[[type[Technique]], type[Technique]]:
    def decorate(cls: type[Technique]) -> type[Technique]:
        TECHNIQUES.add(name, (cls, params))
        return cls

    return decorate


def known_techniques() -> list[str]:
    """Registered names, sorted."""
    return TECHNIQUES.names()


def is_sampling(name: str) -> bool:
    """Whether `name` is a temperature-sampling technique (family "sampling"): it answers from the
    baseline's prompt and weights. False for a name no longer registered (an old results file)."""
    return name in TECHNIQUES and TECHNIQUES.get(name)[0].family == "sampling"


def get_technique(name: str, **overrides: Any):
    """A technique instance; `overrides` replace registered parameters (e.g. recite runs=5).
    Unknown or invalid parameters are a UserError naming the technique and the parameter."""
    from pydantic import ValidationError

    cls, params = TECHNIQUES.get(name)
    try:
        instance = cls(**{**params, **overrides})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UserError(f"technique {name!r}: {problems} (its parameters: {', '.join(cls.Params.model_fields)})") from None
    instance.name = name
    return instance


def parse_technique_params(entries: list[str]) -> dict[str, dict[str, Any]]:
    """["iti.heads=13", "caa.multiplier=2"] -> {"iti": {"heads": 13}, "caa": {"multiplier": 2}}.
    Values are read as JSON (numbers, true/false, null), else kept as text; each technique
    validates its own keys and values."""
    import json

    out: dict[str, dict[str, Any]] = {}
    for entry in entries:
        key, sep, text = entry.partition("=")
        name, dot, param = key.strip().rpartition(".")  # the last dot: names such as temp0.7 have one
        if not (sep and dot and name and param):
            raise UserError(f"--technique-param {entry!r}: expected NAME.KEY=VALUE, e.g. iti.heads=13")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        out.setdefault(name, {})[param] = value
    return out
