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
