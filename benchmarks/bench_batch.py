"""Throughput of `catp batch` (catp.batch.run_batch): 1 job vs 2 jobs over the same JSONL input.

    python benchmarks/bench_batch.py                 # 60 real documents (cuad + cail2019_cjrc), 2 rounds
    python benchmarks/bench_batch.py --docs 20 --rounds 1

The input is written to a temporary JSONL file (documents of shared/evals-data, in file order); each
run writes its results to a temporary file. Wall time includes starting the workers (each spawned worker
imports catp and builds its Pruner). Rounds alternate the order (1, 2, 2, 1, ...) on a noisy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import corpora  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=60, help="documents (2/3 cuad, 1/3 cail2019_cjrc)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--ratio", default="1/6")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    from catp.batch import BatchOptions, run_batch

    n_cuad = args.docs * 2 // 3
    docs = []
    for name, n in (("cuad", n_cuad), ("cail2019_cjrc", args.docs - n_cuad)):
        with open(corpora.EVALS_DATA / f"{name}.dev.jsonl", encoding="utf-8") as fh:
            for line, _ in zip(fh, range(n)):
                rec = json.loads(line)
                docs.append({"id": rec["id"], "text": rec["text"], "domain": rec["domain"]})
    jobs_list = [int(j) for j in args.jobs.split(",")]
    runs: dict[int, list[dict]] = {j: [] for j in jobs_list}
    print(f"catp batch throughput: {len(docs)} documents, ratio {args.ratio}, load average "
          f"{os.getloadavg()[0]:.1f}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.jsonl"
        src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
        for r in range(args.rounds):
            for jobs in (jobs_list if r % 2 == 0 else jobs_list[::-1]):
                out = Path(tmp) / f"out-{jobs}.jsonl"
                cpu0, self0 = children_cpu(), time.process_time()
                summary = run_batch([src], out, BatchOptions(ratio=args.ratio), jobs=jobs, progress=False)
                cpu = children_cpu() - cpu0 + time.process_time() - self0
                run = {"wall_s": summary.elapsed_s, "cpu_s": cpu, "rows": summary.rows, "errors": summary.errors,
                       "input_tokens": summary.input_tokens}
                runs[jobs].append(run)
                print(f"  jobs={jobs}: {summary.rows} rows ({summary.errors} errors) in {summary.elapsed_s:.1f}s "
                      f"wall, {cpu:.1f}s cpu; {summary.rows / summary.elapsed_s:.2f} docs/s, "
                      f"{summary.input_tokens / summary.elapsed_s:,.0f} input tokens/s", file=sys.stderr)
        outputs = {}
        for jobs in jobs_list:
            rows = [json.loads(x) for x in (Path(tmp) / f"out-{jobs}.jsonl").read_text(encoding="utf-8").splitlines()]
            for row in rows:
                if row["stats"]:
                    row["stats"].pop("elapsed_s")
            outputs[jobs] = rows
    same = all(outputs[j] == outputs[jobs_list[0]] for j in jobs_list)
    summary_rows = {}
    for jobs, rs in runs.items():
        wall = statistics.median(r["wall_s"] for r in rs)
        summary_rows[jobs] = {"wall_s": wall, "docs_per_s": rs[0]["rows"] / wall,
                              "tokens_per_s": rs[0]["input_tokens"] / wall, "runs": rs}
    base = summary_rows[jobs_list[0]]["wall_s"]
    for jobs in jobs_list:
        s = summary_rows[jobs]
        print(f"jobs={jobs}: median {s['wall_s']:.1f}s, {s['docs_per_s']:.2f} docs/s, {s['tokens_per_s']:,.0f} tokens/s, "
              f"speed-up x{base / s['wall_s']:.2f}", file=sys.stderr)
    print(f"identical rows across job counts (elapsed_s aside): {same}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"docs": len(docs), "ratio": args.ratio, "jobs": summary_rows,
                                               "identical": same, "loadavg": os.getloadavg()}, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
