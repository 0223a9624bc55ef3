"""Every help text shows its bracketed words: Rich reads `[suite]` or `[@REVISION]` as markup unless escaped."""

from __future__ import annotations

import re

import pytest

BRACKETED = re.compile(r"\[[^\[\]\s]+\]")  # [suite], [@REVISION]; inside [[models]] too


def _commands():
    """(path, click command) for every command and group of the CLI, `kbench evaluate TASK` included."""
    from kbench.cli.main import command

    root = command()  # what `kbench` runs
    found, todo = [], [((), root)]
    while todo:
        path, command = todo.pop()
        found.append((path, command))
        if hasattr(command, "list_commands"):  # a group (typer may vendor its own click)
            ctx = command.context_class(command, info_name=path[-1] if path else "kbench")
            todo += [((*path, name), command.get_command(ctx, name)) for name in command.list_commands(ctx)]
    return root, found


ROOT, COMMANDS = _commands()


def _texts(command) -> list[str]:
    texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
    return [text.replace("\\[", "[") for text in texts]  # as the author wrote them


def test_the_tree_holds_every_command_family():
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {"suite run", "evaluate extraction", "build", "claims", "version"} <= paths
    assert any(BRACKETED.search(text) for _, command in COMMANDS for text in _texts(command))  # the test has work to do


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=lambda path: " ".join(path) or "kbench")
def test_help_keeps_every_bracketed_word(path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside a word
    command = dict(COMMANDS)[path]
    assert ROOT.main(args=[*path, "--help"], prog_name="kbench", standalone_mode=False) == 0  # --help's exit code
    shown = " ".join(capsys.readouterr().out.split())
    wanted = {word for text in _texts(command) for word in BRACKETED.findall(text)}
    assert not {word for word in wanted if word not in shown}, shown
