"""Fit the budget: greedy by value per token (protected facts + information, novelty, lead prior)."""

from __future__ import annotations

import heapq
import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field

from catp.annotate import fact_weight
from catp.document import Action, Document, UnitKind
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
    The document's own opening (title, parties, dates) gets doc_lead_weight on top, over doc_lead_share of
    its units or, where that is more, its first doc_lead_tokens tokens."""
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
    reach = n * policy.doc_lead_share  # units the document's lead covers
    if policy.doc_lead_tokens:
        seen = covered = 0
        while covered < n and seen < policy.doc_lead_tokens:
            seen += doc.units[covered].tokens
            covered += 1
        reach = max(reach, covered)
    for i in range(n):
        factor[i] *= 1.0 + policy.doc_lead_weight * max(0.0, 1.0 - i / max(reach, 1))
    if (policy.table_lead_weight or policy.table_tail_weight or policy.table_word_row_weight != 1.0
            or policy.table_blank_row_weight != 1.0):
        _table_lead(doc, policy, factor)
    if policy.section_decay_weight:
        _section_decay(doc, policy, factor)
    return factor


def _section_decay(doc: Document, policy: SelectionPolicy, factor: list[float]) -> None:
    """Within a section, a unit weighs (1 + t / section_decay_tokens) ** -section_decay_weight less, where t
    is the tokens of the section's units that rank above it (value x lead per token, before any take): a
    section says most of what it holds in its best units, so a section's tenth unit should not beat
    another section's first. TAT-QA dev excerpts hold about 8.5 gold items each whatever their length."""
    weight, scale = policy.section_decay_weight, policy.section_decay_tokens
    intros = _table_intros(doc, policy.table_intro_tokens) if policy.table_intro_tokens else set()
    for a, b in sections(doc):
        density = {i: _value(doc, i, doc.scores.get(i, 0.0), policy.information_weight) * factor[i]
                   / max(doc.units[i].tokens, 1) for i in range(a, b) if not doc.unit_deleted[i]}
        better = 0
        for i in sorted(density, key=lambda i: (-density[i], i)):
            if i not in intros:
                factor[i] *= (1.0 + better / scale) ** -weight
            better += doc.units[i].tokens


def _table_intros(doc: Document, max_tokens: int) -> set[int]:
    """The units, not table rows, that a rule of category 'table' marks, on a line of at most max_tokens
    tokens: a table's title or intro ('... were as follows (in thousands):'). On TAT-QA dev such short
    lines hold 3-4 gold items per 100 tokens (most of them whole evidence paragraphs), as many as a
    table's first rows; longer ones 1-1.5, like other prose."""
    table_rules = {s.rule_id for s in doc.spans if s.category == "table"}
    units, text = doc.units, doc.text
    out: set[int] = set()
    line: list[int] = []  # the units of the current line
    for i in range(len(units) + 1):
        if i == len(units) or (line and "\n" in text[units[i - 1].end : units[i].start]):
            if sum(units[j].tokens for j in line) <= max_tokens:
                out.update(j for j in line if units[j].kind is not UnitKind.TABLE_ROW
                           and not table_rules.isdisjoint(doc.unit_rules[j]))
            line = []
        line.append(i)
    return out


def _table_lead(doc: Document, policy: SelectionPolicy, factor: list[float]) -> None:
    """1 + table_lead_weight at a table's first data row, falling to 1 at its table_lead_rows-th, and
    1 + table_tail_weight at its last when that is past the lead. Header rows (_header_row) get no lead
    and are not counted: on TAT-QA dev they hold 0.6 gold items per 100 tokens, the first data rows 4.3
    (tatqa 0.410 -> 0.419 at 1/6, 30 Nov). Past the third data row, a table's last row (its total, its
    closing balance) holds 2.3, the rows before it 1.0-1.6. A data row with words in its value cells
    weighs table_word_row_weight as much (_word_row), one with a blank cell table_blank_row_weight (_blank_row)."""
    text, units = doc.text, doc.units
    for rows in _data_rows(doc):
        for row, i in enumerate(rows):
            factor[i] *= 1.0 + policy.table_lead_weight * max(0.0, 1.0 - row / policy.table_lead_rows)
            row_text = text[units[i].start : units[i].end]
            if policy.table_word_row_weight != 1.0 and _word_row(row_text):
                factor[i] *= policy.table_word_row_weight
            if policy.table_blank_row_weight != 1.0 and _blank_row(row_text):
                factor[i] *= policy.table_blank_row_weight
        if len(rows) > policy.table_lead_rows:  # past the lead
            factor[rows[-1]] *= 1.0 + policy.table_tail_weight


