"""What a unit is worth before its cost: its facts (rules), information (scorer) and boost, and
`distinct_facts` (policy field distinct_facts), which counts a repeated fact once."""

from __future__ import annotations

from bisect import bisect_right

from catp.document import Action, Document
from catp.select.policy import SelectionPolicy, fact_weight

DEFAULT_POLICY = SelectionPolicy()  # the policy when none is given

# Protected spans of these categories are facts with a text of their own (a finding, a number, a date, a
# name): once kept, the same text elsewhere says nothing new (a gold quote counts wherever it is kept).
FACT_CATEGORIES = frozenset({"finding", "number", "date", "amount", "entity", "lab", "drug", "vital", "diagnosis",
                             "allergy"})


def distinct_facts(doc: Document, exponent: float) -> tuple[list[float], list[list[tuple[int, float]]],
                                                              list[list[int]]]:
    """For policy.distinct_facts: each unit's facts, its distinct facts as (identity, weight) and per identity
    the units that hold it. A distinct fact is a protected span of FACT_CATEGORIES within one unit, not kept
    whole; its identity is its lower-cased text; it weighs its rule's fact weight times its occurrences in
    the document to the power `exponent` (a finding the report names five times is more likely one that
    matters, and one unit keeping it is enough)."""
    starts = [u.start for u in doc.units]
    ids: dict[str, int] = {}
    holders: list[list[int]] = []
    spans: list[tuple[int, int, float]] = []  # (unit, identity, rule weight)
    for span in doc.spans:
        if span.action is not Action.PROTECT or span.whole or span.category not in FACT_CATEGORIES:
            continue
        u = bisect_right(starts, span.start) - 1
        if u < 0 or doc.units[u].end < span.end:
            continue  # not within one unit
        key = " ".join(doc.text[span.start : span.end].lower().split())
        f = ids.setdefault(key, len(ids))
        if f == len(holders):
            holders.append([])
        for _ in range(span.matches):  # each match of the rule on the range, as annotate counts them
            holders[f].append(u)
            spans.append((u, f, fact_weight(span.priority)))
    facts = list(doc.columns.value)
    held: list[list[tuple[int, float]]] = [[] for _ in doc.units]
    for u, f, weight in spans:
        counted = weight * len(holders[f]) ** exponent
        facts[u] += counted - weight
        held[u].append((f, counted))
    return facts, held, holders


def value_of(doc: Document, i: int, score: float, information_weight: float) -> float:
    """facts (rules) + information_weight x information (scorer) + boost"""
    columns = doc.columns
    return columns.value[i] + information_weight * score + columns.boost[i] / 100.0
