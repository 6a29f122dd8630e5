"""Registers `catp eval` (the command itself lives in the evals package)."""

from __future__ import annotations

import functools

import typer

from catp.errors import CatpError


def register(app: typer.Typer) -> None:
    from evals.cli import eval_command

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

    app.command("eval", help="Measure what survives pruning on annotated data, against baselines.")(command)
