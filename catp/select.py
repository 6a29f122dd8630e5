"""Fit the budget: greedy by value per token (protected facts + information, novelty, lead prior)."""

from __future__ import annotations

import copy
import heapq
import math
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import pairwise

from catp.document import Document, UnitKind
from catp.rules.schema import SelectionPolicy

DEFAULT_POLICY = SelectionPolicy()


@dataclass
class Selection:
    kept: list[bool]
    added: list[int] = field(default_factory=list)  # unit indices in the order they were taken
    estimated_tokens: int = 0


def run_heads(doc: Document, gap_tokens: int) -> list[int]:
    """Per unit, what starting a run of kept units there costs beyond its tokens, when a gap marker comes
    before it: the marker, less the whitespace tokens before the unit that the run does not hold
    (`Unit.edge`) and the marker's last token when it merges into the unit's first. The run that opens
    the output has no marker before it: it costs `first_run_change` more than that."""
    return [gap_tokens - u.edge - u.marker_merge for u in doc.units]


def first_run_change(doc: Document, gap_tokens: int, first: int) -> int:
    """What the output's first run, starting at unit `first`, costs on top of run_heads: no marker comes
    before it, and none merges into it."""
    return doc.units[first].marker_merge - gap_tokens


def estimate(doc: Document, kept: list[bool], gap_tokens: int) -> int:
    """The estimated tokens of the output that `kept` gives, counted from scratch (_Taker counts it as it
    goes): the units' tokens, and for each run a gap marker before it less the tokens its first unit does
    not spend (run_heads), with no marker before the first run."""
    found = runs(kept)
    if not found:
        return 0
    heads = run_heads(doc, gap_tokens)
    return (sum(u.tokens for u, k in zip(doc.units, kept) if k) + sum(heads[a] for a, _ in found)
            + first_run_change(doc, gap_tokens, found[0][0]))


def sections(doc: Document) -> list[tuple[int, int]]:
    """[first, end) unit ranges: a section runs from a heading to the next (the first from unit 0)."""
    n = len(doc.units)
    starts = [i for i, u in enumerate(doc.units) if u.kind is UnitKind.HEADING] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    return list(zip(starts, [*starts[1:], n]))


def section_lead(doc: Document, policy: SelectionPolicy = DEFAULT_POLICY) -> list[float]:
    """1 + lead_weight at a section's first unit after its heading, falling to 1 at lead_share of
    the section (or after lead_tokens tokens, when set). Sections start at headings; facts cluster
    in their openings (parties, dates, holdings); the heading itself is valued by its rules alone.
    The document's own opening (title, parties, dates) gets doc_lead_weight on top."""
    n = len(doc.units)
    factor = [1.0] * n
    for a, b in sections(doc):
        if doc.units[a].kind is UnitKind.HEADING and b - a > 1:
            a += 1
        length = max(b - a, 1)
        before = 0  # tokens of the section before unit i
        for i in range(a, b):
            rel = before / policy.lead_tokens if policy.lead_tokens else (i - a) / length / policy.lead_share
            factor[i] = 1.0 + policy.lead_weight * max(0.0, 1.0 - rel)
            before += doc.units[i].tokens
    for i in range(n):
        factor[i] *= 1.0 + policy.doc_lead_weight * max(0.0, 1.0 - i / max(n * policy.doc_lead_share, 1))
    if policy.table_lead_weight:
        _table_lead(doc, policy, factor)
    return factor


def _table_lead(doc: Document, policy: SelectionPolicy, factor: list[float]) -> None:
    """1 + table_lead_weight at a table's first row, falling to 1 at its table_lead_rows-th row."""
    row = 0  # the row's place in its table (a run of table rows), from 0
    for i, unit in enumerate(doc.units):
        if unit.kind is not UnitKind.TABLE_ROW:
            row = 0
            continue
        factor[i] *= 1.0 + policy.table_lead_weight * max(0.0, 1.0 - row / policy.table_lead_rows)
        row += 1


