"""CPU time of each pipeline stage (and of each rule) for one benchmark document: where the time goes.

    python benchmarks/stages.py cuad 131072
    python benchmarks/stages.py zh 131072 --rules 10
    python benchmarks/stages.py cuad 131072 --against 1048576   # which stages are not linear

It replays `Pruner.prune` stage by stage with the same calls (token_starts, segment, annotate, cost,
score, select, finish), timing each with process_time (the GC paused with the pipeline's own _gc_paused, as prune pauses it) after a
warm-up prune; then times every rule's matcher alone on the segmented document. Stage names follow
catp/pipeline.py; if the pipeline's private stage methods change, this script says so rather than guessing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import corpora  # noqa: E402
from catp.pipeline import _gc_paused  # noqa: E402  (stages are timed as Pruner.prune runs them)


def cpu(fn, repeat: int = 3):
    times, out = [], None
    for _ in range(repeat):
        c = time.process_time()
        with _gc_paused():
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
        rows.append(("_cost_units", cpu(lambda: pipeline._cost_units(annotated, starts, pruner._marker_merge))[0]))
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


def linearity(kind: str, small: int, large: int, ratio: str) -> int:
    """Each stage of Pruner.prune at two sizes, in one process (the machine's load hits both alike)."""
    from catp import pipeline
    from catp.annotate import annotate
    from catp.detect import detect_langs
    from catp.document import Document
    from catp.segment import segment
    from catp.select import select

    pruner = pipeline.Pruner(domain=corpora.DOMAIN[kind])
    texts = {n: corpora.build(kind, n) for n in (small, large)}
    pruner.prune(texts[small], ratio=ratio)
    times: dict[int, dict[str, list[float]]] = {n: {} for n in texts}

    def timed(n, name, fn):
        c = time.process_time()
        with _gc_paused():
            out = fn()
        times[n].setdefault(name, []).append(time.process_time() - c)
        return out

    for _ in range(2):
        for n, text in texts.items():
            lang, langs = detect_langs(text)
            timed(n, "(reference) tokenizer pass", lambda: pruner.tokens._tok.encode(text, add_special_tokens=False))
            starts = timed(n, "token_starts", lambda: pruner.tokens.token_starts(text))
            doc = Document(text=text, lang=lang, domain=corpora.DOMAIN[kind])
            timed(n, "segment", lambda: segment(doc))
            timed(n, "annotate", lambda: annotate(doc, pruner.registry(doc.domain), starts, langs=langs))
            timed(n, "_cost_units", lambda: pipeline._cost_units(doc, starts, pruner._marker_merge))
            from catp.scoring.lexical import index_terms

            timed(n, "index_terms (lexical term index)", lambda: index_terms(doc))
            budget = int(pipeline.parse_ratio(ratio) * len(starts))
            timed(n, "score", lambda: pruner._score(doc, None, budget))
            policy = pruner.policy(doc.domain, doc.lang)  # as Pruner._select runs it
            timed(n, "select", lambda policy=policy: select(doc, budget, pruner.gap_tokens, policy))
            pruner.clear_cache()
            timed(n, "prune (whole)", lambda: pruner.prune(text, ratio=ratio))
    print(f"{kind}: CPU seconds (min of 2) at {small} and {large} tokens; text {len(texts[large]) / len(texts[small]):.2f}x")
    for name in times[small]:
        a, b = min(times[small][name]), min(times[large][name])
        print(f"  {name:36s} {a:7.3f} {b:8.3f}  {b / a:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
