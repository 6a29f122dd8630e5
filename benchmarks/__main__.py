"""Run every pruning benchmark with one command:

    python -m benchmarks            # bench_prune (speed, linearity, memory, import, reuse) + bench_batch
    python -m benchmarks --quick    # no 1M-token documents, fewer repeats, a smaller batch
    python -m benchmarks --json-dir /tmp/bench   # also keep the figures as JSON

The LM scorer has its own benchmark (benchmarks/bench_scorer.py; needs torch, see its docstring):
add --with-scorer to run it too with its small CPU configuration.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json-dir", help="write bench_prune.json and bench_batch.json here")
    ap.add_argument("--with-scorer", action="store_true", help="also run bench_scorer.py (CPU, small)")
    args = ap.parse_args(argv)
    out = Path(args.json_dir) if args.json_dir else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    runs = [
        ["bench_prune.py", *(["--quick"] if args.quick else []), *(["--json", str(out / "bench_prune.json")] if out else [])],
        ["bench_batch.py", *(["--docs", "24", "--rounds", "1"] if args.quick else []),
         *(["--json", str(out / "bench_batch.json")] if out else [])],
    ]
    if args.with_scorer:
        runs.append(["bench_scorer.py", "--device", "cpu", "--tokens", "2048", "--variants", "2048:0"])
    status = 0
    for script, *rest in runs:
        print(f"\n$ python benchmarks/{script} {' '.join(rest)}", file=sys.stderr, flush=True)
        status |= subprocess.run([sys.executable, str(HERE / script), *rest]).returncode
    return status


if __name__ == "__main__":
    sys.exit(main())
