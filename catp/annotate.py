"""Run rules over a segmented document: labelled spans, then per-unit priorities."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import replace
from operator import attrgetter

from catp.document import Action, Analysis, Span, Unit
from catp.select.policy import fact_weight
from catp.rules.context import MatchContext
from catp.rules.registry import RuleRegistry


def annotate(doc: Analysis, registry: RuleRegistry, token_starts: list[int], *,
             langs: set[str], regex_timeout: float = 2.0, whole_span_chars: int = 0,
             category_weights: dict[str, float] | None = None, whole_span_max_tokens: int = 0) -> Analysis:
    ctx = MatchContext(doc, token_starts, regex_timeout=regex_timeout, anchor_index=registry.anchor_index(langs))
    spans: list[Span] = []
    for compiled in registry.for_langs(langs):
        found: list[Span] = []
        try:
            found.extend(compiled.matcher.spans(ctx))
        except TimeoutError:
            doc.warnings.append(f"rule {compiled.rule.id!r} ({compiled.path}:{compiled.line}) hit its "
                                f"{regex_timeout:g}s regex timeout on this document and was skipped")
            continue
        spans.extend(found)
    for key in ("rule_id", "end", "start"):  # = sort by (start, end, rule_id): stable sorts, no tuple keys
        spans.sort(key=attrgetter(key))
    doc.spans = _once(spans)
    _split_off(doc)
    ungrouped = _long_whole_spans(doc, token_starts, whole_span_max_tokens)
    _unit_priorities(doc, whole_span_chars, category_weights or {}, ungrouped)
    return doc


def _long_whole_spans(doc: Analysis, token_starts: list[int], max_tokens: int) -> set[int] | None:
    """The indexes (in doc.spans) of the spans kept whole that are longer than max_tokens tokens: their units
    are not grouped (None when there is no limit)."""
    if not max_tokens:
        return None
    return {k for k, s in enumerate(doc.spans)
            if s.whole and bisect_left(token_starts, s.end) - bisect_left(token_starts, s.start) > max_tokens}


_CUTTING = (Action.DELETE, Action.DETACH)


def _once(spans: list[Span]) -> list[Span]:
    """Sorted spans with each (start, end, rule) once, counting its matches: a rule whose two patterns,
    or two matches expanded to one sentence, give one range lists it once, and its facts count twice."""
    out: list[Span] = []
    last = None
    for span in spans:
        key = (span.start, span.end, span.rule_id)
        if key == last:
            out[-1] = replace(out[-1], matches=out[-1].matches + 1)
        else:
            out.append(span)
            last = key
    return out


def _split_off(doc: Analysis) -> None:
    """Boilerplate (delete) and detach spans become units of their own, so deleting or leaving them
    out cuts nothing else."""
    cuts = sorted({p for s in doc.spans if s.action in _CUTTING for p in (s.start, s.end)})
    if not cuts:
        return
    text = doc.text
    units: list[Unit] = []
    for unit in doc.units:
        lo, hi = bisect_right(cuts, unit.start), bisect_left(cuts, unit.end)
        stripped = unit.start < unit.end and not text[unit.start].isspace() and not text[unit.end - 1].isspace()
        if lo == hi and stripped:  # no cut inside (segment's units are stripped): the same unit, renumbered
            unit.index = len(units)
            units.append(unit)
            continue
        edges = [unit.start, *cuts[lo:hi], unit.end]
        first = True
        for a, b in zip(edges, edges[1:]):
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            if a < b:
                units.append(Unit(len(units), a, b, unit.kind if first else unit.kind.CLAUSE, unit.sentence))
                first = False
    doc.units = units


def _covered_units(doc: Analysis, action: Action) -> list[bool] | None:
    """Per unit, whether a span with this action covers it whole (None when no span has the action)."""
    spans = [s for s in doc.spans if s.action is action]
    if not spans:
        return None
    starts = [u.start for u in doc.units]
    covered = [False] * len(doc.units)
    for span in spans:
        i = bisect_left(starts, span.start)
        while i < len(starts) and doc.units[i].end <= span.end:
            covered[i] = True
            i += 1
    return covered


def _unit_priorities(doc: Analysis, whole_span_chars: int, category_weights: Mapping[str, float],
                     ungrouped: set[int] | None = None) -> None:
    """Per unit: the highest priority, the rules, deletion, boost, value (facts) and group.
    A protected span's fact weight (once per match of its rule on that range) (times its category's weight, 1 when not listed) is shared among
    its units by overlap; a span kept whole counts one fact per `whole_span_chars` characters when
    that is set (long clauses are worth more), and leaves out the units a detach span covers. A discount
    span multiplies its units' facts by its category's weight (the smallest, where several cover one)."""
    n = len(doc.units)
    starts = [u.start for u in doc.units]
    ends = [u.end for u in doc.units]
    priority = [0] * n
    rules: list[list[str]] = [[] for _ in range(n)]
    deleted = [False] * n
    boost = [0] * n
    value = [0.0] * n
    group = [-1] * n
    discount = [1.0] * n
    DELETE, PROTECT, DETACH, DISCOUNT = Action.DELETE, Action.PROTECT, Action.DETACH, Action.DISCOUNT
    detached = _covered_units(doc, DETACH)
    weights: dict[tuple[int, str], float] = {}  # fact weight per priority and category, worked out once
    category_weight = category_weights.get
    for k, span in enumerate(doc.spans):
        s_start, s_end, action, rule_id, prio = span.start, span.end, span.action, span.rule_id, span.priority
        i = bisect_right(starts, s_start) - 1
        if i < 0:
            i = 0
        elif ends[i] <= s_start:  # the span starts after this unit (in the space before the next)
            i += 1
        if action is DETACH:
            continue
        if action is DISCOUNT:
            factor = category_weight(span.category, 1.0)
            while i < n and starts[i] < s_end:
                discount[i] = min(discount[i], factor)
                i += 1
            continue
        if action is DELETE:
            while i < n and starts[i] < s_end:
                if s_start <= starts[i] and ends[i] <= s_end:
                    deleted[i] = True
                i += 1
            continue
        if action is PROTECT:
            weight = weights.get((prio, span.category))
            if weight is None:
                weight = weights[prio, span.category] = fact_weight(prio) * category_weight(span.category, 1.0)
            if span.matches > 1:
                weight *= span.matches
            whole = span.whole
            binds = whole and not (ungrouped and k in ungrouped)  # a long one's units stay free
            per = s_end - s_start  # the span's weight is shared by overlap ...
            if whole and whole_span_chars:
                per = min(per, whole_span_chars)  # ... or counted once per whole_span_chars characters
            joined = -1  # the group of the span's first unit, for a span kept whole
            while i < n:
                u_start = starts[i]
                if u_start >= s_end:
                    break
                if whole and detached is not None and detached[i]:
                    i += 1
                    continue
                unit_rules = rules[i]
                if rule_id not in unit_rules:
                    unit_rules.append(rule_id)
                if binds:  # join the group of the span's first unit
                    if joined == -1:
                        joined = group[i] if group[i] != -1 else i
                    group[i] = joined
                if prio > priority[i]:
                    priority[i] = prio
                u_end = ends[i]  # the overlap, min(u_end, s_end) - max(u_start, s_start), without the calls
                overlap = (u_end if u_end < s_end else s_end) - (u_start if u_start > s_start else s_start)
                value[i] += weight * overlap / per
                i += 1
            continue
        while i < n and starts[i] < s_end:  # boost
            if rule_id not in rules[i]:
                rules[i].append(rule_id)
            boost[i] = max(boost[i], prio)
            i += 1
    for i in range(n):
        if deleted[i]:
            priority[i] = 0
        value[i] *= discount[i]
    columns = doc.columns
    columns.priority, columns.rules, columns.deleted, columns.boost = priority, rules, deleted, boost
    columns.value, columns.group = value, group
