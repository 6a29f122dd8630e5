"""The greedy fill: units by value per token (ranking.py) while they fit (budget.py), lazily re-evaluated,
with units that cannot fit set aside (`Aside`)."""

from __future__ import annotations

import heapq

from catp.document import Document
from catp.select.policy import SelectionPolicy
from catp.select.budget import Selection, Taker
from catp.select.coverage import cover
from catp.select.ranking import make_density, said_texts, unit_density, weighted
from catp.select.value import DEFAULT_POLICY


def select(doc: Document, budget: int, gap_tokens: int, policy: SelectionPolicy = DEFAULT_POLICY,
           factor: list[float] | None = None) -> Selection:
    """The units to keep within `budget` tokens: the key sections covered first (coverage.cover, when the
    policy sets coverage_share), then fill_by_value, its densities times `factor` when given."""
    selection = Selection([False] * len(doc.units))
    if policy.coverage_share and doc.key_sections:
        cover(doc, budget, gap_tokens, selection, policy, unit_density(doc, gap_tokens, policy))
    make = make_density if factor is None else weighted(make_density, factor)
    fill_by_value(doc, budget, gap_tokens, selection, policy, make=make)
    return selection


def fill_by_value(doc: Document, budget: int, gap_tokens: int, selection: Selection,
                  policy: SelectionPolicy = DEFAULT_POLICY, make=make_density) -> None:
    """Lazy greedy: a unit's score counts only for terms not yet kept (novelty), so the extract
    covers more distinct content. Values only fall as units are taken, which makes lazy
    re-evaluation exact (the standard greedy for submodular coverage). A unit's cost is its
    tokens plus the gap marker it adds: none when it extends a kept run, minus one when it
    joins two; a taken unit's neighbours get cheaper, so they are queued again. (The ranking
    charges a whole marker per run; Taker counts what a run really costs, see run_heads.)
    value = facts (rules) + information_weight x fresh information (scorer) + boost. A unit whose text
    (whitespace-normalised) is already kept adds no facts: a page footer's date or a repeated heading
    counts once (the figures: docs/journal/2026-11-evals-rounds.md). `make` builds the density, as make_density
    does (catp.select.keep gives the keep-model's)."""
    kept = selection.kept
    n = len(kept)
    terms = doc.columns.term_sets or None  # each unit's terms as a set (index_terms fills them with unit_terms)
    covered: set[str] = set()  # the terms kept before (density.took covers more)
    for i, k in enumerate(kept):
        if k and terms:
            covered |= terms[i]
    texts = said_texts(doc)
    said = {texts[i] for i, k in enumerate(kept) if k}  # the texts kept: their facts count once
    density = make(doc, policy, gap_tokens, covered, kept, texts, said)
    taker = Taker(doc, budget, gap_tokens, selection)
    deleted = doc.columns.deleted
    units = [i for i in range(n) if not deleted[i] and not kept[i]]
    # The queue, (-density, unit) entries popped least first, is two lists: the first entries sorted once
    # (popped from the end) and a heap of the entries queued again. Popping the lesser of their two heads
    # gives the order of one heap; at 1M tokens a heap of all units missed the caches at every level.
    ranked = density.keys(units) or [(-density(i), i) for i in units]
    ranked.sort(reverse=True)
    heap: list[tuple[float, int]] = []
    heappop, heappush = heapq.heappop, heapq.heappush
    aside = Aside(taker)
    quiet, settle_after = 0, SETTLE_AFTER  # pops since the last take; when to set aside what cannot fit
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
            said.add(texts[j])
            density.took(j)  # its terms are covered
        near = {k for t in taken for k in (t - 1, t + 1) if 0 <= k < n and not kept[k] and not deleted[k]}
        back = aside.after_take(near, first, spent)
        for j in sorted(near | back):
            heappush(heap, (-density(j), j))  # cheaper now (it would extend a run), or it may fit again


SETTLE_AFTER = 1000  # pops without a take before fill_by_value sets aside the units that cannot fit (-1: never)


class Aside:
    """The units fill_by_value took out of its heap because they could not fit, and when they come back.

    A unit's cost (Taker.cost) falls only when a neighbour of it or of its group is taken or when the output's
    first run moves; the budget left grows only when a take costs less than nothing (a join). after_take
    returns the units that may fit again then, so every take stays at least as dense as any unit that fits."""

    def __init__(self, taker: Taker) -> None:
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
