"""The README's worked example is what catp prints: its input, command, output and warning are read from
README.md and run. When selection changes on purpose, update the README's "Before and after" with the new
output (and this test passes again)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def before_and_after() -> tuple[list[str], str, str, str]:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Before and after", 1)[1].split("\n## ", 1)[0]
    command = shlex.split(re.search(r"`(catp prune [^`]+)`", section).group(1))
    blocks = re.findall(r"```\n(.*?)\n```", section, re.S)
    warning = re.search(r"`(the budget of [^`]+)`", section).group(1)
    after_tokens, before_tokens = re.search(r"in (\d+) Qwen tokens \((\d+) before\)", section).groups()
    return command, blocks[0], blocks[1], f"catp: warning: {warning}\ncatp: {before_tokens} -> {after_tokens} tokens "


def test_the_readme_example_prints_what_the_readme_shows(tmp_path):
    command, before, after, stderr = before_and_after()
    assert command[:2] == ["catp", "prune"] and command[2] == "contract.txt"
    (tmp_path / "contract.txt").write_text(before + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "catp", *command[1:]], capture_output=True, cwd=tmp_path,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode("utf-8").rstrip("\n") == after
    assert stderr in proc.stderr.decode("utf-8")