def _data_rows(doc: Document) -> list[list[int]]:
    """Per table (a run of table rows), its data rows: those that are not _header_row."""
    tables: list[list[int]] = []
    rows: list[int] = []
    for i, unit in enumerate(doc.units):
        if unit.kind is not UnitKind.TABLE_ROW:
            if rows:
                tables.append(rows)
            rows = []
        elif not _header_row(doc.text[unit.start : unit.end]):
            rows.append(i)
    if rows:
        tables.append(rows)
    return tables


_CELL_SEP = re.compile(r"[|\t]")
_DIGIT = re.compile(r"\d")


_WORD = re.compile(r"[^\W\d_]{3,}")


def _word_row(row: str) -> bool:
    """A row with a word in a cell after its label: names, titles and dates ('Leigh R Fox | 47 | Chief
    Financial Officer', 'Vested | 2,000 | April 30, 2019'), or column titles with a digit ('Current assets |
    As Reported | Topic 606'). On TAT-QA dev they hold 1.3-1.6 gold items per 100 tokens, the rows of
    figures 2.5-2.7 (each half of the documents by id), and a table's first data rows 0.7-1.0 against 4.5-5.2."""
    return any(_WORD.search(cell) for cell in _CELL_SEP.split(row)[1:])


_BLANK = re.compile(r"\s*(?:[$€£¥]?\s*[-–—]*|n/?a|nm)\s*", re.IGNORECASE)


def _blank_row(row: str) -> bool:
    """A row with a blank or dash cell after its label ('Unremitted earnings | — | — | 2,127', a
    percentage sub-row 'Percentage of revenue | 12.7% | 12.6% |  | '): it says less than a full row. On
    TAT-QA dev such rows hold 0.6 times the gold per token of the others past a table's second data row
    (each half of the documents by id)."""
    return any(_BLANK.fullmatch(cell) for cell in _CELL_SEP.split(row)[1:])


# an amount, not a year: 1,234 / 12.5 / 336 / 12345 / $(1,234) / 12%
_AMOUNT = re.compile(r"[$€£¥]?\s?\(?[-–]?[$€£¥]?\s?(?:\d{1,3}(?:,\d{3})+|\d+\.\d+|\d{1,3}|\d{5,})\s?\)?%?")


def _header_row(row: str) -> bool:
    """A row that names columns or a group rather than holding figures: its first cell is empty and no
    other cell is an amount (' | 2019 | 2018', ' | May 26, 2019 | '), or no other cell holds a digit
    ('Current liabilities |  |'). A row of amounts with no label (' | $12,455 | $18,418') is a table's
    total line: on TAT-QA dev 0.4754 -> 0.4802 at 1/6 once counted as data."""
    label, *cells = _CELL_SEP.split(row, maxsplit=1)
    if not cells:
        return False
    if not label.strip():
        return not any(_AMOUNT.fullmatch(cell.strip()) for cell in _CELL_SEP.split(cells[0]))
    return not _DIGIT.search(cells[0])


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
        holders[f].append(u)
        spans.append((u, f, fact_weight(span.priority)))
    facts = list(doc.unit_value)
    held: list[list[tuple[int, float]]] = [[] for _ in doc.units]
    for u, f, weight in spans:
        counted = weight * len(holders[f]) ** exponent
        facts[u] += counted - weight
        held[u].append((f, counted))
    return facts, held, holders


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
    texts = _said_texts(doc)
    said = {texts[i] for i, k in enumerate(kept) if k}  # the texts kept: their facts count once
    density = _density(doc, policy, gap_tokens, covered, kept, texts, said)
    taker = _Taker(doc, budget, gap_tokens, selection)
    deleted = doc.unit_deleted
    units = [i for i in range(n) if not deleted[i] and not kept[i]]
    # The queue, (-density, unit) entries popped least first, is two lists: the first entries sorted once
    # (popped from the end) and a heap of the entries queued again. Popping the lesser of their two heads
    # gives the order of one heap; at 1M tokens a heap of all units missed the caches at every level.
    ranked = density.keys(units) or [(-density(i), i) for i in units]
    ranked.sort(reverse=True)
    heap: list[tuple[float, int]] = []
    heappop, heappush = heapq.heappop, heapq.heappush
    aside = _Aside(taker)
    quiet, settle_after = 0, _SETTLE_AFTER  # pops since the last take; when to set aside what cannot fit
    while ranked or heap:
        if quiet == settle_after:  # many pops in a row took nothing: the budget is about full
            ranked, heap = sorted(aside.unfit_of(ranked + heap), reverse=True), []
            quiet, settle_after = 0, 2 * settle_after
            continue
        if heap and (not ranked or heap[0] < ranked[-1]):
            _, i = heappop(heap)
        else:
            _, i = ranked.pop()
        quiet += 1
        if kept[i]:
            continue
        current = density(i)
        if heap:
            top = heap[0][0] if not ranked or heap[0][0] < ranked[-1][0] else ranked[-1][0]
        else:
            top = ranked[-1][0] if ranked else None
        if top is not None and current < -top - 1e-12:
            heappush(heap, (-current, i))  # stale: its terms were covered meanwhile
            continue
        spent, first = selection.estimated_tokens, taker.first
        taken = taker.take(i)
        if not taken:
            aside.add(i)
            continue
        quiet = 0
        for j in taken:
            if terms:
                covered |= terms[j]
            said.add(texts[j])
            density.took(j)
        near = {k for t in taken for k in (t - 1, t + 1) if 0 <= k < n and not kept[k] and not doc.unit_deleted[k]}
        back = aside.after_take(near, first, spent)
        for j in sorted(near | back):
            heappush(heap, (-density(j), j))  # cheaper now (it would extend a run), or it may fit again


