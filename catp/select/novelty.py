"""Novelty for the greedy: the share of a unit's term weight that the kept units do not cover yet, kept up to
date as terms are covered, in time linear in the terms' occurrences (issue 25, point 14).

The weights are summed exactly, as integers: every weight is a binary fraction, so times 2^k (k the finest
weight's binary digits) it is an integer. A sum of those integers, divided back by 2^k, is the exact sum
correctly rounded (int / int is), which is math.fsum's result over the same weights: a set's order (str
hashing is seeded per process) and the order in which terms are covered cannot tip a tie."""

from __future__ import annotations

from collections.abc import Iterable


class Novelty:
    """share(i): the weight of unit i's terms not covered yet over the weight of all of them (1.0 while none
    is covered); cover(terms): terms are kept from now on (coverage only grows).

    A unit's uncovered weight is worked out the first time it is asked for (over its terms less those covered
    then), and from then on lowered once per term when that term is covered, through an index term -> the
    units asked for that hold it, which is emptied as the term is covered. Units with one term set (the same
    text: headings, footers) share one entry. So every (unit, term) pair costs at most two steps."""

    def __init__(self, term_sets: list[frozenset[str]], term_weight: dict[str, float],
                 covered: Iterable[str] = ()) -> None:
        slot_of: dict[int, int] = {}  # id of a term set -> its entry (units with the same text share a set)
        self.sets: list[frozenset[str]] = []
        self.slot: list[int] = []  # per unit, its term set's entry
        for terms in term_sets:
            slot = slot_of.get(id(terms))
            if slot is None:
                slot = slot_of[id(terms)] = len(self.sets)
                self.sets.append(terms)
            self.slot.append(slot)
        denominators = {w.as_integer_ratio() for w in set(term_weight.values())}
        self.scale = max((d for _, d in denominators), default=1)  # a power of two
        exact = {n / d: n * (self.scale // d) for n, d in denominators}  # each weight as it is, exactly
        self.weight = {t: exact[w] for t, w in term_weight.items()}  # term -> its weight x scale
        # per entry, None until asked for: (weight of its terms not covered, weight of all its terms)
        self.fresh: list[int | None] = [None] * len(self.sets)
        self.total: list[int] = [0] * len(self.sets)
        self.touched = bytearray(len(self.sets))  # 1: some of its terms are covered
        self.holders: dict[str, list[int]] = {}  # uncovered term -> the entries asked for that hold it
        self.covered: set[str] = set()
        self.cover(covered)

    def share(self, i: int) -> float:
        slot = self.slot[i]
        fresh = self.fresh[slot]
        if fresh is None:
            fresh = self._first(slot)
        if not self.touched[slot]:
            return 1.0
        scale = self.scale
        return (fresh / scale) / (self.total[slot] / scale)  # math.fsum of each, then their quotient

    def _first(self, slot: int) -> int:
        weight, covered, holders = self.weight, self.covered, self.holders
        total = fresh = 0
        for term in self.sets[slot]:
            w = weight[term]
            total += w
            if term in covered:
                self.touched[slot] = 1
            else:
                fresh += w
                found = holders.get(term)
                if found is None:
                    holders[term] = [slot]
                else:
                    found.append(slot)
        self.total[slot], self.fresh[slot] = total, fresh
        return fresh

    def cover(self, terms: Iterable[str]) -> None:
        covered, holders, weight, fresh, touched = self.covered, self.holders, self.weight, self.fresh, self.touched
        for term in terms:
            if term in covered:
                continue
            covered.add(term)
            slots = holders.pop(term, None)
            if slots:
                w = weight[term]
                for slot in slots:
                    fresh[slot] -= w
                    touched[slot] = 1
