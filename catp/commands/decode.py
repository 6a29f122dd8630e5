"""`catp decode FILE|-`: print the text catp reads from a file, which `catp prune`'s offsets refer to."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from catp.commands.output import echo_text, write_output
from catp.config import DEFAULTS


def decode_command(
    file: str = typer.Argument(..., help="A text, PDF, DOCX or HTML file, or - for stdin."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout (- is stdout)."),
    encoding: Optional[str] = typer.Option(DEFAULTS.encoding, "--encoding", help="Override encoding detection (text and HTML, not PDF or DOCX)."),
    max_bytes: int = typer.Option(DEFAULTS.max_bytes, "--max-bytes", min=1, help="Refuse inputs larger than this."),
    quiet: bool = typer.Option(False, "--quiet", help="No warnings or summary on stderr."),
) -> None:
    """Print FILE's text as catp reads it: decoded, or extracted from a PDF, DOCX or HTML file. The
    `start`/`end` offsets of `catp prune --format json` index this text (as Python characters); nothing is added."""
    from catp.decode import read_input

    decoded = read_input(file, encoding=encoding, max_bytes=max_bytes)
    if output and str(output) != "-":
        write_output(output, decoded.text)
    else:
        echo_text(decoded.text, nl=False)
    if not quiet:
        for warning in decoded.warnings:
            typer.echo(f"catp: warning: {warning}", err=True)
        how = f"encoding {decoded.encoding}" if decoded.encoding else "extracted text"
        typer.echo(f"catp: {file}: {decoded.format}, {how}, {len(decoded.text):,} characters", err=True)


def register(app: typer.Typer) -> None:
    app.command("decode")(decode_command)
