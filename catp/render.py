"""Render a selection: the extract text, kept spans with reasons, dropped protected content."""

from __future__ import annotations

import heapq
import html
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable

from catp.document import Action, Document
from catp.result import DroppedProtected, KeptSpan, PruneResult
from catp.select import FACT_CATEGORIES, runs


def kept_spans(doc: Document, kept: list[bool], chose: Callable[[int, int], str] | None = None) -> list[KeptSpan]:
    """The runs of kept units, each with its units' rule ids ("score" for a unit no rule protects). Where a
    model chose the units, `chose(first, last)` gives its word on the run (e.g. 'keep-model p=0.93'), first."""
    out = []
    rules = doc.columns.rules
    for first, last in runs(kept):
        reasons: list[str] = [] if chose is None else [chose(first, last)]
        for i in range(first, last + 1):
            for rule_id in rules[i] or ["score"]:
                if rule_id not in reasons:
                    reasons.append(rule_id)
        out.append(KeptSpan(start=doc.units[first].start, end=doc.units[last].end, reasons=reasons))
    return out


def extract_text(doc: Document, spans: list[KeptSpan], gap_marker: str) -> str:
    return gap_marker.join(doc.text[s.start : s.end] for s in spans)


def protected_report(doc: Document, spans: list[KeptSpan]) -> tuple[list[DroppedProtected], dict]:
    """Which protected spans did not survive, and found/kept/dropped counts per category."""
    starts = [s.start for s in spans]
    from bisect import bisect_right

    def inside(a: int, b: int) -> bool:
        i = bisect_right(starts, a) - 1
        return i >= 0 and spans[i].end >= b

    dropped: list[DroppedProtected] = []
    per_category: dict[str, dict[str, int]] = defaultdict(lambda: {"found": 0, "kept": 0, "dropped": 0})
    text = doc.text
    for span in doc.spans:  # each (start, end, rule) once: annotate merges a rule's repeated matches
        if span.action is not Action.PROTECT:
            continue
        counts = per_category[span.category]
        counts["found"] += 1
        if inside(span.start, span.end):
            counts["kept"] += 1
        else:
            counts["dropped"] += 1
            dropped.append(DroppedProtected(start=span.start, end=span.end, text=text[span.start : span.end],
                                            category=span.category, rule_id=span.rule_id,
                                            priority=span.priority))
    return dropped, dict(sorted(per_category.items()))


LOST_SHOWN = 5  # key sections and facts a warning names; dropped_protected lists them all


def dropped_warning(doc: Document, kept: list[bool], dropped: list[DroppedProtected], budget: int) -> str:
    """The warning for protected spans the budget forced out: what matters first. The key sections
    (policy.key_sections of weight 1 or more) of which nothing was kept, then what was lost from key sections:
    facts (FACT_CATEGORIES) first, heavier sections and higher priorities first, one from each section before
    a second from any; with no key sections, the lost spans' counts per category."""
    head = f"the budget of {budget} tokens forced out {len(dropped)} protected spans"
    tail = "dropped_protected lists each with its rule (catp prune or ask --format json)"
    key = [s for s in doc.key_sections if s.weight >= 1.0]  # lighter types mark routine text
    if not key:
        cats: dict[str, int] = defaultdict(int)
        for d in dropped:
            cats[d.category] += 1
        summary = ", ".join(f"{c}: {n}" for c, n in sorted(cats.items()))
        return f"{head} ({summary}): facts the rules protect that did not fit; {tail}"
    text, units = doc.text, doc.units

    def title(s) -> str:
        words = " ".join(text[units[s.title].start : units[s.title].end].split())
        return words if len(words) <= 40 else words[:39] + "…"

    parts = [head]
    missing = [s for s in key if not any(kept[s.first : s.end])]
    if missing:
        shown = "; ".join(f"{s.name} ({title(s)!r})" for s in missing[:LOST_SHOWN])
        more = f" and {len(missing) - LOST_SHOWN} more" if len(missing) > LOST_SHOWN else ""
        parts.append(f"key sections with nothing kept: {shown}{more}")
    starts = [u.start for u in units]
    inner = innermost_sections(key, [bisect_right(starts, d.start) - 1 for d in dropped])
    lost = [(d, s) for d, s in zip(dropped, inner) if s is not None]
    if lost:
        lost.sort(key=lambda pair: (pair[0].category not in FACT_CATEGORIES, -pair[1].weight, -pair[0].priority,
                                    pair[0].start))  # facts (amounts, dates, diagnoses ...) before clauses
        seen: set[str] = set()
        named = []
        sections_named: set[int] = set()
        for spread in (True, False):  # one from each key section first, then the next ones in order
            for d, s in lost:
                words = " ".join(d.text.split())
                if words in seen or len(named) == LOST_SHOWN or (spread and s.first in sections_named):
                    continue
                seen.add(words)
                sections_named.add(s.first)
                named.append(f"{words[:40]!r} ({d.category}, {s.name})")
        parts.append(f"{len(lost)} of them from key sections, first {', '.join(named)}")
    return "; ".join(parts) + "; " + tail


