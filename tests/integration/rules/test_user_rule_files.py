"""A user writing a rule file from README's "Rule sets are data" section: lint, test, explain, policy and
prune take it; a bad regex is refused by every one of them, in one line naming the file, line and rule id."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOC = "The insured pays a 5% royalty on net sales. The policyholder is Bob Smith.\n" * 30


def catp(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "catp", *args], capture_output=True, timeout=300, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def readme_rule_file() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Rule sets are data", 1)[1]
    return re.search(r"```yaml\n(.*?)```", section, re.S).group(1)


def commands(name: str) -> list[list[str]]:
    return [["rules", "lint", name], ["rules", "test", name],
            ["rules", "explain", "mine.royalty_rate", "--rules", name],
            ["rules", "policy", "--domain", "legal", "--rules", name],
            ["prune", "doc.txt", "--ratio", "1/6", "--rules", name]]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "doc.txt").write_text(DOC, encoding="utf-8")
    (tmp_path / "mine.yaml").write_text(readme_rule_file(), encoding="utf-8")
    return tmp_path


def test_the_readme_rule_file_goes_through_every_command(folder):
    for command in commands("mine.yaml"):
        proc = catp(*command, cwd=folder)
        assert proc.returncode == 0, (command, proc.stderr)
    test = catp("rules", "test", "mine.yaml", cwd=folder)
    assert test.stdout.decode() == "2 passed, 0 failed\n" and test.stderr == b""  # no progress bar off a terminal
    prune = catp("prune", "doc.txt", "--ratio", "1/6", "--rules", "mine.yaml", "-f", "json", cwd=folder)
    assert b"mine.royalty_rate" in prune.stdout


@pytest.mark.parametrize("command", range(5))
def test_a_bad_regex_is_refused_by_every_command(folder, command):
    bad = readme_rule_file().replace("pattern: '", "pattern: '(")
    (folder / "bad.yaml").write_text(bad, encoding="utf-8")
    proc = catp(*commands("bad.yaml")[command], cwd=folder)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"", (proc.returncode, proc.stdout)
    assert err.startswith("catp: error: bad.yaml:") and len(err.splitlines()) == 1, err
    assert "'mine.royalty_rate'" in err and "regex" in err
