"""Registers `catp eval` (the command itself lives in the evals package)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from evals.cli import eval_command

    app.command("eval", help="Measure what survives pruning on annotated data, against baselines.")(eval_command)
