"""Issue 25's rough edges: text written as it is, encodings, scripts without sentence marks, the rules
commands, and the CLI's small promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANSI = "Clause 1. The A\x1b[31mred\x1b[0m fee is $5,000 and is due on 5 March 2024.\n"


def catp(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catp", *args], input=stdin, capture_output=True, cwd=ROOT,
                          timeout=120)


def test_decode_and_prune_write_ansi_escapes_as_they_are(tmp_path):
    """typer.echo removed ANSI escapes when stdout was a pipe: decode's text must be what the offsets index
    and prune's the library's result."""
    path = tmp_path / "a.txt"
    path.write_bytes(ANSI.encode())
    decoded = catp("decode", str(path))
    assert decoded.returncode == 0, decoded.stderr
    assert decoded.stdout == ANSI.encode()
    pruned = catp("prune", str(path), "--budget", "500", "--quiet")
    assert pruned.returncode == 0, pruned.stderr
    from catp import prune

    assert pruned.stdout == (prune(ANSI, budget=500).text + "\n").encode()
    assert b"\x1b[31m" in pruned.stdout

