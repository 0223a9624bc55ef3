"""Entry point: assembles the command groups and turns user errors into exit code 2."""

from __future__ import annotations

import errno
import sys

import typer

from kbench.errors import UserError

app = typer.Typer(
    name="kbench",
    help="Build knowledge-probing benchmarks and evaluate what language models know.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
evaluate_app = typer.Typer(help="Evaluate a model on a built dataset.", no_args_is_help=True)
app.add_typer(evaluate_app, name="evaluate")


def _register() -> None:
    # Each module adds its commands to `app` or `evaluate_app`; one file per command family.
    from kbench.cli import (
        build_cmd,  # noqa: F401
        cache_cmd,  # noqa: F401
        card_cmd,  # noqa: F401
        data_cmd,  # noqa: F401
        eval_extraction,  # noqa: F401
        eval_kee,  # noqa: F401
        eval_qa,  # noqa: F401
        eval_truefalse,  # noqa: F401
        eval_xteval,  # noqa: F401
        export_cmd,  # noqa: F401
        read_cmd,  # noqa: F401
        recipes_cmd,  # noqa: F401
        report_cmd,  # noqa: F401
        wikidata_cmd,  # noqa: F401
    )


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


def main(argv: list[str] | None = None) -> None:
    try:
        app(args=argv, prog_name="kbench", standalone_mode=False)
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
