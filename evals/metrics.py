"""Metric definitions. A gold item (or extracted value) is kept when at least 90% of its
non-whitespace characters lie inside kept spans, or when its whitespace-normalised quote
occurs in the whitespace-normalised output."""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Sequence

KEEP_SHARE = 0.9
_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    return _WS.sub(" ", text).strip()


def merge_spans(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, non-overlapping, touching spans joined."""
    merged: list[list[int]] = []
    for s, e in sorted((s, e) for s, e in spans if e > s):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged]


class KeptIndex:
    """Answers 'how many non-whitespace characters of text[a:b] were kept' quickly."""

    def __init__(self, prefix: list[int], kept: Sequence[tuple[int, int]], output: str) -> None:
        self.prefix = prefix
        self.spans = merge_spans(kept)
        self.starts = [s for s, _ in self.spans]
        self.output = normalise(output)

    def kept_chars(self, start: int, end: int) -> int:
        total = 0
        i = max(bisect_left(self.starts, start) - 1, 0)
        while i < len(self.spans) and self.spans[i][0] < end:
            s, e = self.spans[i]
            a, b = max(s, start), min(e, end)
            if a < b:
                total += self.prefix[b] - self.prefix[a]
            i += 1
        return total

    def is_kept(self, start: int, end: int, quote: str) -> bool:
        need = self.prefix[end] - self.prefix[start]
        if need == 0 or self.kept_chars(start, end) >= KEEP_SHARE * need:
            return True
        q = normalise(quote)
        return bool(q) and q in self.output


def question_supported(kept_flags: Sequence[bool], gold_index: Sequence[int], support: str) -> bool:
    flags = [kept_flags[i] for i in gold_index]
    return all(flags) if support == "all" else any(flags)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(math.ceil(q / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def latency_summary(seconds: Sequence[float], input_tokens: int) -> dict[str, float]:
    if not seconds:
        return {}
    total = sum(seconds)
    return {
        "p50_ms": 1000 * percentile(seconds, 50), "p95_ms": 1000 * percentile(seconds, 95),
        "p99_ms": 1000 * percentile(seconds, 99), "max_ms": 1000 * max(seconds),
        "tokens_per_s": input_tokens / total if total > 0 else float("inf"),
    }


def share(hits: int, total: int) -> float | None:
    return hits / total if total else None
