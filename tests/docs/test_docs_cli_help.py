"""`catp X --help` says what the docs say: the extras to install and the formats read (the help is rich
markup, where `[ray]` would be taken for a tag and vanish)."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from catp.cli import app


def help_text(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())


def test_batch_help_names_the_ray_extra():
    assert "pip install 'catp[ray]'" in help_text("batch")


def test_decode_help_names_every_format_it_reads():
    text = help_text("decode")
    assert "PDF, DOCX or HTML" in text and "text and HTML" in text, text
