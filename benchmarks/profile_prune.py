"""Profile one prune of a benchmark document with pyinstrument (the Pruner is warmed up first).

    python benchmarks/profile_prune.py cuad 131072            # text tree on stdout
    python benchmarks/profile_prune.py zh 131072 --html /tmp/zh.html
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import corpora  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=[*corpora.SETS, *corpora.SYNTHETIC])
    ap.add_argument("tokens", type=int, nargs="?", default=131_072)
    ap.add_argument("--ratio", default="1/6")
    ap.add_argument("--html")
    ap.add_argument("--interval", type=float, default=0.001)
    args = ap.parse_args()
    from pyinstrument import Profiler

    from catp.pipeline import Pruner

    text = corpora.build(args.kind, args.tokens)
    pruner = Pruner(domain=corpora.DOMAIN[args.kind])
    pruner.prune(text[:50_000], ratio=args.ratio)  # warm-up: rules, tokenizer, taggers
    profiler = Profiler(interval=args.interval)
    started = time.perf_counter()
    with profiler:
        pruner.prune(text, ratio=args.ratio)
    print(f"{args.kind} {args.tokens} tokens: prune {time.perf_counter() - started:.3f}s", file=sys.stderr)
    if args.html:
        Path(args.html).write_text(profiler.output_html(), encoding="utf-8")
    else:
        print(profiler.output_text(unicode=False, color=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
