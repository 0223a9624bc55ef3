"""Registry of knowledge-elicitation techniques: one module per technique, registered where it
is defined with `@register_technique("name", **params)`.

`get_technique("caa")` returns a configured instance; an unknown name is a UserError that
lists the known ones. One class may be registered under several names with different
parameters (temp0.7 / temp1.2).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from kbench.errors import UserError

_REGISTRY: dict[str, tuple[type, dict[str, Any]]] = {}
_MODULES = ("baseline", "temperature", "recite", "genread", "caa", "iti", "decore", "activation_decoding")


def register_technique(name: str, **params: Any) -> Callable[[type], type]:
    def decorate(cls: type) -> type:
        if name in _REGISTRY:
            raise ValueError(f"technique {name!r} is registered twice")
        _REGISTRY[name] = (cls, params)
        return cls

    return decorate


def _load_all() -> None:
    for module in _MODULES:
        importlib.import_module(f"{__name__}.{module}")


def known_techniques() -> list[str]:
    _load_all()
    return list(_REGISTRY)


def get_technique(name: str, **overrides: Any):
    """A technique instance; `overrides` replace registered parameters (e.g. recite runs=5)."""
    _load_all()
    if name not in _REGISTRY:
        raise UserError(f"unknown technique {name!r}; known techniques: {', '.join(_REGISTRY)}")
    cls, params = _REGISTRY[name]
    instance = cls(**{**params, **overrides})
    instance.name = name
    return instance
