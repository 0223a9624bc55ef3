"""Entry point: assembles the command groups and turns user errors into exit code 2."""

from __future__ import annotations

import errno
import sys

import typer

from kbench.cli.common import EvaluateCommands
from kbench.errors import UserError

app = typer.Typer(
    name="kbench",
    help="Build knowledge-probing benchmarks and evaluate what language models know.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
evaluate_app = typer.Typer(help="Evaluate a model on a built dataset.", no_args_is_help=True, cls=EvaluateCommands)
app.add_typer(evaluate_app, name="evaluate")


def _print_version(value: bool) -> None:
    # An eager option's callback: it runs while the arguments are parsed, so `kbench --version` needs no command.
    if value:
        from kbench.cli.versions import version_line

        typer.echo(version_line())
        raise typer.Exit(0)


@app.callback()
def _logging(
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Log debug records too (same as --log-level DEBUG)."),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG | INFO | WARNING | ERROR: kbench's records on stderr."),
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print kbench's version (and commit) and exit."
    ),
) -> None:
    from kbench.logs import configure

    try:
        configure("DEBUG" if verbose else log_level)
    except ValueError:
        raise UserError(f"--log-level {log_level}: not one of DEBUG, INFO, WARNING, ERROR") from None


def _register() -> None:
    # Every module of kbench.cli adds its commands to `app` or `evaluate_app` (one file per command family).
    from kbench.registry import import_package

    import_package("kbench.cli")


_register()

_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.EPERM}


def _click_kind(exc: BaseException) -> str | None:
    """The kind of a click control-flow exception ("exit", "abort", "help", "usage"), else None.

    Matched by class name along the MRO: typer >= 0.29 raises its vendored `typer._click`
    classes, older typer raises the `click` package's, and a user may have either."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "Exit" in names:
        return "exit"
    if "Abort" in names:
        return "abort"
    if "NoArgsIsHelpError" in names:
        return "help"
    if "ClickException" in names:
        return "usage"
    return None


def command():
    """The click command that `main` runs: `app(...)`'s own, its help texts escaped for Rich (cli/help_text.py)."""
    from kbench.cli.help_text import escape_help

    return escape_help(typer.main.get_command(app))


def main(argv: list[str] | None = None) -> None:
    try:
        command()(args=argv, prog_name="kbench", standalone_mode=False)
    except UserError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _interrupted()
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            raise
        typer.echo(f"error: {exc.strerror}: {exc.filename or ''}".rstrip(": "), err=True)
        sys.exit(2)
    except Exception as exc:
        kind = _click_kind(exc)
        if kind is None:
            raise
        if kind == "exit":
            sys.exit(exc.exit_code)
        if kind == "abort":
            _interrupted()
        exc.show()  # usage line, "Try 'kbench --help'", one-line reason; or, for a bare group, its help
        # a bare `kbench` (or `kbench evaluate`) asks for the help: that is not an error
        sys.exit(0 if kind == "help" else exc.exit_code)


def _interrupted() -> None:
    typer.echo("interrupted: finished work is kept; rerun the same command to resume", err=True)
    sys.exit(130)
