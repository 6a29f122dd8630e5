"""`python -m evals ...`: the same command as `catp eval ...`."""

from __future__ import annotations

import sys

import typer

from catp.errors import CatpError
from evals.cli import eval_command

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command()(eval_command)


def main(argv: list[str] | None = None) -> int:
    try:
        app(args=argv, prog_name="python -m evals", standalone_mode=False)
    except CatpError as exc:
        typer.echo(f"evals: error: {exc}", err=True)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        typer.echo("evals: interrupted", err=True)
        return 130
    except Exception as exc:
        if hasattr(exc, "format_message"):  # click usage errors
            typer.echo(f"evals: error: {exc.format_message()}", err=True)
            return 2
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
