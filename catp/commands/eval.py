"""Registers `catp eval`. The command itself lives in the repository's evals/ package, which the wheel does not
install: `catp eval` runs from a catp checkout.

Where evals/ is found:
- beside the catp package that runs (a checkout: `python -m catp`, an editable install): the full command, with
  its options (`catp eval --help`);
- else (an installed wheel), when the user runs `catp eval`: in the current directory, a checkout's root. Only
  then, so no other `catp` command imports code from the current directory. Without it: a one-line error saying
  to run from a checkout.
"""

from __future__ import annotations

import functools
import importlib
import sys
from pathlib import Path

import typer

import catp
from catp.errors import CatpError

HELP = "Measure what survives pruning on annotated data, against baselines."
NOT_FOUND = ("catp eval runs from a catp checkout (the evals/ package is not installed with the wheel): run it in "
             "the checkout's root folder, where evals/ is (or run python -m evals there)")


def checkout_root(folder: Path) -> Path | None:
    """`folder` when it is a catp checkout's root, holding evals/cli.py."""
    return folder if (folder / "evals" / "cli.py").is_file() else None


def _import_eval_command(root: Path):
    loaded = sys.modules.get("evals")
    if loaded is None and str(root) not in sys.path:
        sys.path.append(str(root))  # appended: never shadows an installed package; worker processes inherit it
    return importlib.import_module("evals.cli").eval_command


def _checked(eval_command):
    @functools.wraps(eval_command)
    def command(*args, **kwargs):
        try:  # the report's plots need matplotlib: say so before the run, not after it
            import matplotlib  # noqa: F401
        except ModuleNotFoundError as exc:
            raise CatpError("catp eval needs the 'matplotlib' package: pip install 'catp[eval]'") from exc
        out = kwargs.get("out")
        try:  # and a report folder it cannot write, before the run too
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CatpError(f"{out}: cannot write the report there ({exc.strerror or exc})") from exc
        return eval_command(*args, **kwargs)

    return command


def register(app: typer.Typer) -> None:
    root = checkout_root(Path(catp.__file__).resolve().parents[1])
    if root is not None:
        app.command("eval", help=HELP)(_checked(_import_eval_command(root)))
        return

    @app.command("eval", help=HELP + " Runs in a catp checkout's root folder.", add_help_option=False,
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def from_the_current_folder(ctx: typer.Context) -> None:
        found = checkout_root(Path.cwd())
        if found is None:
            raise CatpError(NOT_FOUND)
        sub = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        sub.command()(_checked(_import_eval_command(found)))
        code = sub(args=list(ctx.args), prog_name="catp eval", standalone_mode=False)
        if isinstance(code, int) and code:
            raise typer.Exit(code)
