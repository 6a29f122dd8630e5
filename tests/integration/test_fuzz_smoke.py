"""The fuzz harnesses stay runnable: a short atheris run of each (the 100,000-execution runs
are recorded in docs/reliability.md; CI runs a few hundred executions per harness)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("atheris")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("harness", ["fuzz_prune.py", "fuzz_rules.py", "fuzz_html.py", "fuzz_docx.py", "fuzz_replies.py"])
def test_fuzz_harness_runs_without_crashes(harness: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / harness), "-atheris_runs=300", "-max_len=256", "-seed=1",
         f"-artifact_prefix={tmp_path}/", str(corpus)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},  # this tree's catp
    )
    tail = (proc.stdout + proc.stderr)[-2000:]
    assert proc.returncode == 0, tail
    assert "Done 300 in" in tail, tail  # libFuzzer reports the executions it completed
    assert not list(tmp_path.glob("crash-*")), tail
