"""Throughput of `catp batch` on both engines (issue #8): --engine local and --engine ray, 1 and 2 workers,
over the same JSONL of 32K-token CUAD documents, through the command line.

    python benchmarks/bench_scale.py                       # 48 documents of 32,768 tokens, ratio 1/6
    python benchmarks/bench_scale.py --docs 16 --tokens 8192 --json out.json

Document i joins CUAD contracts in file order from contract 3*i on (cycling), cut to about --tokens Qwen
tokens (benchmarks/corpora.fit), so the documents differ. The input and the outputs live in a temporary
folder (never in the repo). Each run is one `catp batch` command (printed); its wall time includes starting
the workers (and, for ray, starting a local Ray). Also printed: the pruning time the rows themselves report
(`stats.elapsed_s`, wall time inside Pruner.prune in the worker: without start-up, but stretched when the
worker waits for a core), the CPU seconds of the command and its pool workers (local engine only: start-up
included; Ray's actors are not the command's children), and the load average before and after each run
(the machine is shared).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import corpora  # noqa: E402


def children_cpu() -> float:
    """CPU seconds of the finished child processes and of the children they waited for (the pool's workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def documents(n: int, tokens: int) -> list[dict]:
    texts = corpora._texts("cuad")
    docs = []
    for i in range(n):
        start = (3 * i) % len(texts)
        text = corpora.fit(itertools.islice(itertools.cycle(texts), start, None), tokens)
        docs.append({"id": f"cuad-join-{i:03d}", "text": text})
    return docs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=48)
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--ratio", default="1/6")
    ap.add_argument("--runs", default="local:1,local:2,ray:1,ray:2", help="ENGINE:JOBS,...")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "cuad32k.jsonl"
        docs = documents(args.docs, args.tokens)
        src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
        print(f"{len(docs)} documents, {sum(len(d['text']) for d in docs):,} characters -> {src}", file=sys.stderr)
        outputs = {}
        for spec in args.runs.split(","):
            engine, jobs = spec.split(":")
            out = Path(tmp) / f"out-{engine}-{jobs}.jsonl"
            cmd = [sys.executable, "-m", "catp", "batch", str(src), "--out", str(out), "--ratio", args.ratio,
                   "--jobs", jobs, "--engine", engine, "--no-progress"]
            load0 = os.getloadavg()
            cpu0 = children_cpu()
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            wall = time.perf_counter() - t0
            cpu = children_cpu() - cpu0 if engine == "local" else None  # Ray's actors are not our children
            load1 = os.getloadavg()
            line = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
            rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
            tokens_in = sum(r["stats"]["input_tokens"] for r in rows if r["stats"])
            prune_s = sum(r["stats"]["elapsed_s"] for r in rows if r["stats"])
            inner = float(re.search(r" in ([0-9.]+)s:", line).group(1)) if " in " in line else wall
            res = {"engine": engine, "jobs": int(jobs), "rc": proc.returncode, "rows": len(rows),
                   "errors": sum(1 for r in rows if r["error"]), "wall_s": wall, "batch_s": inner,
                   "docs_per_s": len(rows) / inner, "tokens_per_s": tokens_in / inner, "input_tokens": tokens_in,
                   "cpu_s": cpu, "tokens_per_cpu_s": tokens_in / cpu if cpu else None, "prune_s_sum": prune_s,
                   "tokens_per_prune_s": tokens_in / prune_s if prune_s else None,
                   "loadavg_before": load0[0], "loadavg_after": load1[0],
                   "command": f"catp batch IN.jsonl --out OUT.jsonl --ratio {args.ratio} --jobs {jobs} "
                              f"--engine {engine}",
                   "summary": line}
            results.append(res)
            cpu_note = (f"CPU {cpu:.1f}s (it and its workers: {tokens_in / cpu:,.0f} tokens per CPU-second)"
                        if cpu else "CPU not measured (Ray's actors are not children of the command)")
            print(f"{res['command']}\n  {line}\n  process wall {wall:.1f}s, {cpu_note}; "
                  f"rows' own pruning time {prune_s:.1f}s "
                  f"({res['tokens_per_prune_s'] or 0:,.0f} tokens per pruning-second); load average "
                  f"{load0[0]:.2f} -> {load1[0]:.2f}", file=sys.stderr)
            for row in rows:
                if row["stats"]:
                    row["stats"].pop("elapsed_s")
            outputs[spec] = rows
        first = next(iter(outputs.values()))
        same = all(rows == first for rows in outputs.values())
    print(f"identical rows across engines and job counts (elapsed_s aside): {same}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"docs": args.docs, "tokens": args.tokens, "ratio": args.ratio,
                                               "runs": results, "identical": same, "cpus": os.cpu_count()},
                                              indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
