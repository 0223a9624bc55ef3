"""One registry helper for every pluggable kind: tasks, techniques, model backends, executors,
stages, frequency sources, QA scorers, packaged models and evaluate commands.

    EXECUTORS = Registry("executor", package="kbench.construct.executors")

    @EXECUTORS.register("local")                # in kbench/construct/executors/local.py
    class LocalExecutor: ...

Register at the definition site; the registry finds the definitions itself: on the first lookup
it imports every module of `package` (and of its subpackages, a folder of modules without
`__init__.py` included; names starting with "_" are skipped), so a new plug-in is one new module
and no list is kept by hand. `package` may name several packages. `register()` without a name
names the plug-in by its folder, the package right below the registry's: a task is
`@TASKS.register()` in `kbench/tasks/<name>/task.py`. `get(name)` first tries the module named
like the plug-in (`home`, by default `kbench.construct.executors.local`; a task's is `kbench.tasks.extraction.task`),
so one lookup does not import every plug-in's dependencies; the whole package is imported when
that module does not have it. A duplicate name is a programming error (`ValueError`, both
definitions named); an unknown name is a `UserError` that lists the known ones, never a silent
skip. Names are listed sorted, whatever order the modules happened to be imported in.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from kbench.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str | tuple[str, ...] | None = None, home: str = "{package}.{name}"):
        self.kind = kind
        self._packages = (package,) if isinstance(package, str) else tuple(package or ())
        self._home = home
        self._entries: dict[str, T] = {}
        self._loaded = package is None

    def register(self, name: str | None = None) -> Callable[[T], T]:
        """Register at the definition; without a name, the entry is named by its folder: the package
        right below the registry's (`kbench.tasks.choice.task` -> "choice")."""

        def decorate(entry: T) -> T:
            self.add(name or self._folder_of(entry), entry)
            return entry

        return decorate

    def add(self, name: str, entry: T) -> None:
        existing = self._entries.get(name)
        if existing is not None and existing is not entry:
            raise ValueError(f"{self.kind} {name!r} is registered twice: {_where(existing)} and {_where(entry)}")
        self._entries[name] = entry

    def _folder_of(self, entry: object) -> str:
        module = getattr(entry, "__module__", "")
        for package in self._packages:
            if module.startswith(f"{package}."):
                return module.removeprefix(f"{package}.").split(".")[0]
        raise ValueError(f"{_where(entry)} is not in a folder of {' or '.join(self._packages) or '(no package)'}: name it")

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True  # first: a module that looks a name up while being imported must not recurse
            for package in self._packages:
                import_package(package)

    def _load_module_named(self, name: str) -> None:
        if not name.isidentifier():
            return
        for package in self._packages:
            module = self._home.format(package=package, name=name)
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name is None or not f"{module}.".startswith(f"{exc.name}."):
                    raise  # a missing dependency of the plug-in, not a missing plug-in
            if name in self._entries:
                return

    def names(self) -> list[str]:
        self._load()
        return sorted(self._entries)

    def items(self) -> dict[str, T]:
        self._load()
        return {name: self._entries[name] for name in sorted(self._entries)}

    def __contains__(self, name: str) -> bool:
        try:
            self.get(name)
        except UserError:
            return False
        return True

    def get(self, name: str) -> T:
        if name not in self._entries:
            self._load_module_named(name)  # the usual home first: `evaluate extraction` need not import torch
        if name not in self._entries:
            self._load()
        if name not in self._entries:
            raise UserError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names()) or '(none)'}")
        return self._entries[name]


def import_package(package: str) -> None:
    """Import every module of `package` and of its subpackages, skipping private ("_") names. A
    folder of modules without `__init__.py` (a namespace package) counts as a subpackage."""
    root = importlib.import_module(package)
    for info in pkgutil.iter_modules(root.__path__, prefix=f"{package}."):
        if not info.name.rsplit(".", 1)[1].startswith("_"):
            importlib.import_module(info.name)
            if info.ispkg:
                import_package(info.name)
    for folder in sorted({p for path in root.__path__ for p in Path(path).iterdir() if _namespace_folder(p)}):
        import_package(f"{package}.{folder.name}")


def _namespace_folder(path: Path) -> bool:
    return (
        path.is_dir()
        and path.name.isidentifier()
        and not path.name.startswith("_")
        and not (path / "__init__.py").exists()
        and any(path.glob("*.py"))
    )


def _where(entry: object) -> str:
    module = getattr(entry, "__module__", None)
    qualname = getattr(entry, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(entry)
