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
from _standin import StandIn, cut_answer_route as route

ROOT = Path(__file__).resolve().parents[3]
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


@pytest.mark.parametrize("args, env, needle", [
    ([b"budget", b"--server", b"http://127.0.0.1:1/v\xff1"], {}, b"server URL"),
    ([b"budget", b"--server", b"http://127.0.0.1:1/v1", b"--model", b"m\xff"], {}, b"model name"),
    ([b"budget", b"--server", b"http://127.0.0.1:1/v1"], {b"CATP_API_KEY": b"k\xc3\xa9y"}, b"API key"),
    ([b"ask", b"DOC", b"What fee?", b"--server", b"http://127.0.0.1:1/v1", b"--system", b"be \xff"], {},
     b"lone surrogates"),
])
def test_server_settings_that_cannot_be_sent_are_one_line_before_connecting(tmp_path, args, env, needle):
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC, encoding="utf-8")
    args = [os.fsencode(doc) if a == b"DOC" else a for a in args]
    proc = subprocess.run([sys.executable.encode(), b"-m", b"catp", *args, b"--retries", b"0"], capture_output=True,
                          cwd=ROOT, timeout=300, env={**os.environb, b"PYTHONPATH": os.fsencode(ROOT), **env})
    assert proc.returncode == 2 and proc.stderr.startswith(b"catp: error: ") and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and b"k\xc3\xa9y" not in proc.stderr
