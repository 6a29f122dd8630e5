"""Issue #8: `catp batch` at corpus scale. Parquet in and out, --resume, Ray kept out of `import catp`,
and --engine ray (a local Ray with 2 CPUs) giving the same rows as --engine local, on real documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from catp.batch import BatchOptions, run_batch
from catp.batch import id_key, read_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _samples import evals_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
EN = ("Article {n} Payment\nThe Licensee shall pay the Licensor a fee of ${n},000 within thirty (30) days of "
      "March {n}, 2024. However, the fee is not refundable unless the Licensor terminates. The weather in the "
      "city was pleasant and nobody minded the long meeting at all.\n") * 4
ZH = "第{n}条 违约责任\n甲方应于2024年3月{n}日前向乙方支付违约金三百万元。但是，如果乙方未按期交付，甲方有权解除本合同。\n" * 4


def comparable(rows: list[dict]) -> list[dict]:
    """Rows without the timing, with ids as Parquet stores them (so JSONL and Parquet compare)."""
    out = []
    for row in rows:
        row = dict(row, id=id_key(row["id"]))
        if row["stats"]:
            row["stats"] = {k: v for k, v in row["stats"].items() if k != "elapsed_s"}
        out.append(row)
    return out


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


@pytest.fixture()
def mixed(tmp_path: Path) -> Path:
    """Good rows, int ids, a row's own budget, and rows that must become error rows."""
    return write_jsonl(tmp_path / "mixed.jsonl", [
        {"id": "en-1", "text": EN.format(n=1)},
        {"id": 2, "text": ZH.format(n=2), "budget": 40},
        "{not json",
        {"id": "no-text"},
        {"id": "number", "text": 12},
        {"text": EN.format(n=3), "question": "What fee does the Licensee pay?"},
        {"id": "empty", "text": "   "},
        {"id": "en-4", "text": EN.format(n=4)},
        {"id": "zh-5", "text": ZH.format(n=5)},
    ])


def real_documents(path: Path, per_set: int = 60, chars: int = 2000) -> Path:
    """A few hundred documents: the first `per_set` pieces of `chars` characters of each evals data set."""
    folder = evals_data()
    if folder is None:
        pytest.skip("the shared evals data is missing at ../shared/evals-data (set CATP_EVALS_DATA)")
    rows = []
    for name in ("cuad", "cail2019_cjrc", "ccks2017_cner", "tatqa", "e3c_en"):
        pieces = 0
        with open(folder / f"{name}.dev.jsonl", encoding="utf-8") as fh:
            for line in fh:
                doc = json.loads(line)
                for start in range(0, len(doc["text"]), chars):
                    if pieces < per_set:
                        rows.append({"id": f"{doc['id']}@{start}", "text": doc["text"][start:start + chars]})
                        pieces += 1
                if pieces == per_set:
                    break
    return write_jsonl(path, rows)


# -- Ray stays out of core catp ----------------------------------------------------------------


