"""catp.batch / `catp batch`: folders, JSONL, error rows, order, jobs=2 == jobs=1, a dying worker."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from catp.batch import BatchOptions, run_batch

ROOT = Path(__file__).resolve().parents[3]
EN = ("Article {n} Payment\nThe Licensee shall pay the Licensor a fee of ${n},000 within thirty (30) days of "
      "March {n}, 2024. However, the fee is not refundable unless the Licensor terminates. The weather in the "
      "city was pleasant and nobody minded the long meeting at all.\n") * 6
ZH = "第{n}条 违约责任\n甲方应于2024年3月{n}日前向乙方支付违约金三百万元。但是，如果乙方未按期交付，甲方有权解除本合同。\n" * 6


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def comparable(rows: list[dict]) -> list[dict]:
    for row in rows:
        if row["stats"]:
            row["stats"].pop("elapsed_s")
    return rows


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "a.txt").write_text(EN.format(n=1), encoding="utf-8")
    (root / "b.txt").write_text(ZH.format(n=2), encoding="utf-8")
    (root / "sub" / "c.txt").write_text(EN.format(n=3), encoding="utf-8")
    (root / "sub" / "empty.txt").write_text("  \n", encoding="utf-8")
    (root / "sub" / "binary.dat").write_bytes(b"\x00\x01\x02\x03" * 50)
    (root / ".hidden" / "skip.txt").write_text("never read", encoding="utf-8")
    return root


@pytest.fixture()
def jsonl(tmp_path: Path) -> Path:
    lines = [
        json.dumps({"id": "en-1", "text": EN.format(n=4)}),
        json.dumps({"id": "zh-1", "text": ZH.format(n=5), "budget": 40}, ensure_ascii=False),
        "",  # blank lines are not documents
        "{not json",
        json.dumps({"id": "no-text"}),
        json.dumps({"id": "number", "text": 12}),
        json.dumps(["a", "list"]),
        json.dumps({"text": EN.format(n=6), "question": "What fee does the Licensee pay?"}),
        json.dumps({"id": "empty", "text": "   "}),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_folder_gives_one_row_per_file_in_sorted_order(folder, tmp_path):
    out = tmp_path / "out.jsonl"
    summary = run_batch([folder], out, BatchOptions(ratio="1/3", glob="*"), progress=False)  # every file, binary.dat too
    rows = rows_of(out)
    names = [Path(r["id"]).relative_to(folder).as_posix() for r in rows]
    assert names == ["a.txt", "b.txt", "sub/binary.dat", "sub/c.txt", "sub/empty.txt"]
    assert all(set(r) == {"id", "text", "kept", "stats", "warnings", "error"} for r in rows)
    ok = {n: r for n, r in zip(names, rows) if r["error"] is None}
    assert set(ok) == {"a.txt", "b.txt", "sub/c.txt"}
    for name, row in ok.items():
        source = (folder / name).read_text(encoding="utf-8")
        assert row["stats"]["output_tokens"] <= row["stats"]["budget"]
        assert all(source[k["start"]:k["end"]] in source for k in row["kept"])
        assert row["text"].split(" … ")[0] == source[row["kept"][0]["start"]:row["kept"][0]["end"]]
    errors = {n: r["error"] for n, r in zip(names, rows) if r["error"]}
    assert "binary" in errors["sub/binary.dat"] and "empty" in errors["sub/empty.txt"]
    assert (summary.rows, summary.errors) == (5, 2)


def test_jsonl_rows_errors_and_overrides(jsonl, tmp_path):
    out = tmp_path / "out.jsonl"
    summary = run_batch([jsonl], out, BatchOptions(ratio="1/2"), progress=False)
    rows = rows_of(out)
    assert [r["id"] for r in rows] == ["en-1", "zh-1", f"{jsonl}:4", "no-text", "number", f"{jsonl}:7",
                                       f"{jsonl}:8", "empty"]
    by_id = {r["id"]: r for r in rows}
    assert by_id["en-1"]["error"] is None and by_id["en-1"]["stats"]["lang"] == "en"
    assert by_id["zh-1"]["stats"]["budget"] == 40 and by_id["zh-1"]["stats"]["lang"] == "zh"  # the row's budget
    assert "not a JSON line" in by_id[f"{jsonl}:4"]["error"]
    assert "'text' is missing" in by_id["no-text"]["error"]
    assert "not a string" in by_id["number"]["error"]
    assert "JSON object" in by_id[f"{jsonl}:7"]["error"]
    assert by_id[f"{jsonl}:8"]["error"] is None  # the question row, id from its line
    assert "empty" in by_id["empty"]["error"]
    for row in rows:
        if row["error"]:
            assert row["text"] is None and row["kept"] is None and row["stats"] is None
    assert (summary.rows, summary.errors) == (8, 5)


def test_missing_input_is_an_error_row_not_a_crash(tmp_path):
    out = tmp_path / "out.jsonl"
    summary = run_batch([tmp_path / "nope.txt", tmp_path / "nope.jsonl"], out, BatchOptions(budget=50),
                        progress=False)
    rows = rows_of(out)
    assert len(rows) == 2 and all(r["error"] for r in rows) and summary.errors == 2


def test_two_jobs_give_the_same_rows_as_one(folder, jsonl, tmp_path):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    options = BatchOptions(ratio="1/3", glob="*")  # every file of the folder, binary.dat too
    run_batch([folder, jsonl], one, options, jobs=1, progress=False)
    summary = run_batch([folder, jsonl], two, options, jobs=2, progress=False)
    assert comparable(rows_of(one)) == comparable(rows_of(two))
    assert summary.rows == 13 and summary.worker_restarts == 0


def test_a_dying_worker_loses_no_row(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # spawned workers inherit sys.path
    src = tmp_path / "rows.jsonl"
    docs = [{"id": f"d{i}", "text": EN.format(n=i) + ("CRASH-ME\n" if i == 2 else "")} for i in range(6)]
    src.write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    options = BatchOptions(ratio="1/3", scorer="crashy", setup="_batch_plugin:setup")
    summary = run_batch([src], out, options, jobs=2, progress=False)
    rows = rows_of(out)
    assert [r["id"] for r in rows] == [d["id"] for d in docs]
    assert [r["id"] for r in rows if r["error"]] == ["d2"]
    assert "worker process died" in rows[2]["error"]
    assert summary.worker_restarts >= 1 and summary.errors == 1


def test_cli_batch_stdin_and_exit_codes(tmp_path):
    data = "\n".join(json.dumps({"id": i, "text": EN.format(n=i)}) for i in range(3)) + "\n"
    proc = subprocess.run([sys.executable, "-m", "catp", "batch", "-", "--budget", "60", "--no-progress"],
                          input=data.encode(), capture_output=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [r["id"] for r in rows] == [0, 1, 2] and all(r["stats"]["output_tokens"] <= 60 for r in rows)
    assert b"3 rows (3 ok, 0 errors)" in proc.stderr
    bad = subprocess.run([sys.executable, "-m", "catp", "batch", "-", "--budget", "60", "--quiet"],
                         input=b'{"id": 1, "text": ""}\n', capture_output=True, cwd=ROOT, timeout=300)
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]
    usage = subprocess.run([sys.executable, "-m", "catp", "batch", "-"], input=b"", capture_output=True,
                           cwd=ROOT, timeout=300)
    assert usage.returncode == 2 and b"--budget" in usage.stderr


def test_cli_batch_refuses_a_bad_domain_or_rule_file_once(tmp_path):
    for args in (["--domain", "nope"], ["--rules", str(tmp_path / "missing.yaml")]):
        proc = subprocess.run([sys.executable, "-m", "catp", "batch", "-", "--budget", "60", *args],
                              input=b'{"text": "The fee is $5."}\n', capture_output=True, cwd=ROOT, timeout=300)
        assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
        assert proc.stderr.decode().startswith("catp: error: ") and "Traceback" not in proc.stderr.decode()