def long_span_factor(doc: Document, policy: SelectionPolicy = DEFAULT_POLICY) -> list[float] | None:
    """Per unit, for a span kept whole of t tokens that holds it: whole_span_tokens / t past that length,
    sqrt(whole_span_tokens / t) below it (1 for other units); None when whole_span_tokens is 0. Such a
    span is taken whole, and its value grows with its length (each rule on it counts per
    whole_span_chars), but the gold it holds grows about as the square root of its length up to some
    100 tokens and not at all past that (CUAD dev: 0.2 items in sentences of 16 tokens, 0.45 at 64, 0.78
    at 128, 0.6-0.8 at 180-512)."""
    if not policy.whole_span_tokens or not doc.unit_group:
        return None
    size: dict[int, int] = {}
    for i, g in enumerate(doc.unit_group):
        if g != -1 and not doc.unit_deleted[i]:
            size[g] = size.get(g, 0) + doc.units[i].tokens
    cap = policy.whole_span_tokens

    def factor(tokens: int) -> float:
        share = cap / max(tokens, 1)
        return share if share <= 1 else math.sqrt(share)

    return [1.0 if g == -1 else factor(size.get(g, 1)) for g in doc.unit_group]


def _priors(doc: Document, policy: SelectionPolicy) -> list[float]:
    """section_lead, times long_span_factor where that is set."""
    lead = section_lead(doc, policy)
    factor = long_span_factor(doc, policy)
    return lead if factor is None else [a * b for a, b in zip(lead, factor)]


def _value(doc: Document, i: int, score: float, information_weight: float) -> float:
    """facts (rules) + information_weight x information (scorer) + boost"""
    return doc.unit_value[i] + information_weight * score + doc.unit_boost[i] / 100.0


def rank(doc: Document, gap_tokens: int = 0, policy: SelectionPolicy = DEFAULT_POLICY) -> list[int]:
    """Units by value per token, before any is taken (deleted units never appear).
    Density divides by the unit's tokens plus one gap marker, so crumbs do not win."""
    lead = _priors(doc, policy)

    def key(i: int) -> tuple:
        tokens = max(doc.units[i].tokens, 1) + gap_tokens
        return (-_value(doc, i, doc.scores.get(i, 0.0), policy.information_weight) * lead[i] / tokens, i)

    return sorted((i for i in range(len(doc.units)) if not doc.unit_deleted[i]), key=key)


def select(doc: Document, budget: int, gap_tokens: int, policy: SelectionPolicy = DEFAULT_POLICY) -> Selection:
    """Greedy fill by value per token, with diminishing returns for repeated content."""
    selection = Selection([False] * len(doc.units))
    fill_by_value(doc, budget, gap_tokens, selection, policy)
    return selection


