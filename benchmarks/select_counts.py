"""Select's work at two sizes: units, takes, density evaluations, settles, and select's CPU time, on one
benchmark kind (issue 25, point 14: which part of select is not linear).

    python benchmarks/select_counts.py cuad
    python benchmarks/select_counts.py zh --profile     # plus cProfile's top functions at each size
    python benchmarks/select_counts.py zh --repeat 3    # select's CPU time: the least of 3 runs

Each document is analysed by Pruner.analyse(text, ratio="1/6") and then selected once (--repeat: N times),
with counting wrappers around make_density's function and Aside's after_take and unfit_of, and the cyclic
GC paused as Pruner.prune pauses it (--gc: on; with it on, its passes over the 1M analysis's objects made
select look superlinear: cuad 1M on bcc74d7: 2.45 s with it, 1.4 s without).
"""

import argparse
import cProfile
import gc
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import corpora  # noqa: E402
from catp import pipeline  # noqa: E402
import catp.select.greedy as greedy  # noqa: E402
from catp.select import select  # noqa: E402

counts = {}
orig_make = greedy.make_density
def counting_make(*a, **k):
    d = orig_make(*a, **k)
    def wrapped(i):
        counts["density"] = counts.get("density", 0) + 1
        return d(i)
    wrapped.keys, wrapped.took = d.keys, d.took
    return wrapped
greedy.make_density = counting_make
orig_after = greedy.Aside.after_take
def after(self, near, first, spent):
    if self.taker.first != first:
        counts["first_moves"] = counts.get("first_moves", 0) + 1
        counts["by_cost_scanned"] = counts.get("by_cost_scanned", 0) + len(self.by_cost)
    return orig_after(self, near, first, spent)
greedy.Aside.after_take = after
orig_unfit = greedy.Aside.unfit_of
def unfit(self, heap):
    counts["settles"] = counts.get("settles", 0) + 1
    counts["settle_entries"] = counts.get("settle_entries", 0) + len(heap)
    return orig_unfit(self, heap)
greedy.Aside.unfit_of = unfit

ap = argparse.ArgumentParser()
ap.add_argument("kind", choices=[*corpora.SETS, *corpora.SYNTHETIC])
ap.add_argument("--profile", action="store_true")
ap.add_argument("--repeat", type=int, default=1, help="select runs per size; the least CPU time is shown")
ap.add_argument("--gc", action="store_true", help="leave the cyclic GC on (Pruner.prune pauses it)")
args = ap.parse_args()
kind = args.kind
pruner = pipeline.Pruner(domain=corpora.DOMAIN[kind])
for n in (131072, 1048576):
    text = corpora.build(kind, n)
    doc = pruner.analyse(text, ratio="1/6")
    policy = pruner.policy(doc.domain, doc.lang)
    times = []
    for _ in range(args.repeat):
        counts.clear()
        if not args.gc:
            gc.disable()
        c = time.process_time()
        sel = select(doc, doc.budget, pruner.gap_tokens, policy)
        times.append(time.process_time() - c)
        gc.enable()
    t, counted = min(times), dict(counts)
    prof = cProfile.Profile() if args.profile else None
    if prof:
        prof.enable()
        select(doc, doc.budget, pruner.gap_tokens, policy)
        prof.disable()
    print(kind, n, "units", len(doc.units), "takes", len(sel.added), "select cpu", round(t, 3), counted, flush=True)
    if prof:
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(12)