_SETTLE_AFTER = 1000  # pops without a take before fill_by_value sets aside the units that cannot fit (-1: never)


class _Aside:
    """The units fill_by_value took out of its heap because they could not fit, and when they come back.

    A unit's cost (_Taker.cost) falls only when a neighbour of it or of its group is taken or when the output's
    first run moves; the budget left grows only when a take costs less than nothing (a join). after_take
    returns the units that may fit again then, so every take stays at least as dense as any unit that fits."""

    def __init__(self, taker: _Taker) -> None:
        self.taker = taker
        self.out = [False] * len(taker.sel.kept)
        self.by_cost: list[tuple[int, int]] = []  # (a lower bound of its cost, unit); stale entries skipped

    def add(self, u: int, cost: int | None = None) -> None:
        if cost is None:
            found = self.taker.cost(u)
            if found is None:
                return  # kept
            cost = found[0]
        self.out[u] = True
        heapq.heappush(self.by_cost, (cost, u))

    def unfit_of(self, heap: list) -> list:
        """The queue's entries without those of the units that cannot fit the budget left now (set aside)."""
        taker, out, by_cost = self.taker, self.out, self.by_cost
        left, kept, keep = taker.budget - taker.sel.estimated_tokens, taker.sel.kept, []
        group, least, cost_of = taker.group, taker.least, taker.cost
        for entry in heap:
            u = entry[1]
            if kept[u] or out[u]:
                continue
            if group[u] == -1 and least[u] > left:  # taker.surely_unfit(u)
                cost = least[u]
            else:
                cost = cost_of(u)[0]
                if cost <= left:
                    keep.append(entry)
                    continue
            out[u] = True  # self.add(u, cost), the heap put in order once below
            by_cost.append((cost, u))
        heapq.heapify(by_cost)  # pops in the same order as pushing each: (cost, unit) pairs are ordered
        return keep

    def after_take(self, near: set[int], first: int | None, spent: int) -> set[int]:
        """The units set aside that may fit after a take: its neighbours and their groups' members, those
        whose cost fits a budget left that grew, and when the first run moved, those before it."""
        taker, out, by_cost = self.taker, self.out, self.by_cost
        back = set()
        for j in near:
            back.add(j)
            group = taker.group[j]
            if group != -1:
                back.update(m for m in taker.members[group] if out[m])
        if taker.first != first:  # units before the old first run: their first_run_change changed
            before = len(out) if first is None else first
            back.update(u for _, u in by_cost if out[u] and u < before)
        left = taker.budget - taker.sel.estimated_tokens
        if taker.sel.estimated_tokens < spent:
            while by_cost and by_cost[0][0] <= left:
                _, u = heapq.heappop(by_cost)
                if out[u]:
                    back.add(u)
        for u in back:
            out[u] = False
        kept = taker.sel.kept
        return {u for u in back if not kept[u]}


