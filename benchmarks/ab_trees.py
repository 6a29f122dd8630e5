"""Before/after pruning time of two source trees, interleaved in one run (the fair way on a noisy
machine): each tree runs in its own long-lived process; rounds alternate which tree goes first.

    # a tree = a folder holding catp/, rules/ and benchmarks/ (e.g. a `git worktree`, or a copy
    # of the checkout with some files taken from an older commit with `git show COMMIT:PATH`)
    python benchmarks/ab_trees.py /tmp/before /tmp/after --kinds cuad,zh --rounds 3

Prints a Markdown table: per 128K-token benchmark document, the tokenizer pass and each tree's
median prune CPU time (the per-document analysis cache is emptied before every run), the ratios,
and the speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
tree, kinds, tokens = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
sys.path.insert(0, tree)
from benchmarks import corpora
from catp.pipeline import Pruner
from catp.tokens import load_token_counter
texts = {k: corpora.build(k, tokens) for k in kinds}
pruners = {}
for k in kinds:
    d = corpora.DOMAIN[k]
    if d not in pruners:
        pruners[d] = Pruner(domain=d)
        pruners[d].prune(corpora.build("cuad", 4096), ratio="1/6")
        pruners[d].prune(corpora.build("zh", 4096), ratio="1/6")
tok = load_token_counter()._tok
for k in kinds:  # warm-up: lazy loading, first-long-document costs
    pruners[corpora.DOMAIN[k]].prune(texts[k], ratio="1/6")
print("ready", flush=True)
for line in sys.stdin:
    k = line.strip()
    p = pruners[corpora.DOMAIN[k]]
    c = time.process_time(); tok.encode(texts[k], add_special_tokens=False); enc = time.process_time() - c
    p.clear_cache()
    c = time.process_time(); p.prune(texts[k], ratio="1/6"); cpu = time.process_time() - c
    print(json.dumps([cpu, enc]), flush=True)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--kinds", default="cuad,zh,huge_line,no_punct_en,no_punct_zh,dense_numbers,many_cues")
    ap.add_argument("--tokens", type=int, default=131_072)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    trees, kinds = [args.before, args.after], args.kinds.split(",")
    procs = {}
    for tree in trees:
        env = dict(os.environ, PYTHONPATH=tree)
        procs[tree] = subprocess.Popen([sys.executable, "-c", CHILD, tree, ",".join(kinds), str(args.tokens)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tree, env=env)
    for proc in procs.values():
        assert proc.stdout.readline().strip() == "ready"
    res: dict = {(t, k): [] for t in trees for k in kinds}
    for r in range(args.rounds):
        for k in kinds:
            for tree in (trees if r % 2 == 0 else trees[::-1]):
                procs[tree].stdin.write(k + "\n")
                procs[tree].stdin.flush()
                res[(tree, k)].append(json.loads(procs[tree].stdout.readline()))
    print(f"| document ({args.tokens // 1024}K tokens) | tokenizer pass, CPU s | before: prune CPU s | before: ratio "
          "| after: prune CPU s | after: ratio | speed-up |")
    print("|---|---|---|---|---|---|---|")
    for k in kinds:
        enc = statistics.median(x[1] for t in trees for x in res[(t, k)])
        b = statistics.median(x[0] for x in res[(trees[0], k)])
        a = statistics.median(x[0] for x in res[(trees[1], k)])
        print(f"| {k} | {enc:.3f} | {b:.3f} | {b / enc:.2f}x | {a:.3f} | {a / enc:.2f}x | {b / a:.2f}x |")
    print(f"(median of {args.rounds} interleaved rounds; load average {os.getloadavg()[0]:.1f})")
    for proc in procs.values():
        proc.stdin.close()
        proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
