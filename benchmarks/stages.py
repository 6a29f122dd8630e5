"""CPU time of each stage of the engine (and of each rule) for one benchmark document: where the time goes.

    python benchmarks/stages.py cuad 131072
    python benchmarks/stages.py zh 131072 --rules 10
    python benchmarks/stages.py cuad 131072 --against 1048576   # which stages are not linear

It runs the real `Pruner.prune` (after a warm-up prune, its cache of analysed texts emptied each time) with
an `on_stage` hook that reads the process's CPU clock after every stage (catp.engine.STAGES): a stage's
time is the CPU time since the one before ended. Then it times every rule's matcher alone on the document.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import corpora  # noqa: E402


def stage_cpu(pruner, text: str, ratio: str) -> dict[str, float]:
    """One cold prune of `text`: the CPU seconds of each stage, and of the whole prune."""
    times: dict[str, float] = {}
    last = [0.0]

    def on_stage(name: str, _seconds: float) -> None:
        now = time.process_time()
        times[name] = times.get(name, 0.0) + now - last[0]
        last[0] = now

    pruner.clear_cache()
    began = last[0] = time.process_time()
    pruner.prune(text, ratio=ratio, on_stage=on_stage)
    times["prune (whole)"] = time.process_time() - began
    return times


def cpu(fn, repeat: int = 3):
    times, out = [], None
    for _ in range(repeat):
        c = time.process_time()
        out = fn()
        times.append(time.process_time() - c)
    return statistics.median(times), out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=[*corpora.SETS, *corpora.SYNTHETIC])
    ap.add_argument("tokens", type=int, nargs="?", default=131_072)
    ap.add_argument("--ratio", default="1/6")
    ap.add_argument("--rules", type=int, default=12, help="show the costliest N rules")
    ap.add_argument("--against", type=int, metavar="TOKENS",
                    help="instead: each stage at `tokens` and at TOKENS, interleaved in this process "
                         "(min of 2), and their ratio: which stages are not linear")
    args = ap.parse_args()
    if args.against:
        return linearity(args.kind, args.tokens, args.against, args.ratio)
    from catp import pipeline
    from catp.detect import detect_langs
    from catp.rules.context import MatchContext

    text = corpora.build(args.kind, args.tokens)
    pruner = pipeline.Pruner(domain=corpora.DOMAIN[args.kind])
    pruner.prune(text[:50_000], ratio=args.ratio)
    tok = pruner.tokens
    t_tok, _ = cpu(lambda: tok._tok.encode(text, add_special_tokens=False))
    runs = [stage_cpu(pruner, text, args.ratio) for _ in range(3)]
    rows = [("(reference) tokenizer pass: Tokenizer.encode", t_tok)]
    rows += [(name, statistics.median(r.get(name, 0.0) for r in runs)) for name in runs[0]]
    doc = pruner.analyse(text, ratio=args.ratio)
    analysis = doc.analysis
    langs = detect_langs(text)[1]
    registry = pruner.registry(analysis.domain)
    starts = analysis.token_starts
    index = registry.anchor_index(langs)

    def anchor_pass():  # what annotate's context does once for all rules: fold, anchors, barriers
        ctx = MatchContext(analysis, starts, anchor_index=index)
        hits = index.hits(ctx.lowered)
        for compiled in registry.for_langs(langs):
            if getattr(compiled.matcher, "barriers", ""):
                ctx.barrier_positions(compiled.matcher.barriers)  # windows need none
        return ctx, hits

    t_anchor, (shared, hits) = cpu(anchor_pass)
    per_rule = []
    for compiled in registry.for_langs(langs):
        ctx = MatchContext(analysis, starts, anchor_index=index, _lowered=shared.lowered, _anchor_hits=hits,
                           _barrier_positions=shared._barrier_positions)
        t, n = cpu(lambda: sum(1 for _ in compiled.matcher.spans(ctx)), repeat=1)
        per_rule.append((t, compiled.rule.id, compiled.rule.kind, n))
    at = next(i for i, (name, _) in enumerate(rows) if name == "annotate") + 1
    rows[at:at] = [("  of which: matchers alone (with the anchor pass)", sum(p[0] for p in per_rule) + t_anchor),
                   ("    anchor pass: fold, Aho-Corasick, barriers", t_anchor)]
    ref = rows[0][1]
    print(f"{args.kind} {args.tokens} tokens, {len(text):,} chars, {len(analysis.units):,} units, "
          f"{len(analysis.spans):,} spans; CPU seconds per stage (median of 3 cold prunes)")
    for name, t in rows:
        print(f"  {name:52s} {t:7.3f}  {t / ref:5.2f}x tokenizer")
    print(f"costliest rules (of {len(per_rule)}):")
    for t, rid, kind, n in sorted(per_rule, reverse=True)[: args.rules]:
        print(f"  {rid:40s} {kind:10s} {t:7.3f}  {n:6d} spans")
    return 0


def linearity(kind: str, small: int, large: int, ratio: str) -> int:
    """Each stage of Pruner.prune at two sizes, in one process (the machine's load hits both alike)."""
    from catp import pipeline

    pruner = pipeline.Pruner(domain=corpora.DOMAIN[kind])
    texts = {n: corpora.build(kind, n) for n in (small, large)}
    pruner.prune(texts[small], ratio=ratio)
    times: dict[int, dict[str, list[float]]] = {n: {} for n in texts}
    for _ in range(2):
        for n, text in texts.items():
            c = time.process_time()
            pruner.tokens._tok.encode(text, add_special_tokens=False)
            times[n].setdefault("(reference) tokenizer pass", []).append(time.process_time() - c)
            for name, t in stage_cpu(pruner, text, ratio).items():
                times[n].setdefault(name, []).append(t)
    print(f"{kind}: CPU seconds (min of 2) at {small} and {large} tokens; text {len(texts[large]) / len(texts[small]):.2f}x")
    for name in times[small]:
        a, b = min(times[small][name]), min(times[large][name])
        print(f"  {name:36s} {a:7.3f} {b:8.3f}  {b / max(a, 1e-9):6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
