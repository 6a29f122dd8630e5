"""catp batch: SIGTERM stops it as Ctrl-C does (summary line, whole rows, --resume finishes); positions in
messages are 1-based in JSONL and Parquet alike."""

from __future__ import annotations

import json
import os
import signal

import pytest
from _batch_cli import check_stopped_then_resume, start_on_contracts


@pytest.mark.parametrize("target,jobs", [("process", "1"), ("process", "2"), ("group", "2")])
def test_sigterm_leaves_whole_rows_prints_the_summary_and_resume_finishes(tmp_path, target, jobs):
    proc, out = start_on_contracts(tmp_path, 40, jobs, signal.SIGTERM, wait_s=300)
    if target == "group":  # systemd, a container runtime stopping every process
        os.killpg(proc.pid, signal.SIGTERM)
    else:  # kill PID, a supervisor
        os.kill(proc.pid, signal.SIGTERM)
    written = check_stopped_then_resume(proc, out, 40, code=143, last_line="catp: terminated\n", wait_s=300)
    assert all(r["error"] is None for r in written), [r["error"] for r in written]


def test_parquet_and_jsonl_name_the_same_record_by_the_same_1_based_number(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from catp.batch import BatchOptions, run_batch
    from catp.batch import read_rows

    good = "The fee is $5,000, payable on 1 March 2024 by Acme Inc. to Beta LLC. " * 20
    records = [{"id": "a", "text": good, "budget": None}, {"id": None, "text": None, "budget": None},
               {"id": None, "text": good, "budget": -5}, {"id": "d", "text": good, "budget": None}]
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "in.parquet")
    with open(tmp_path / "in.jsonl", "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n")
    errors = {}
    for name in ("in.parquet", "in.jsonl"):
        out = tmp_path / f"{name}.out.jsonl"
        run_batch([str(tmp_path / name)], out, BatchOptions(ratio="1/2"), progress=False)
        got = read_rows(out)
        where = str(tmp_path / name)
        assert [r["id"] for r in got] == ["a", f"{where}:2", f"{where}:3", "d"]
        assert got[1]["error"].startswith(f"{where}:2: ") and got[2]["error"].startswith(f"{where}:3: ")
        errors[name] = [r["error"] and r["error"][len(where):] for r in got]
    assert errors["in.parquet"] == errors["in.jsonl"]