def fill_by_value(doc: Document, budget: int, gap_tokens: int, selection: Selection,
                  policy: SelectionPolicy = DEFAULT_POLICY) -> None:
    """Lazy greedy: a unit's score counts only for terms not yet kept (novelty), so the extract
    covers more distinct content. Values only fall as units are taken, which makes lazy
    re-evaluation exact (the standard greedy for submodular coverage). A unit's cost is its
    tokens plus the gap marker it adds: none when it extends a kept run, minus one when it
    joins two; a taken unit's neighbours get cheaper, so they are queued again. (The ranking
    charges a whole marker per run; _Taker counts what a run really costs, see run_heads.)
    value = facts (rules) + information_weight x fresh information (scorer) + boost. A unit whose text
    (whitespace-normalised) is already kept adds no facts: a page footer's date or a repeated heading
    counts once (measured 30 Nov, 1/6: cuad 0.613 -> 0.616, tatqa 0.399 -> 0.406, zh sets unchanged)."""
    kept = selection.kept
    n = len(kept)
    terms = doc.unit_term_sets or None  # each unit's terms as a set (index_terms fills them with unit_terms)
    covered: set[str] = set()
    for i, k in enumerate(kept):
        if k and terms:
            covered |= terms[i]
    texts = [_said(doc, i) for i in range(n)]
    said = {texts[i] for i, k in enumerate(kept) if k}  # the texts kept: their facts count once
    density = _density(doc, policy, gap_tokens, covered, kept, texts, said)
    taker = _Taker(doc, budget, gap_tokens, selection)
    heap = [(-density(i), i) for i in range(len(doc.units)) if not doc.unit_deleted[i] and not kept[i]]
    heapq.heapify(heap)
    heappop, heappush = heapq.heappop, heapq.heappush
    quiet, ask_after = 0, _SETTLE_AFTER  # pops since the last take; when to ask _last_take (-1: asked)
    while heap:
        if quiet == ask_after:  # many pops in a row changed nothing: the budget is about full
            last = _last_takes(taker, heap, density, terms, covered, texts)
            if last is not None:
                for j in last:
                    taker.take(j)
                break
            quiet, ask_after = -1, 2 * ask_after  # takes go on: ask after the next take, later
        _, i = heappop(heap)
        if quiet >= 0:
            quiet += 1
        if kept[i]:
            continue
        current = density(i)
        if heap and current < -heap[0][0] - 1e-12:
            heappush(heap, (-current, i))  # stale: its terms were covered meanwhile
            continue
        taken = taker.take(i)
        if taken:
            quiet = 0
        for j in taken:
            if terms:
                covered |= terms[j]
            said.add(texts[j])
        for j in {k for t in taken for k in (t - 1, t + 1) if 0 <= k < n}:
            if not kept[j] and not doc.unit_deleted[j]:
                heappush(heap, (-density(j), j))  # cheaper now: it would extend a run


_SETTLE_AFTER = 1000  # pops without a take before fill_by_value asks _last_takes whether it is done
_MAX_LEFT = 32  # _last_takes orders at most this many units that can still be taken


def _last_takes(taker: _Taker, heap: list, density, terms, covered: set[str], texts: list[str]) -> list[int] | None:
    """The takes left to fill_by_value, in order, when it can tell them without popping on; else None.

    Takes are the only changes and a failed take changes nothing, so the next take is one of the
    units that fit now and hold an entry in the heap (a unit gets an entry only when a neighbour is
    taken). Such a unit, while its density stays what it is now, is taken at the first of its entries
    where it is not stale, else at its entry re-queued at that density; it is surely stale at an entry
    when the entry after it in the heap's order (still there then) is denser by more than 1e-12. When
    the moments of these units are known and in order (or their possible stretches of the heap's order
    do not overlap), they give the order of the takes. That holds if, along it (tried on copies of the
    taker), no unit comes to fit that is not still to come, and each unit's density stays put: 0
    stays 0 (coverage and joins only scale it), else no unit taken before it is its neighbour, says
    the same text (its facts then count 0) or covers one of its terms not yet covered. After a take,
    the units that may have come to fit are its neighbours (a unit's cost depends on its own and its
    group's neighbours), or any unit when the take freed budget (joining two runs can cost less than
    nothing) or opened the output (the first run's head costs no marker, see first_run_change)."""
    doc, n = taker.doc, len(taker.sel.kept)
    entries: dict[int, list[tuple]] = {}
    for entry in heap:
        entries.setdefault(entry[1], []).append(entry)
    fits = _fitting(taker, entries)
    if len(fits) > _MAX_LEFT or any(doc.unit_group and doc.unit_group[u] != -1 for u in fits):
        return None
    order = sorted(heap) if fits else []
    moments = []  # (earliest, latest, unit, density): where in the heap's order it can be taken
    for u in fits:
        d = density(u)
        last, when = (-d, u), None  # its entry if re-queued at d; where it is taken
        for e in sorted(entries[u]):
            if when is not None and e >= last:
                break  # re-queued: that entry comes out first
            if d >= -e[0] - 1e-12:
                when = (e, e)  # not stale there: taken
                break
            after = bisect_right(order, e)
            if not (after < len(order) and d < -order[after][0] - 1e-12):
                when = (e, last)  # stale or not, depending on entries re-queued before it
                break
            when = (last, last)  # surely stale: re-queued
        moments.append((*when, u, d))
    moments.sort()
    if any(a[1] >= b[0] for a, b in pairwise(moments)):
        return None
    trial, left, taken, candidates = _trial_copy(taker), [m[2] for m in moments], [], set(entries)
    dens = {m[2]: m[3] for m in moments}
    while left:
        t = left.pop(0)
        spent, first = trial.sel.estimated_tokens, trial.first
        if not trial.take(t):
            continue  # turned down when its turn comes; must not fit again (checked below)
        taken.append(t)
        for u in left:
            if dens[u] and (abs(u - t) == 1 or texts[u] == texts[t]
                            or (terms and not terms[t].isdisjoint(terms[u] - covered))):
                return None
        near = [j for j in (t - 1, t + 1) if 0 <= j < n and not doc.unit_deleted[j]]
        candidates.update(near)
        # A take that cost something leaves less budget and changes only its neighbours' costs (and
        # so their groups'): only they can have come to fit. One that freed budget or moved the
        # output's first run: any unit.
        anywhere = trial.sel.estimated_tokens < spent or trial.first != first
        now = _fitting(trial, candidates if anywhere else near)
        if not set(now) <= set(left):
            return None
    return taken


