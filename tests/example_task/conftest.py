"""The example task of docs/adding-a-task.md, `recall/`, found the way a task folder in
`kbench/tasks/` is found: this folder joins `kbench.tasks`' path for the tests here, and the task,
its command and its modules are forgotten afterwards, so no other test sees a seventh task."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import kbench.tasks
from kbench.cli.common import EVALUATE_COMMANDS
from kbench.evaluate.task import TASKS


@pytest.fixture(autouse=True)
def recall_in_kbench_tasks(monkeypatch):
    TASKS.names()  # the shipped tasks are all loaded before the snapshot below
    monkeypatch.setattr(kbench.tasks, "__path__", [*kbench.tasks.__path__, str(Path(__file__).parent)])
    monkeypatch.setattr(TASKS, "_entries", dict(TASKS._entries))
    monkeypatch.setattr(EVALUATE_COMMANDS, "_entries", dict(EVALUATE_COMMANDS._entries))
    yield
    for name in [m for m in sys.modules if m.startswith("kbench.tasks.recall")]:
        del sys.modules[name]