def test_import_catp_and_a_local_batch_do_not_import_ray(mixed, tmp_path):
    code = ("import sys, catp, catp.cli\n"
            "from catp.cli import main\n"
            f"sys.argv = ['catp', 'batch', {str(mixed)!r}, '--ratio', '1/2', '--out', {str(tmp_path / 'o.jsonl')!r},"
            " '--quiet']\n"
            "code = main()\n"
            "print(code, 'ray' in sys.modules, any(m == 'ray' or m.startswith('ray.') for m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "False", "False"]  # 1: some rows are errors


def test_engine_ray_without_ray_is_one_line_and_exit_2(mixed, tmp_path):
    code = ("import sys\n"
            "sys.modules['ray'] = None  # as if Ray were not installed\n"
            "from catp.cli import run\n"
            f"sys.argv = ['catp', 'batch', {str(mixed)!r}, '--ratio', '1/2', '--engine', 'ray',"
            f" '--out', {str(tmp_path / 'o.jsonl')!r}]\n"
            "run()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["catp: error: --engine ray needs Ray Data: pip install 'catp[ray]'"]
    assert not (tmp_path / "o.jsonl").exists()


def test_engine_ray_with_no_cluster_at_auto_is_one_line_and_exit_2(mixed, tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[test]'")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, "-m", "catp", "batch", str(mixed), "--ratio", "1/2", "--engine", "ray",
                           "--address", "auto", "--out", str(tmp_path / "o.jsonl"), "--no-progress"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "catp: error: cannot start or reach Ray at auto: Could not find any running Ray instance" in proc.stderr


# -- Parquet ------------------------------------------------------------------------------------


def test_parquet_in_and_out_give_the_rows_of_jsonl(mixed, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # The same documents as Parquet, with other column names and a row without an id.
    docs = [{"doc": "a", "body": EN.format(n=1)}, {"doc": None, "body": ZH.format(n=2)},
            {"doc": "c", "body": None}, {"doc": "d", "body": "  "}, {"doc": "e", "body": EN.format(n=5)}]
    source = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(docs), source, row_group_size=2)
    options = BatchOptions(ratio="1/3", text_field="body", id_field="doc")
    summary = run_batch([source], tmp_path / "out.parquet", options, rows_per_file=2, progress=False)
    run_batch([source], tmp_path / "out.jsonl", options, progress=False)
    assert sorted(p.name for p in (tmp_path / "out.parquet").iterdir()) == \
        [".catp-batch.lock", "part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]  # readers skip dot files
    rows = read_rows(tmp_path / "out.parquet")
    assert [r["id"] for r in rows] == ["a", f"{source}:2", "c", "d", "e"]
    assert [r["error"] is None for r in rows] == [True, True, False, False, True]
    assert "field 'body' is missing" in rows[2]["error"] and "empty" in rows[3]["error"]
    assert comparable(rows) == comparable(read_rows(tmp_path / "out.jsonl"))
    assert (summary.rows, summary.errors) == (5, 2)
    # Parquet output of JSONL input: the same rows as JSONL output, ids as their JSON text.
    as_parquet, as_jsonl = tmp_path / "mixed-out.parquet", tmp_path / "mixed-out.jsonl"
    run_batch([mixed], as_parquet, BatchOptions(ratio="1/2"), progress=False)
    run_batch([mixed], as_jsonl, BatchOptions(ratio="1/2"), progress=False)
    assert comparable(read_rows(as_parquet)) == comparable(read_rows(as_jsonl))
    assert read_rows(as_parquet)[1]["id"] == "2" and read_rows(as_jsonl)[1]["id"] == 2


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_a_missing_text_column_is_one_error(tmp_path, engine):
    import pyarrow as pa
    import pyarrow.parquet as pq

    if engine == "ray":
        pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[test]'")
    pq.write_table(pa.table({"id": ["a"], "content": ["The fee is $5."]}), tmp_path / "in.parquet")
    proc = subprocess.run([sys.executable, "-m", "catp", "batch", str(tmp_path / "in.parquet"), "--budget", "60",
                           "--out", str(tmp_path / "o.jsonl"), "--engine", engine],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"catp: error: {tmp_path / 'in.parquet'}: no column 'text' (name the text column with --text-field)"]
    assert not (tmp_path / "o.jsonl").exists()  # checked before anything is written


def test_a_file_that_is_not_parquet_is_an_error_row(tmp_path):
    (tmp_path / "bad.parquet").write_text("not parquet at all\n", encoding="utf-8")
    write_jsonl(tmp_path / "good.jsonl", [{"id": "g", "text": "The fee is $5,000, payable within thirty (30) days."}])
    proc = subprocess.run([sys.executable, "-m", "catp", "batch", str(tmp_path / "bad.parquet"),
                           str(tmp_path / "good.jsonl"), "--budget", "60", "--out", str(tmp_path / "o.jsonl")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    rows = read_rows(tmp_path / "o.jsonl")
    assert [r["id"] for r in rows] == [str(tmp_path / "bad.parquet"), "g"]
    assert rows[0]["error"].startswith(f"{tmp_path / 'bad.parquet'}: cannot open: ") and rows[1]["error"] is None


# -- resume -------------------------------------------------------------------------------------


def test_resume_after_a_crash_ends_like_a_clean_run_jsonl(mixed, tmp_path):
    options = BatchOptions(ratio="1/2")
    clean, out = tmp_path / "clean.jsonl", tmp_path / "out.jsonl"
    run_batch([mixed], clean, options, jobs=2, progress=False)
    data = clean.read_bytes()
    lines = data.splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:3]) + lines[3][:25])  # three rows written, the fourth cut short
    summary = run_batch([mixed], out, options, jobs=2, progress=False, resume=True)
    assert comparable(read_rows(out)) == comparable(read_rows(clean))
    assert (summary.skipped, summary.rows) == (3, len(lines) - 3)
    again = run_batch([mixed], out, options, progress=False, resume=True)  # nothing left to do
    assert (again.skipped, again.rows) == (len(lines), 0) and comparable(read_rows(out)) == comparable(read_rows(clean))
    fresh = run_batch([mixed], out, options, progress=False)  # without --resume the output starts again
    assert fresh.skipped == 0 and comparable(read_rows(out)) == comparable(read_rows(clean))


def test_resume_after_a_crash_ends_like_a_clean_run_parquet(mixed, tmp_path):
    options = BatchOptions(ratio="1/2")
    clean, out = tmp_path / "clean.parquet", tmp_path / "out.parquet"
    run_batch([mixed], clean, options, rows_per_file=3, progress=False)
    run_batch([mixed], out, options, rows_per_file=3, progress=False)
    (out / "part-00002.parquet").unlink()  # the crash: the last part was never finished...
    (out / "part-00002.tmp").write_bytes(b"PAR1 half a file")  # ...and left this behind
    summary = run_batch([mixed], out, options, rows_per_file=3, progress=False, resume=True)
    assert comparable(read_rows(out)) == comparable(read_rows(clean))
    assert summary.skipped == 6 and summary.rows == len(read_rows(clean)) - 6
    assert not list(out.glob("*.tmp"))


def test_huge_jsonl_inputs_are_not_counted_first(mixed, monkeypatch):
    from catp.batch import readers

    assert readers.count_documents([str(mixed)]) == 9
    monkeypatch.setattr(readers, "COUNT_MAX_BYTES", 100)  # as if the input were terabytes
    assert readers.count_documents([str(mixed)]) is None


def test_resume_refuses_stdout(mixed):
    from catp.errors import CatpError

    with pytest.raises(CatpError, match="--resume needs an output file"):
        run_batch([mixed], "-", BatchOptions(ratio="1/2"), progress=False, resume=True)


def test_the_summary_line_says_documents_tokens_errors_skipped_and_throughput(mixed, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "catp", "batch", str(mixed), "--ratio", "1/2", "--no-progress",
                           "--out", str(tmp_path / "o.jsonl")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 1  # some rows are errors
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("catp: 9 rows (5 ok, 4 errors) -> ") and "docs/s" in line and "input tokens/s" in line
    assert "engine local" in line
    again = subprocess.run([sys.executable, "-m", "catp", "batch", str(mixed), "--ratio", "1/2", "--no-progress",
                            "--resume", "-o", str(tmp_path / "o.jsonl")], capture_output=True, text=True, cwd=ROOT,
                           timeout=300)
    assert again.returncode == 0 and "catp: 0 rows (0 ok, 0 errors, 9 skipped (already written))" in again.stderr


# -- Ray ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[test]'")
    # The actors import tests/_batch_plugin.py (a scorer that kills its process) for the crash test.
    path = os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")) if p)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_gives_the_rows_of_local_on_a_few_hundred_real_documents(local_ray, tmp_path):
    source = real_documents(tmp_path / "real.jsonl")
    options = BatchOptions(ratio="1/4")
    local = run_batch([source], tmp_path / "local.jsonl", options, jobs=2, progress=False)
    ray = run_batch([source], tmp_path / "ray.jsonl", options, jobs=2, progress=False, engine="ray")
    local_rows, ray_rows = read_rows(tmp_path / "local.jsonl"), read_rows(tmp_path / "ray.jsonl")
    assert len(local_rows) == local.rows == ray.rows == 300
    assert local.errors == 0 and {r["stats"]["lang"] for r in local_rows} == {"en", "zh"}
    for a, b in zip(comparable(local_rows), comparable(ray_rows), strict=True):
        assert a == b
    assert (ray.input_tokens, ray.output_tokens) == (local.input_tokens, local.output_tokens)


def test_ray_error_rows_parquet_and_resume(local_ray, mixed, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "inputs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(mixed.read_bytes())
    pq.write_table(pa.Table.from_pylist([{"id": 7, "text": EN.format(n=7)}, {"id": None, "text": ZH.format(n=8)},
                                         {"id": 9, "text": None}]), folder / "b.parquet")
    (folder / "c.txt").write_text(EN.format(n=10), encoding="utf-8")
    (folder / "d.txt").write_bytes(b"\x00\x01\x02\x03" * 50)  # binary: an error row
    options = BatchOptions(ratio="1/2")
    local = run_batch([folder], tmp_path / "local.jsonl", options, jobs=2, progress=False)
    ray = run_batch([folder], tmp_path / "ray.parquet", options, jobs=2, progress=False, engine="ray",
                    rows_per_file=4)
    local_rows = read_rows(tmp_path / "local.jsonl")
    assert comparable(read_rows(tmp_path / "ray.parquet")) == comparable(local_rows)
    assert (ray.rows, ray.errors) == (local.rows, local.errors) == (14, 6)
    # A crash in the ray run: the JSONL output holds 5 rows and half a line; resume on ray.
    out = tmp_path / "ray.jsonl"
    lines = (tmp_path / "local.jsonl").read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:5]) + lines[5][:10])
    resumed = run_batch([folder], out, options, jobs=2, progress=False, engine="ray", resume=True)
    assert (resumed.skipped, resumed.rows) == (5, 9)
    assert comparable(read_rows(out)) == comparable(local_rows)


def test_a_document_that_kills_ray_actors_becomes_an_error_row(local_ray, tmp_path):
    src = write_jsonl(tmp_path / "rows.jsonl",
                      [{"id": f"d{i}", "text": EN.format(n=i) + ("CRASH-ME\n" if i == 5 else "")} for i in range(8)])
    options = BatchOptions(ratio="1/3", scorer="crashy", setup="_batch_plugin:setup")
    local = run_batch([src], tmp_path / "local.jsonl", options, jobs=2, progress=False)
    ray = run_batch([src], tmp_path / "ray.jsonl", options, jobs=2, progress=False, engine="ray")
    rows = read_rows(tmp_path / "ray.jsonl")
    assert [r["id"] for r in rows] == [f"d{i}" for i in range(8)]
    assert [r["id"] for r in rows if r["error"]] == ["d5"] and "worker process died" in rows[5]["error"]
    assert comparable(rows) == comparable(read_rows(tmp_path / "local.jsonl"))
    assert (ray.rows, ray.errors) == (local.rows, local.errors) == (8, 1)
