"""kbench: build knowledge-probing benchmarks and evaluate what language models know.

    import kbench
    built = kbench.build("lama", data_dir="~/kbench-data")
    result = kbench.evaluate("extraction", dataset=built.path, model="smollm2-135m", limit=20)
    kbench.report([result.run_dir], out="report")

The names are resolved on first use, so `import kbench` stays light (see kbench/api.py).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import types
from typing import TYPE_CHECKING, Any

try:  # one home for the version: pyproject.toml, read back from the installed package's metadata
    __version__ = importlib.metadata.version("kbench")
except importlib.metadata.PackageNotFoundError:  # a bare source tree on sys.path, never installed
    __version__ = "0+unknown"
__all__ = ["BuiltDataset", "EvalResult", "build", "evaluate", "report", "__version__"]

if TYPE_CHECKING:
    from kbench.api import BuiltDataset, EvalResult, build, evaluate, report


def __getattr__(name: str) -> Any:
    if name in ("evaluate", "report"):  # callable subpackages (kbench/api.py says why)
        return importlib.import_module(f"kbench.{name}")
    if name in ("build", "BuiltDataset", "EvalResult"):
        return getattr(importlib.import_module("kbench.api"), name)
    raise AttributeError(f"module 'kbench' has no attribute {name!r}")


class CallableModule(types.ModuleType):
    """A package that is also a function: calling it calls `kbench.api.<its last name>`. The API is
    the top of the house: it is looked up on the call, so the package never imports it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        api = importlib.import_module("kbench.api")
        return getattr(api, self.__name__.rsplit(".", 1)[-1])(*args, **kwargs)


def make_callable(module_name: str) -> None:
    """Let `kbench.<module_name>(...)` call the API function of that name (see kbench/api.py)."""
    sys.modules[module_name].__class__ = CallableModule
