"""`catp batch` run as a user runs it: a child process with its own pipes, and its JSONL rows read back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = (ROOT / "examples" / "contract_en.txt").read_text(encoding="utf-8")


def catp(*args: str, cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "catp", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, **kwargs)


def rows(path: Path) -> list[dict]:
    """The rows of a JSONL output, which must end whole (with a newline)."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]


def start_on_contracts(cwd: Path, n: int, jobs: str, stop: int, wait_s: float) -> tuple[subprocess.Popen, Path]:
    """`catp batch` over `n` distinct contracts (no cached analysis: each takes a while), started in a
    session of its own and left running until it has written 3 rows. SIG_DFL for `stop` first: a suite
    started in the background (nohup, &) ignores SIGINT, and so would the child."""
    import signal
    import time

    with open(cwd / "in.jsonl", "w", encoding="utf-8") as fh:
        for k in range(n):
            fh.write(json.dumps({"id": f"d{k}", "text": f"Document {k}.\n" + CONTRACT}) + "\n")
    out = cwd / "out.jsonl"
    proc = catp("batch", "in.jsonl", "--ratio", "1/6", "-o", "out.jsonl", "-j", jobs, cwd=cwd,
                start_new_session=True, preexec_fn=lambda: signal.signal(stop, signal.SIG_DFL))
    deadline = time.time() + wait_s
    while (not out.exists() or out.read_bytes().count(b"\n") < 3) and time.time() < deadline:
        time.sleep(0.05)
    return proc, out


def check_stopped_then_resume(proc: subprocess.Popen, out: Path, n: int, *, code: int, last_line: str,
                              wait_s: float) -> list[dict]:
    """The stopped batch exited `code` with no traceback, its rows are whole and in order, its summary names
    them and `last_line` ends stderr; `--resume` then finishes all `n`. Returns the rows written before."""
    _, err = proc.communicate(timeout=wait_s)
    err = err.decode()
    assert proc.returncode == code and "Traceback" not in err, err
    written = rows(out)
    assert 3 <= len(written) < n and [r["id"] for r in written] == [f"d{k}" for k in range(len(written))]
    assert f"catp: {len(written)} rows" in err and "--resume" in err and err.endswith(last_line), err
    again = catp("batch", "in.jsonl", "--ratio", "1/6", "-o", "out.jsonl", "--resume", "-j", "2", cwd=out.parent)
    again.communicate(timeout=600)
    assert again.returncode == 0
    assert [r["id"] for r in rows(out)] == [f"d{k}" for k in range(n)]
    return written
