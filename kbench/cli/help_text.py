"""Help texts shown as written. Typer renders `--help` with Rich, which reads `[suite]`, `[[models]]` or
`[@REVISION]` as markup tags and drops them; every help text of a command is escaped once, when the command
exists (the top-level tree in `main`, each lazily built `kbench evaluate TASK` in `EvaluateCommands`)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape


def escape_help(command: Any) -> Any:
    """Escape the help of `command`, its parameters and the subcommands it holds so far (in place; returned)."""
    if getattr(command, "_kbench_help_escaped", False):  # escaping twice would show the backslashes
        return command
    for attr in ("help", "short_help", "epilog"):
        if getattr(command, attr, None):
            setattr(command, attr, escape(getattr(command, attr)))
    for param in command.params:
        if getattr(param, "help", None):
            param.help = escape(param.help)
    command._kbench_help_escaped = True
    for sub in getattr(command, "commands", {}).values():  # a group: the subcommands built so far
        escape_help(sub)
    return command