def _said_texts(doc: Document) -> list[str]:
    """Each unit's text, whitespace-normalised: a page footer or a repeated line says the same each time."""
    text = doc.text
    return [" ".join(text[u.start : u.end].split()) for u in doc.units]


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
    fact_now = None
    if policy.distinct_facts is not None:
        facts, held, holders = distinct_facts(doc, policy.distinct_facts)
        fact_said = [False] * len(holders)  # only grows, like `kept` (density.took marks them)
        for f, units in enumerate(holders):
            fact_said[f] = any(kept[u] for u in units)

        def fact_now(i: int) -> float:
            """Unit i's facts less its distinct facts that a kept unit already holds."""
            value = facts[i]
            for f, weight in held[i]:
                if fact_said[f]:
                    value -= weight
            return max(value, 0.0)

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
        if texts[i] in said:
            fact = 0.0
        else:
            fact = facts[i] if fact_now is None else fact_now(i)
        return (fact + info_weight * score + boost[i]) * lead[i] / cost  # _value's sum order

    def keys(units: list[int]) -> list[tuple[float, int]] | None:
        """(-density(i), i) for each unit, worked out in one pass with density's sums while nothing is kept
        (no novelty, no joins, no facts said) and facts are not counted once each (distinct_facts);
        else None. (It does not call density: a reference back would make a cycle that only the cyclic
        GC frees, and every prune's select state would stay in memory until then.)"""
        if covered or said or fact_now is not None or any(kept):
            return None
        return [(-((facts[i] + info_weight * scores[i] + boost[i]) * lead[i] / max(tokens[i] + gap_tokens, 1)), i)
                for i in units]

    def took(j: int) -> None:
        """Unit j is kept: its distinct facts are said."""
        if fact_now is not None:
            for f, _ in held[j]:
                fact_said[f] = True

    density.keys, density.took = keys, took
    return density


class _Taker:
    """Adds units (with their groups) to a selection while they fit the budget."""

    def __init__(self, doc: Document, budget: int, gap_tokens: int, selection: Selection) -> None:
        self.doc, self.budget, self.gap, self.sel = doc, budget, gap_tokens, selection
        self.group = doc.unit_group or [-1] * len(doc.units)  # per unit, its group (kept together), -1: none
        self.members: dict[int, list[int]] = {}
        for i, g in enumerate(self.group):
            if g != -1 and not doc.unit_deleted[i]:
                self.members.setdefault(g, []).append(i)
        units = doc.units
        unfit = [g for g, ms in self.members.items() if sum(units[j].tokens for j in ms) > budget]
        if unfit:  # a span that can never fit whole is taken unit by unit
            self.group = list(self.group)
            for g in unfit:
                for j in self.members.pop(g):
                    self.group[j] = -1
        self.heads = heads = run_heads(doc, gap_tokens)
        self.first = selection.kept.index(True) if any(selection.kept) else None  # the first kept unit
        # The least a single unit can add: its tokens and its run start (or, as the output's first unit, its
        # tokens less its edge; before the first kept unit, with that unit's merge) less what the kept unit
        # after it would no longer cost by starting a run.
        most_merge = max((u.marker_merge for u in doc.units), default=0)
        n = len(heads)
        self.least = [u.tokens + min(0, heads[i], -u.edge, gap_tokens - u.edge - most_merge)
                      - max(heads[i + 1] if i + 1 < n else 0, 0) for i, u in enumerate(doc.units)]

    def cost(self, i: int) -> tuple[int, list[int]] | None:
        """What keeping unit i (and its group) would add to the estimate now, and the units it adds; None when
        it is kept. The units' tokens, and for each run the gap marker before it less what its first unit
        does not spend (run_heads), with no marker before the first run."""
        kept, doc = self.sel.kept, self.doc
        if kept[i]:
            return None
        group = self.group[i]
        n, heads, units = len(kept), self.heads, doc.units
        take = [j for j in self.members[group] if not kept[j]] if group != -1 else [i]
        cost, previous = 0, -2
        for j in take:  # ascending: a member right after another extends its run
            cost += units[j].tokens
            if not (j > 0 and (kept[j - 1] or previous == j - 1)):
                cost += heads[j]  # j starts a run
            if j + 1 < n and kept[j + 1]:
                cost -= heads[j + 1]  # the run after j no longer starts there
            previous = j
        if self.first is None or take[0] < self.first:  # it opens the output
            cost += first_run_change(doc, self.gap, take[0])
            if self.first is not None:
                cost -= first_run_change(doc, self.gap, self.first)
        return cost, take

    def surely_unfit(self, i: int) -> bool:
        """Unit i cannot fit, whatever it joins: even its least cost is over the budget left (not bounded
        for a unit in a group, whose cost is its group's)."""
        return self.group[i] == -1 and self.sel.estimated_tokens + self.least[i] > self.budget

    def take(self, i: int) -> list[int]:
        """Keep unit i (and its group) if it fits; the units added."""
        if self.surely_unfit(i):
            return []
        return self._keep(self.cost(i))

    def _keep(self, found: tuple[int, list[int]] | None) -> list[int]:
        """Keep the units of a cost() if they fit; the units added."""
        if found is None or self.sel.estimated_tokens + found[0] > self.budget:
            return []
        cost, take = found
        for j in take:
            self.sel.kept[j] = True
        self.sel.estimated_tokens += cost
        self.sel.added.extend(take)
        self.first = take[0] if self.first is None else min(self.first, take[0])
        return take


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
