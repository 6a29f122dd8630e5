"""`catp ask --stream` when the stream breaks after part of the answer was printed: the partial answer
ends its line on stdout, and the one-line error (exit 3) says the answer above is incomplete.

STAND-IN: a path-cut_answer_routed stdlib server (test_backend_faults' StandIn): a real vLLM server cannot be
made to cut a stream on cue (test_backend_kill breaks a real one, at the client level)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _standin import StandIn, cut_answer_route

ROOT = Path(__file__).resolve().parents[3]


def test_a_stream_cut_mid_answer_ends_the_line_and_says_so(tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text("The Licensee shall pay the Licensor a fee of $5,000 within thirty (30) days.\n" * 20)
    with StandIn() as server:
        server.script = [cut_answer_route] * 20
        proc = subprocess.run([sys.executable, "-m", "catp", "ask", str(doc), "What fee?", "--server", server.url,
                               "--stream", "--retries", "0", "--max-tokens", "64"],
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == "The fee is $5,000\n"
    error = proc.stderr.splitlines()[-1]
    assert error.startswith("catp: error: ") and "mid-stream" in error and "incomplete" in error, error
