"""Bytes that are not UTF-8 on the command line reach Python as lone surrogates: a gap marker or a
question holding them is a one-line error, not a traceback from the tokenizer or the JSON encoder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from catp.errors import CatpError, InputError
from catp.pipeline import Pruner
from test_audit2_stream import route
from test_backend_faults import StandIn

ROOT = Path(__file__).resolve().parents[1]
DOC = "The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days.\n" * 20


def test_a_gap_marker_with_lone_surrogates_is_refused():
    with pytest.raises(CatpError, match="lone surrogates"):
        Pruner(gap_marker=" \udcff ")


def test_the_cli_says_so_in_one_line(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC, encoding="utf-8")
    proc = subprocess.run([sys.executable.encode(), b"-m", b"catp", b"prune", os.fsencode(doc), b"--ratio", b"1/2",
                           b"--gap-marker", b"\xff"], capture_output=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2 and proc.stderr.startswith(b"catp: error: the gap marker"), proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_a_question_with_lone_surrogates_is_refused_before_any_request():
    import catp

    with StandIn() as server:
        server.script = [route] * 20
        with pytest.raises(InputError, match="lone surrogates"):
            catp.ask(DOC, "What fee\udcff?", server=server.url, retries=0)
        assert server.requests == []
