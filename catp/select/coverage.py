"""Key sections (policy.key_sections): the sections an expert reads first (fees, liability; 诊断, 出院医嘱;
results, guidance), found by a heading or by a line's opening label. Their units' value is scaled by their
type's weight (`section_weights`), and `cover` keeps each one's heading and most valuable unit before the
greedy fills the rest (policy.coverage_share)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

import regex

from catp.document import Action, Analysis, Document, UnitKind
from catp.select.policy import SelectionPolicy
from catp.select.budget import Selection, Taker
from catp.select.value import FACT_CATEGORIES

_TIMEOUT = 1.0  # seconds per match: the patterns are rule-file data
_LABEL_CHARS = 80  # a line's opening label lies within its first this many characters
TITLE_TOKENS = 24  # a labelled line's first unit is kept as its title when it is at most this long


@dataclass(frozen=True, slots=True)
class KeySectionFound:
    """One key section in a document: its type, the unit that names it (a heading, or the unit that opens the
    labelled line) and its units [first, end)."""

    name: str
    weight: float
    title: int
    first: int
    end: int
    heading: bool  # the title is a heading unit (else the line's first unit, which holds the label)


@lru_cache(maxsize=64)
def _types(items: tuple) -> list[tuple[str, float, regex.Pattern]]:
    flag_bits = {"IGNORECASE": regex.I, "MULTILINE": regex.M, "DOTALL": regex.S, "VERBOSE": regex.X}
    out = []
    for name, pattern, flags, weight in items:
        bits = 0
        for f in flags:
            bits |= flag_bits[f]
        out.append((name, weight, regex.compile(pattern, bits)))
    return sorted(out, key=lambda t: -t[1])  # the heaviest type wins where several match


def _policy_types(policy: SelectionPolicy) -> list[tuple[str, float, regex.Pattern]]:
    return _types(tuple((name, k.pattern, tuple(k.flags), k.weight) for name, k in policy.key_sections.items()))


@lru_cache(maxsize=16)
def _label(pattern: str) -> regex.Pattern:
    return regex.compile(pattern, regex.MULTILINE)  # "^" at the line start that match() is given


def _type_of(types, text: str) -> tuple[str, float] | None:
    for name, weight, pattern in types:
        try:
            if pattern.search(text, timeout=_TIMEOUT):
                return name, weight
        except TimeoutError:
            continue
    return None


def find_key_sections(doc: Analysis, policy: SelectionPolicy) -> list[KeySectionFound]:
    """The key sections of `doc`, by their first unit. A heading that a type's pattern matches opens a section
    that runs to the next heading; a line whose opening label (policy.section_label) it matches opens one that
    runs over that line and the list items after it, up to the next other line or heading."""
    if not policy.key_sections:
        return []
    types = _policy_types(policy)
    units, text, deleted = doc.units, doc.text, doc.columns.deleted
    n = len(units)
    heads = [i for i, u in enumerate(units) if u.kind is UnitKind.HEADING]
    found: list[KeySectionFound] = []
    for k, h in enumerate(heads):
        hit = _type_of(types, text[units[h].start : units[h].end])
        if hit:
            found.append(KeySectionFound(hit[0], hit[1], h, h, heads[k + 1] if k + 1 < len(heads) else n, True))
    if policy.section_label:
        label = _label(policy.section_label)
        line_starts = [i for i in range(n) if i == 0 or "\n" in text[units[i - 1].end : units[i].start]]
        for k, i in enumerate(line_starts):
            if units[i].kind is UnitKind.HEADING or deleted[i]:
                continue
            start = units[i].start
            try:
                m = label.match(text, start, min(start + _LABEL_CHARS, len(text)), timeout=_TIMEOUT)
            except TimeoutError:
                m = None
            if not m:
                continue
            words = m.group("label") if "label" in label.groupindex else m.group()
            hit = _type_of(types, words) if words else None
            if not hit:
                continue
            end = n
            for j in line_starts[k + 1 :]:
                if units[j].kind is not UnitKind.LIST_ITEM:
                    end = j
                    break
            found.append(KeySectionFound(hit[0], hit[1], i, i, end, False))
    found.sort(key=lambda s: (s.first, -s.end))
    return found


def section_weights(doc: Document) -> list[float] | None:
    """Per unit, the weight of the innermost key section holding it (1 outside them); None when the document
    has none."""
    if not doc.key_sections:
        return None
    factor = [1.0] * len(doc.units)
    for s in doc.key_sections:  # by first unit, outer before inner: the innermost's weight stays
        for i in range(s.first, s.end):
            factor[i] = s.weight
    return factor


def coverage_order(found: list[KeySectionFound]) -> list[KeySectionFound]:
    """The key sections to cover (weight 1 or more; a lighter type marks routine text, such as a record's
    past history): the first of each type, heaviest first, then the others in the same order."""
    key = sorted((s for s in found if s.weight >= 1.0), key=lambda s: (-s.weight, s.first))
    seen: set[str] = set()
    first, rest = [], []
    for s in key:
        (rest if s.name in seen else first).append(s)
        seen.add(s.name)
    return first + rest


def cover(doc: Document, budget: int, gap_tokens: int, selection: Selection, policy: SelectionPolicy,
          density: list[float]) -> None:
    """Keep each key section's title (a heading, or a labelled line's first unit of at most TITLE_TOKENS
    tokens) and its most valuable unit (by `density`, value per token), while they fit policy.coverage_share
    of the budget."""
    if not policy.coverage_share or not doc.key_sections or budget < policy.coverage_min_tokens:
        return
    taker = Taker(doc, int(budget * policy.coverage_share), gap_tokens, selection)
    deleted, units = doc.columns.deleted, doc.units
    density = _taken_density(doc, density)
    for s in coverage_order(doc.key_sections):
        body = [i for i in range(s.first + (1 if s.heading else 0), s.end) if not deleted[i]]
        if not body:
            continue
        if (s.heading or units[s.title].tokens <= TITLE_TOKENS) and not deleted[s.title] \
                and not selection.kept[s.title]:
            taker.take(s.title)
        best = max(body, key=lambda i: (density[i], -i))
        if not selection.kept[best]:
            taker.take(best)
    if policy.coverage_facts:
        _cover_facts(doc, taker, policy, density)


def _taken_density(doc: Document, density: list[float]) -> list[float]:
    """Per unit, its value per token of what taking it costs: a unit of a span kept whole brings its whole
    group (a 150-token sentence for one clause's amount)."""
    group = doc.columns.group
    if not group:
        return density
    size: dict[int, int] = {}
    for i, g in enumerate(group):
        if g != -1:
            size[g] = size.get(g, 0) + max(doc.units[i].tokens, 1)
    return [d if g == -1 else d * max(u.tokens, 1) / size[g] for d, g, u in zip(density, group, doc.units)]


def fact_units(doc: Document, policy: SelectionPolicy) -> list[bool]:
    """Per unit, whether it holds a fact: a protected span of FACT_CATEGORIES (an amount, date, name,
    diagnosis, drug ...) whose category weighs more than 0 in this language."""
    weights = policy.category_weights
    starts = [u.start for u in doc.units]
    held = [False] * len(doc.units)
    for span in doc.spans:
        if span.action is not Action.PROTECT or span.category not in FACT_CATEGORIES:
            continue
        if weights.get(span.category, 1.0) <= 0:
            continue
        i = max(bisect_right(starts, span.start) - 1, 0)
        while i < len(starts) and starts[i] < span.end:
            held[i] = True
            i += 1
    return held


def _cover_facts(doc: Document, taker: Taker, policy: SelectionPolicy, density: list[float]) -> None:
    """Then the figures in the key sections: their units holding facts, densest first, one section's at a
    time in turn (coverage_order), while they fit the coverage share."""
    held, kept, deleted = fact_units(doc, policy), taker.sel.kept, doc.columns.deleted
    queues = []
    for s in coverage_order(doc.key_sections):
        units = sorted((i for i in range(s.first, s.end) if held[i] and not deleted[i]), key=lambda i: (-density[i], i))
        if units:
            queues.append(units[::-1])  # popped from the end: densest first
    while queues:
        for queue in queues:
            while queue:
                i = queue.pop()
                if not kept[i] and taker.take(i):
                    break
        queues = [q for q in queues if q]
