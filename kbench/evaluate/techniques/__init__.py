"""Registry of knowledge-elicitation techniques: one module per technique, registered where it
is defined with `@register_technique("name", **params)`.

`get_technique("caa")` returns a configured instance; an unknown name is a UserError that
lists the known ones. One class may be registered under several names with different
parameters (temp0.7 / temp1.2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kbench.registry import Registry

_MODULES = ("baseline", "temperature", "recite", "genread", "caa", "iti", "decore", "activation_decoding")
TECHNIQUES: Registry[tuple[type, dict[str, Any]]] = Registry("technique", modules=(f"{__name__}.{m}" for m in _MODULES))


def register_technique(name: str, **params: Any) -> Callable[[type], type]:
    def decorate(cls: type) -> type:
        TECHNIQUES.add(name, (cls, params))
        return cls

    return decorate


def known_techniques() -> list[str]:
    return TECHNIQUES.names()


def get_technique(name: str, **overrides: Any):
    """A technique instance; `overrides` replace registered parameters (e.g. recite runs=5)."""
    cls, params = TECHNIQUES.get(name)
    instance = cls(**{**params, **overrides})
    instance.name = name
    return instance
