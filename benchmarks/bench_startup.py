"""Start-up cost of pruning a small input in a fresh process: what a one-off `catp prune` or a first
`prune()` call pays before any real work (issue 25: a two-word input cost 1.5 CPU s).

    python benchmarks/bench_startup.py              # 5 fresh processes per input, medians
    python benchmarks/bench_startup.py --runs 9 --json out.json

Each run is a new interpreter that times, with process_time, `import catp`, then the first
`catp.prune(text, budget=10)` (tokenizer, rule files, domain detection, registry), then a second prune of
the same kind of input (the warm cost), and lists which heavy modules the first prune loaded (spaCy,
jieba, torch, transformers): a small English input must not load jieba, nor a Chinese one spaCy.
Figures and the command go in docs/benchmarks.md ("Start-up for a small input").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INPUTS = {"en two words": "hello world", "zh two words": "合同 双方",
          "en contract sentence": "The Licensee shall pay the fee of $5,000 by March 5, 2024."}
HEAVY = ("spacy", "jieba", "torch", "transformers")

_CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
t0 = time.process_time()
import catp
t1 = time.process_time()
catp.prune({text!r}, budget=10)
t2 = time.process_time()
catp.prune({text!r} + " 2", budget=10)
t3 = time.process_time()
print(json.dumps({{"import_s": t1 - t0, "first_prune_s": t2 - t1, "second_prune_s": t3 - t2, "total_s": t2 - t0,
                  "loaded": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def run_once(text: str) -> dict:
    code = _CHILD.format(root=str(ROOT), text=text, heavy=HEAVY)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for name, text in INPUTS.items():
        runs = [run_once(text) for _ in range(args.runs)]
        row = {"input": name, "runs": args.runs, "loaded": runs[-1]["loaded"],
               **{k: statistics.median(r[k] for r in runs) for k in ("import_s", "first_prune_s", "second_prune_s",
                                                                     "total_s")}}
        rows.append(row)
        print(f"{name:22s} import {row['import_s']:.3f}  first prune {row['first_prune_s']:.3f}  "
              f"= {row['total_s']:.3f} CPU s  (second prune {row['second_prune_s']:.3f}; loaded: "
              f"{', '.join(row['loaded']) or 'none of ' + '/'.join(HEAVY)})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
