"""The `catp` command line. Each command lives in catp/commands/ and registers itself."""

from __future__ import annotations

import errno
import importlib
import sys
import warnings

import typer

from catp.errors import CatpError

app = typer.Typer(name="catp", help="Context-Aware Token Pruning: fit long documents to a token budget, extractively.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

def _print_version(value: bool) -> None:
    if value:
        from catp import __version__

        typer.echo(f"catp {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="Print catp's version and exit.")) -> None:
    """catp: prune long documents to fit a model's token budget, keeping the facts."""


# Optional dependencies, by the pyproject extra that installs them.
EXTRAS = {
    "eval": ("matplotlib", "dateparser", "datefinder", "jionlp", "emoji", "recognizers_text", "recognizers_number",
             "recognizers_number_with_unit"),
    "lm": ("torch", "transformers", "safetensors", "huggingface_hub"),
    "ray": ("ray",),
    "parquet": ("pyarrow",),
    "serve": ("starlette", "uvicorn", "prometheus_client", "orjson"),
}

COMMAND_MODULES = ("prune", "rules", "eval", "ask", "budget", "batch", "decode", "serve")


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        module_name = f"catp.commands.{name}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # that command is not part of this build
            raise
        module.register(app)


_register_commands()


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors become one line on stderr and exit code 2 (3 for backends)."""
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            code = app(args=argv, standalone_mode=False)
        if code == 130:  # typer turns Ctrl-C into this exit code, silently
            typer.echo("catp: interrupted", err=True)
        return code if isinstance(code, int) else 0
    except CatpError as exc:
        _error(str(exc))
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        typer.echo("catp: aborted", err=True)
        return 130
    except KeyboardInterrupt:
        typer.echo("catp: interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit as exc:  # click turns a broken pipe into exit 1 (batch's "some rows failed"): 0 as above
        if isinstance(exc.__context__, OSError) and exc.__context__.errno == errno.EPIPE:
            return 0
        raise
    except ModuleNotFoundError as exc:  # an optional dependency (an extra) is not installed
        package = (exc.name or "").split(".")[0]
        if not package or package in ("catp", "evals"):
            raise
        extra = next((e for e, names in EXTRAS.items() if package in names), None)
        _error(f"the {package!r} package is not installed" + (f": pip install 'catp[{extra}]'" if extra else ""))
        return 2
    except OSError as exc:  # the system refused a read or write (disk full, I/O error): one line too
        where = f"{exc.filename}: " if exc.filename else ""
        _error(f"{where}{exc.strerror or exc}")
        return 2
    except Exception as exc:
        if hasattr(exc, "format_message"):  # click usage errors (typer vendors click)
            _error(exc.format_message())
            return 2
        raise
    return 0


def _error(message: str) -> None:
    """One line, always: messages from parsers (YAML, pydantic) may hold newlines and indentation."""
    typer.echo(f"catp: error: {' '.join(message.split())}", err=True)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Python warnings (e.g. --scorer auto falling back to lexical) as catp's own one-line warnings."""
    typer.echo(f"catp: warning: {' '.join(str(message).split())}", err=True)


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