def _fitting(taker: _Taker, units) -> list[int]:
    """The units (sorted) whose take would succeed now (more than _MAX_LEFT: stops early)."""
    trial, out = _trial_copy(taker), []
    for j in sorted(units):
        if trial.take(j):
            out.append(j)
            if len(out) > _MAX_LEFT:
                break
            trial = _trial_copy(taker)
    return out


def _trial_copy(taker: _Taker) -> _Taker:
    """A deep copy of the taker to try takes on; the document, the groups and the per-unit tables
    (which take only reads) are shared, the selection's lists copied with list()."""
    sel = taker.sel
    return copy.deepcopy(taker, {id(taker.doc): taker.doc, id(taker.members): taker.members,
                                 id(taker.heads): taker.heads, id(taker.least): taker.least,
                                 id(sel.kept): list(sel.kept), id(sel.added): list(sel.added)})


def _said(doc: Document, i: int) -> str:
    """Unit i's text, whitespace-normalised: a page footer or a repeated line says the same each time."""
    return " ".join(doc.text[doc.units[i].start : doc.units[i].end].split())


def _density(doc: Document, policy: SelectionPolicy, gap_tokens: int, covered: set[str], kept: list[bool],
             texts: list[str], said: set[str]):
    """density(i): unit i's value per token given the terms kept so far (`covered`, which only grows) and
    the texts kept so far (`said`, which only grows: the facts of a unit whose `texts[i]` is there count 0):
    (facts + information_weight x fresh information + boost) x lead / cost, where cost is the unit's
    tokens and the gap marker it adds (none next to one kept unit, minus one between two).
    A whole marker, though a run's first unit does not spend the whitespace before it and the marker's
    last space may merge into it (run_heads, which _Taker counts): ranking by those true costs favours
    starting runs and kept less CUAD gold (all 0.601 against 0.607 at 1/6, 30 Nov; e3c 0.317 against 0.314)."""
    n = len(doc.units)
    terms = doc.unit_term_sets or None
    term_weight = doc.term_weight.__getitem__
    info_weight = policy.information_weight
    facts = doc.unit_value
    boost = [b / 100.0 for b in doc.unit_boost]
    lead = _priors(doc, policy)
    tokens = [max(u.tokens, 1) for u in doc.units]
    scores = [doc.scores.get(i, 0.0) for i in range(n)]
    # Per unit, what its novelty was last worked out from: its terms still uncovered then, how many
    # terms were covered then, and their summed weight (None: all of its terms, factor 1).
    uncovered: list[frozenset[str] | None] = [None] * n
    seen_covered = [0] * n
    fresh_weight: list[float | None] = [None] * n
    totals: list[float | None] = [None] * n  # a unit's total term weight does not change: summed once
    fsum = math.fsum

    def density(i: int) -> float:
        score = scores[i]
        if terms and score > 0 and covered and terms[i]:
            # Coverage only grows, so the terms still uncovered shrink; the fresh weight changes only
            # when they do. fsum is exact: a set's order (str hashing is seeded per process) cannot tip
            # a tie, and a sum over fewer terms is the same as over all.
            if seen_covered[i] != len(covered):
                seen_covered[i] = len(covered)
                left = uncovered[i]
                if left is None:
                    left = terms[i]
                now = left - covered
                if len(now) != len(left):
                    uncovered[i] = now
                    fresh_weight[i] = fsum(map(term_weight, now))
            fresh = fresh_weight[i]
            if fresh is not None:
                total = totals[i]
                if total is None:
                    total = totals[i] = fsum(map(term_weight, terms[i]))
                score *= fresh / total
        joins = (i > 0 and kept[i - 1]) + (i + 1 < n and kept[i + 1])
        cost = max(tokens[i] + gap_tokens * (1 - joins), 1)
        fact = facts[i] if texts[i] not in said else 0.0
        return (fact + info_weight * score + boost[i]) * lead[i] / cost  # _value's sum order

    return density


