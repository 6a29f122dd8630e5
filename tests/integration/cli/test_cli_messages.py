"""What a user reads on stderr: the protected-content warning says what it means and where the list is;
progress bars are drawn on a terminal only, so a log file (2>log) holds no bar."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CONTRACT = ROOT / "examples" / "contract_en.txt"
BAR = "━"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, timeout=300, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_the_forced_out_warning_says_where_the_list_is():
    proc = run("-m", "catp", "prune", str(CONTRACT), "--ratio", "1/6")
    warnings = [line for line in proc.stderr.decode().splitlines() if "protected spans" in line]
    assert proc.returncode == 0 and len(warnings) == 1, proc.stderr
    assert "forced out" in warnings[0] and "dropped_protected" in warnings[0] and "--format json" in warnings[0]


def test_batch_writes_no_progress_bar_into_a_log(tmp_path):
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps({"id": "a", "text": CONTRACT.read_text(encoding="utf-8")[:3000]}) + "\n")
    proc = run("-m", "catp", "batch", str(source), "--ratio", "1/2", "-o", str(tmp_path / "out.jsonl"))
    err = proc.stderr.decode()
    assert proc.returncode == 0 and BAR not in err and err.startswith("catp: 1 rows"), err


def test_eval_writes_no_progress_bar_into_a_log(tmp_path):
    data = tmp_path / "set.jsonl"
    text = CONTRACT.read_text(encoding="utf-8")[:3000]
    gold = {"start": 0, "end": 20, "quote": text[:20], "kind": "clause", "label": "x"}
    data.write_text(json.dumps({"id": "d1", "domain": "legal", "lang": "en", "source": "test", "text": text,
                                "gold": [gold]}) + "\n", encoding="utf-8")
    proc = run("-m", "evals", "--data", str(data), "--ratios", "1/6", "--no-values", "--baselines", "",
               "--out", str(tmp_path / "report"), "--jobs", "1")
    err = proc.stderr.decode()
    assert proc.returncode == 0 and BAR not in err and "report:" in err, err


def test_eval_on_a_data_file_without_documents_is_an_error(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    proc = run("-m", "evals", "--data", str(tmp_path / "empty.jsonl"), "--ratios", "1/6", "--no-values",
               "--baselines", "", "--out", str(tmp_path / "report"), "--jobs", "1")
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err == f"evals: error: {tmp_path / 'empty.jsonl'}: no documents in it\n", err
    assert not (tmp_path / "report").exists()


def test_eval_names_the_line_of_a_document_without_text(tmp_path):
    text = CONTRACT.read_text(encoding="utf-8")[:2000]
    rows = [{"id": "a", "text": text}, {"id": "b", "text": " \n"}]
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    proc = run("-m", "evals", "--data", str(tmp_path / "set.jsonl"), "--ratios", "1/6", "--no-values",
               "--baselines", "", "--out", str(tmp_path / "report"), "--jobs", "1")
    assert proc.returncode == 2
    assert proc.stderr.decode() == f"evals: error: {tmp_path / 'set.jsonl'}:2: the text is empty\n"
