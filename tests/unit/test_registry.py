"""One registration style: register at the definition, the registry finds the modules itself."""

from __future__ import annotations

import sys

import pytest

from kbench.errors import UserError
from kbench.registry import Registry


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """A package `plugs` on disk: two plug-in modules (one in a subpackage) and a private helper."""
    package = tmp_path / "plugs"
    (package / "more").mkdir(parents=True)
    (package / "__init__.py").write_text("from kbench.registry import Registry\nREG = Registry('plug', package=__name__)\n")
    (package / "zeta.py").write_text("from plugs import REG\n@REG.register('zeta')\nclass Zeta: ...\n")
    (package / "more" / "__init__.py").write_text("")
    (package / "more" / "alpha.py").write_text("from plugs import REG\n@REG.register('alpha')\nclass Alpha: ...\n")
    (package / "_private.py").write_text("raise RuntimeError('a private module is not a plug-in')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in [m for m in sys.modules if m == "plugs" or m.startswith("plugs.")]:
        del sys.modules[name]


def test_discovers_every_module_sorted(plugins):
    import plugs
    import plugs.zeta  # imported first: the order of names does not depend on it

    assert plugs.REG.names() == ["alpha", "zeta"]
    assert plugs.REG.get("alpha").__name__ == "Alpha"
    with pytest.raises(UserError, match="unknown plug 'beta'; known: alpha, zeta"):
        plugs.REG.get("beta")


def test_a_name_registered_twice_names_both_definitions():
    registry: Registry[type] = Registry("thing")

    class First: ...

    class Second: ...

    registry.add("x", First)
    registry.add("x", First)  # the same definition again (a module imported twice) is fine
    with pytest.raises(ValueError, match="thing 'x' is registered twice: .*First and .*Second"):
        registry.add("x", Second)


def test_every_kind_is_discovered_from_its_package():
    from kbench.cli.common import EVALUATE_COMMANDS
    from kbench.construct.executors import EXECUTORS
    from kbench.construct.frequency import FREQUENCY_SOURCES
    from kbench.construct.stage import STAGES
    from kbench.evaluate.task import TASKS
    from kbench.tasks.kee.techniques import TECHNIQUES
    from kbench.models.interface import BACKENDS

    assert EXECUTORS.names() == ["local", "ray"]
    assert "pageviews" in FREQUENCY_SOURCES.names() and "extract_rebel" in STAGES.names()
    assert TASKS.names() == EVALUATE_COMMANDS.names() and "caa" in TECHNIQUES.names() and BACKENDS.names() == ["hf", "openai", "vllm"]


def test_a_lookup_imports_the_module_named_like_the_plug_in_first(plugins):
    import plugs

    assert plugs.REG.get("zeta").__name__ == "Zeta"
    assert "plugs.zeta" in sys.modules and "plugs.more.alpha" not in sys.modules  # the rest stays unimported
    assert plugs.REG.get("alpha").__name__ == "Alpha"  # no module `plugs.alpha`: the whole package is walked


def test_a_registry_may_look_in_several_packages(plugins, tmp_path):
    """Tasks live in kbench.evaluate and, one folder each, in kbench.tasks: one registry, both packages."""
    (tmp_path / "folders" / "omega").mkdir(parents=True)
    (tmp_path / "folders" / "__init__.py").write_text("")
    (tmp_path / "folders" / "omega" / "__init__.py").write_text("from plugs import BOTH\n@BOTH.register('omega')\nclass Omega: ...\n")
    import plugs

    plugs.BOTH = Registry("plug", package=("plugs", "folders"))
    try:
        assert plugs.BOTH.get("omega").__name__ == "Omega"  # found in its own folder, the rest unimported
        assert "plugs.zeta" not in sys.modules
        assert "alpha" not in plugs.BOTH.names()  # plugs registers into REG, not BOTH: nothing leaks
    finally:
        for name in [m for m in sys.modules if m == "folders" or m.startswith("folders.")]:
            del sys.modules[name]


def test_a_plug_in_without_a_name_is_named_by_its_folder(plugins, tmp_path):
    """`@TASKS.register()` in kbench/tasks/recall/task.py names the task "recall"; a folder needs no
    __init__.py (a namespace package) and is found by the whole-package walk too."""
    (tmp_path / "plugs" / "recall").mkdir()
    (tmp_path / "plugs" / "recall" / "task.py").write_text("from plugs import REG\n@REG.register()\nclass Recall: ...\n")
    import plugs

    assert plugs.REG.names() == ["alpha", "recall", "zeta"]
    assert plugs.REG.get("recall").__module__ == "plugs.recall.task"
    with pytest.raises(ValueError, match="not in a folder of plugs"):
        plugs.REG.register()(type("Loose", (), {"__module__": "elsewhere"}))