def innermost_sections(key: list, at: list[int]) -> list:
    """For each unit index in `at`, the last section of `key` (by first unit: the innermost) that holds it, or
    None. One sweep in unit order with a heap of the sections begun so far, the latest on top, those ended
    popped as they reach the top: O((units + sections) log), where a scan of every section per unit grew with
    their product (cuad 1M: 85,313 lost spans x 437 sections, 10 s)."""
    found: list = [None] * len(at)
    by_first = sorted(range(len(key)), key=lambda j: key[j].first)
    begun: list[int] = []  # -j for each section j begun: heapq pops the latest first
    k = 0
    for q in sorted(range(len(at)), key=at.__getitem__):
        i = at[q]
        while k < len(by_first) and key[by_first[k]].first <= i:
            heapq.heappush(begun, -by_first[k])
            k += 1
        while begun and key[-begun[0]].end <= i:  # ended before i, so before every unit after it too
            heapq.heappop(begun)
        if begun:
            found[q] = key[-begun[0]]
    return found


def to_html(doc: Document, result: PruneResult) -> str:
    """The whole document, kept text highlighted, reasons on hover."""
    parts = [
        "<!doctype html><meta charset='utf-8'><title>catp</title><style>"
        "body{font-family:sans-serif;max-width:60em;margin:2em auto;white-space:pre-wrap;line-height:1.5}"
        ".kept{background:#d4f7d4}.drop{color:#999;text-decoration:line-through}"
        ".del{color:#c66;text-decoration:line-through}header{white-space:normal;margin-bottom:1em}</style>",
        f"<header><b>catp</b>: {result.stats.input_tokens} → {result.stats.output_tokens} tokens "
        f"(budget {result.stats.budget}, {html.escape(result.stats.tokenizer)}); "
        f"{len(result.dropped_protected)} protected spans dropped.</header><div>",
    ]
    cursor = 0
    text = doc.text
    for i, unit in enumerate(doc.units):
        parts.append(html.escape(text[cursor : unit.start]))
        decision = doc.decisions[i] if i < len(doc.decisions) else None
        chunk = html.escape(text[unit.start : unit.end])
        if decision and decision.kept:
            title = html.escape(", ".join(decision.reasons), quote=True)
            parts.append(f"<span class='kept' title='{title}'>{chunk}</span>")
        elif doc.columns.deleted[i]:
            parts.append(f"<span class='del' title='boilerplate'>{chunk}</span>")
        else:
            title = html.escape(", ".join(doc.columns.rules[i]) or "low score", quote=True)
            parts.append(f"<span class='drop' title='dropped: {title}'>{chunk}</span>")
        cursor = unit.end
    parts.append(html.escape(text[cursor:]))
    parts.append("</div>")
    return "".join(parts)
