"""One registry helper for every pluggable kind: stages, techniques, frequency sources, QA
scorers, packaged models and evaluation tasks.

    TASKS = Registry("evaluation task", modules=("kbench.evaluate.extraction", ...))

    @TASKS.register("extraction")
    class Extraction: ...

Register at the definition site. A duplicate name is a programming error (`ValueError`, both
definitions named); an unknown name is a `UserError` that lists the known ones, never a silent
skip. `modules` are imported on first lookup, so the registrations in them have run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from kbench.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, modules: Iterable[str] = ()):
        self.kind = kind
        self._modules = tuple(modules)
        self._entries: dict[str, T] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        def decorate(entry: T) -> T:
            self.add(name, entry)
            return entry

        return decorate

    def add(self, name: str, entry: T) -> None:
        existing = self._entries.get(name)
        if existing is not None and existing is not entry:
            raise ValueError(f"{self.kind} {name!r} is registered twice: {_where(existing)} and {_where(entry)}")
        self._entries[name] = entry

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            for module in self._modules:
                importlib.import_module(module)

    def names(self) -> list[str]:
        self._load()
        return list(self._entries)

    def items(self) -> dict[str, T]:
        self._load()
        return dict(self._entries)

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._entries

    def get(self, name: str) -> T:
        self._load()
        if name not in self._entries:
            raise UserError(f"unknown {self.kind} {name!r}; known: {', '.join(self._entries) or '(none)'}")
        return self._entries[name]


def _where(entry: object) -> str:
    module = getattr(entry, "__module__", None)
    qualname = getattr(entry, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(entry)
