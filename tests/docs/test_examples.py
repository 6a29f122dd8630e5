"""The example documents: `--domain auto` finds each one's domain and language, and examples/pipeline.py
runs and shows what it says it shows."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DOCUMENTS = runpy.run_path(str(EXAMPLES / "pipeline.py"))["DOCUMENTS"]


def test_every_example_document_is_listed():
    assert sorted(DOCUMENTS) == sorted(p.name for p in EXAMPLES.glob("*.txt"))


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_domain_auto_detects_the_example(name):
    proc = subprocess.run([sys.executable, "-m", "catp", "prune", str(EXAMPLES / name), "--ratio", "1/6",
                           "--domain", "auto", "--format", "json", "--quiet"], capture_output=True, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    from catp.result import PruneResult

    stats = PruneResult.model_validate_json(proc.stdout).stats
    assert (stats.domain, stats.lang) == DOCUMENTS[name]
    assert stats.output_tokens <= stats.budget


def test_the_pipeline_example_runs_and_finds_the_liability_cap():
    proc = subprocess.run([sys.executable, str(EXAMPLES / "pipeline.py")], capture_output=True, cwd=ROOT / "..",
                          timeout=600, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode("utf-8")
    for name, (domain, lang) in DOCUMENTS.items():
        assert f"{name}: " in out and f"({lang}, {domain})" in out.split(f"{name}: ")[1].splitlines()[0]
    assert "14.2 Liability Cap" in out.split("With the question")[1]
