"""Fit the budget: protected units first (by priority), then the rest by score per token."""

from __future__ import annotations

from dataclasses import dataclass, field

from catp.document import Document


@dataclass
class Selection:
    kept: list[bool]
    added: list[int] = field(default_factory=list)  # unit indices in the order they were taken
    estimated_tokens: int = 0


LEAD_WEIGHT = 2.0  # how much more the opening of a section is worth
LEAD_SHARE = 0.3  # the opening: this share of the section's units
DOC_LEAD_WEIGHT = 4.0  # the document's own opening (title, parties, dates) weighs more again
DOC_LEAD_SHARE = 0.05


def section_lead(doc: Document) -> list[float]:
    """1 + LEAD_WEIGHT at a section's first unit, falling to 1 at LEAD_SHARE of the section.
    Sections start at headings; facts cluster in their openings (parties, dates, holdings)."""
    from catp.document import UnitKind

    n = len(doc.units)
    starts = [i for i, u in enumerate(doc.units) if u.kind is UnitKind.HEADING] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    bounds = [*starts, n]
    factor = [1.0] * n
    for a, b in zip(bounds, bounds[1:]):
        length = max(b - a, 1)
        for i in range(a, b):
            rel = (i - a) / length
            factor[i] = 1.0 + LEAD_WEIGHT * max(0.0, 1.0 - rel / LEAD_SHARE)
    for i in range(n):
        factor[i] *= 1.0 + DOC_LEAD_WEIGHT * max(0.0, 1.0 - i / max(n * DOC_LEAD_SHARE, 1))
    return factor


def rank(doc: Document, gap_tokens: int = 0) -> list[int]:
    """Units in the order the selector considers them (deleted units never appear).
    Density divides by the unit's tokens plus one gap marker, so crumbs do not win."""
    lead = section_lead(doc)

    def key(i: int) -> tuple:
        tokens = max(doc.units[i].tokens, 1) + gap_tokens
        value = doc.unit_value[i] + doc.scores.get(i, 0.0) + doc.unit_boost[i] / 100.0
        return (0, -value * lead[i] / tokens, i)

    return sorted((i for i in range(len(doc.units)) if not doc.unit_deleted[i]), key=key)


def select(doc: Document, budget: int, gap_tokens: int) -> Selection:
    """Greedy fill. Adding a unit costs its tokens plus a gap marker for each new run it opens."""
    selection = Selection([False] * len(doc.units))
    fill(doc, rank(doc, gap_tokens), budget, gap_tokens, selection)
    return selection


def fill(doc: Document, order: list[int], budget: int, gap_tokens: int, selection: Selection) -> None:
    """Take units in `order` while they fit; n runs of kept units cost n - 1 gap markers.
    A unit in a group (a clause or sentence a rule asked to keep whole) comes with its group."""
    kept = selection.kept
    n = len(kept)
    members: dict[int, list[int]] = {}
    for i, g in enumerate(doc.unit_group or []):
        if g != -1 and not doc.unit_deleted[i]:
            members.setdefault(g, []).append(i)
    runs_now = len(runs(kept))
    for i in order:
        if kept[i]:
            continue
        group = doc.unit_group[i] if doc.unit_group else -1
        take = [j for j in members[group] if not kept[j]] if group != -1 else [i]
        cost, runs_after = 0, runs_now
        for j in take:  # add one by one on a scratch copy to count runs
            joins = (j > 0 and kept[j - 1]) + (j + 1 < n and kept[j + 1])
            runs_after += 1 - joins
            cost += doc.units[j].tokens
            kept[j] = True
        cost += gap_tokens * (max(runs_after - 1, 0) - max(runs_now - 1, 0))
        if selection.estimated_tokens + cost <= budget:
            selection.estimated_tokens += cost
            selection.added.extend(take)
            runs_now = runs_after
        else:
            for j in take:
                kept[j] = False


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
