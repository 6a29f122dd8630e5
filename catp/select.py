"""Fit the budget: protected units first (by priority), then the rest by score per token."""

from __future__ import annotations

from dataclasses import dataclass, field

from catp.document import Document


@dataclass
class Selection:
    kept: list[bool]
    added: list[int] = field(default_factory=list)  # unit indices in the order they were taken
    estimated_tokens: int = 0


def rank(doc: Document) -> list[int]:
    """Units in the order the selector considers them (deleted units never appear)."""
    def key(i: int) -> tuple:
        tokens = max(doc.units[i].tokens, 1)
        if doc.unit_priority[i] > 0:  # protected first, densest facts first
            return (0, -doc.unit_value[i] / tokens, i)
        value = doc.scores.get(i, 0.0) + doc.unit_boost[i] / 100.0
        return (1, -value / tokens, i)

    return sorted((i for i in range(len(doc.units)) if not doc.unit_deleted[i]), key=key)


def select(doc: Document, budget: int, gap_tokens: int) -> Selection:
    """Greedy fill. Adding a unit costs its tokens plus a gap marker for each new run it opens."""
    n = len(doc.units)
    kept = [False] * n
    selection = Selection(kept)
    used = 0
    for i in rank(doc):
        joins = (i > 0 and kept[i - 1]) + (i + 1 < n and kept[i + 1])
        cost = doc.units[i].tokens + gap_tokens * (1 - joins)
        if used + cost <= budget:
            kept[i] = True
            used += cost
            selection.added.append(i)
    selection.estimated_tokens = used
    return selection


def runs(kept: list[bool]) -> list[tuple[int, int]]:
    """Maximal runs [first, last] of consecutive kept units."""
    out: list[tuple[int, int]] = []
    start = None
    for i, k in enumerate(kept):
        if k and start is None:
            start = i
        elif not k and start is not None:
            out.append((start, i - 1))
            start = None
    if start is not None:
        out.append((start, len(kept) - 1))
    return out
