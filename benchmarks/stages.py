"""CPU time of each pipeline stage (and of each rule) for one benchmark document: where the time goes.

    python benchmarks/stages.py cuad 131072
    python benchmarks/stages.py zh 131072 --rules 10

It replays `Pruner.prune` stage by stage with the same calls (token_starts, segment, annotate, cost,
score, select, finish), timing each with process_time after a warm-up prune; then times every rule's
matcher alone on the segmented document. Stage names follow catp/pipeline.py; if the pipeline's private
stage methods change, this script says so rather than guessing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import corpora  # noqa: E402


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
    args = ap.parse_args()
    from catp import annotate as annotate_mod
    from catp import pipeline
    from catp.detect import detect_domain, detect_langs
    from catp.document import Document
    from catp.rules.context import MatchContext
    from catp.segment import segment

    text = corpora.build(args.kind, args.tokens)
    pruner = pipeline.Pruner(domain=corpora.DOMAIN[args.kind])
    pruner.prune(text[:50_000], ratio=args.ratio)
    tok = pruner.tokens
    rows = []
    t, _ = cpu(lambda: tok._tok.encode(text, add_special_tokens=False))
    rows.append(("(reference) tokenizer pass: Tokenizer.encode", t))

    def whole():
        if hasattr(pruner, "_prepared"):
            pruner._prepared = []
        return pruner.prune(text, ratio=args.ratio)

    t_all, _ = cpu(whole)
    t, (lang, langs) = cpu(lambda: detect_langs(text))
    rows.append(("detect_langs + detect_domain", t + cpu(lambda: detect_domain(text))[0]))
    t, starts = cpu(lambda: tok.token_starts(text))
    rows.append(("token_starts", t))

    def seg():
        d = Document(text=text, lang=lang, domain=corpora.DOMAIN[args.kind])
        segment(d)
        return d

    t, doc = cpu(seg)
    rows.append(("segment", t))
    registry = pruner.registry(corpora.DOMAIN[args.kind])

    def ann():
        d = seg()
        annotate_mod.annotate(d, registry, starts, langs=langs)
        return d

    t, annotated = cpu(ann)
    rows.append(("annotate (all rules, spans -> unit priorities)", t - rows[-1][1]))
    per_rule = []
    index = registry.anchor_index(langs)
    shared = MatchContext(doc, starts, anchor_index=index)

    def anchor_pass():  # what annotate's context does once for all rules: fold, anchors, barriers
        ctx = MatchContext(doc, starts, anchor_index=index)
        hits = index.hits(ctx.lowered)
        for compiled in registry.for_langs(langs):
            if getattr(compiled.matcher, "barriers", ""):
                ctx.barrier_positions(compiled.matcher.barriers)  # windows need none
        return ctx, hits

    t_anchor, (shared, hits) = cpu(anchor_pass)
    for compiled in registry.for_langs(langs):
        ctx = MatchContext(doc, starts, anchor_index=index, _lowered=shared.lowered, _anchor_hits=hits,
                           _barrier_positions=shared._barrier_positions)
        t, n = cpu(lambda: sum(1 for _ in compiled.matcher.spans(ctx)), repeat=1)
        per_rule.append((t, compiled.rule.id, compiled.rule.kind, n))
    rows.append(("  of which: matchers alone (with the anchor pass)", sum(p[0] for p in per_rule) + t_anchor))
    rows.append(("    anchor pass: fold, Aho-Corasick, barriers", t_anchor))
    if hasattr(pipeline, "_cost_units"):
        rows.append(("_cost_units", cpu(lambda: pipeline._cost_units(annotated, starts))[0]))
    rows.append(("score + select + decisions + finish (the rest)", t_all - sum(r[1] for r in rows[1:] if not r[0].startswith("  "))))
    rows.append(("prune (whole)", t_all))
    ref = rows[0][1]
    print(f"{args.kind} {args.tokens} tokens, {len(text):,} chars, {len(annotated.units):,} units, "
          f"{len(annotated.spans):,} spans; CPU seconds (median of 3)")
    for name, t in rows:
        print(f"  {name:52s} {t:7.3f}  {t / ref:5.2f}x tokenizer")
    print(f"costliest rules (of {len(per_rule)}):")
    for t, rid, kind, n in sorted(per_rule, reverse=True)[: args.rules]:
        print(f"  {rid:40s} {kind:10s} {t:7.3f}  {n:6d} spans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