class _Taker:
    """Adds units (with their groups) to a selection while they fit the budget."""

    def __init__(self, doc: Document, budget: int, gap_tokens: int, selection: Selection) -> None:
        self.doc, self.budget, self.gap, self.sel = doc, budget, gap_tokens, selection
        self.members: dict[int, list[int]] = {}
        for i, g in enumerate(doc.unit_group or []):
            if g != -1 and not doc.unit_deleted[i]:
                self.members.setdefault(g, []).append(i)
        self.heads = heads = run_heads(doc, gap_tokens)
        self.first = selection.kept.index(True) if any(selection.kept) else None  # the first kept unit
        # The least a single unit can add: its tokens and its run start (or, as the output's first unit, its
        # tokens less its edge; before the first kept unit, with that unit's merge) less what the kept unit
        # after it would no longer cost by starting a run.
        most_merge = max((u.marker_merge for u in doc.units), default=0)
        n = len(heads)
        self.least = [u.tokens + min(0, heads[i], -u.edge, gap_tokens - u.edge - most_merge)
                      - max(heads[i + 1] if i + 1 < n else 0, 0) for i, u in enumerate(doc.units)]

    def take(self, i: int) -> list[int]:
        """Keep unit i (and its group) if it fits: the units' tokens, and for each run the gap marker before
        it less what its first unit does not spend (run_heads), with no marker before the first run."""
        kept, doc = self.sel.kept, self.doc
        if kept[i]:
            return []
        group = doc.unit_group[i] if doc.unit_group else -1
        if group == -1 and self.sel.estimated_tokens + self.least[i] > self.budget:
            return []  # cannot fit, whatever it joins
        n, heads = len(kept), self.heads
        take = [j for j in self.members[group] if not kept[j]] if group != -1 else [i]
        cost = 0
        for j in take:  # add one by one on the live flags to count run starts; undone if it does not fit
            cost += doc.units[j].tokens
            if not (j > 0 and kept[j - 1]):
                cost += heads[j]  # j starts a run
            if j + 1 < n and kept[j + 1]:
                cost -= heads[j + 1]  # the run after j no longer starts there
            kept[j] = True
        first = min(take) if self.first is None else min(self.first, *take)
        if first != self.first:
            cost += first_run_change(doc, self.gap, first)
            if self.first is not None:
                cost -= first_run_change(doc, self.gap, self.first)
        if self.sel.estimated_tokens + cost <= self.budget:
            self.sel.estimated_tokens += cost
            self.sel.added.extend(take)
            self.first = first
            return take
        for j in take:
            kept[j] = False
        return []


def fill(doc: Document, order: list[int], budget: int, gap_tokens: int, selection: Selection) -> None:
    """Take units in `order` while they fit. A unit in a group (a clause or sentence a rule
    asked to keep whole) comes with its group."""
    taker = _Taker(doc, budget, gap_tokens, selection)
    for i in order:
        taker.take(i)


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
