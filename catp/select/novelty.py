"""Novelty for the greedy: the share of a unit's term weight that the kept units do not cover yet, kept up to
date as terms are covered, in time linear in the terms' occurrences (issue 25, point 14).

The weights are summed exactly, as integers: every weight is a binary fraction, so times 2^k (k the finest
weight's binary digits) it is an integer. A sum of those integers, divided back by 2^k, is the exact sum
correctly rounded (int / int is), which is math.fsum's result over the same weights: a set's order (str
hashing is seeded per process) and the order in which terms are covered cannot tip a tie."""

from __future__ import annotations

from collections import defaultdict
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
        self.term_sets = term_sets
        self.slot_of: dict[int, int] = {}  # id of a term set -> its entry (units with the same text share a set)
        self.slot = [-1] * len(term_sets)  # per unit, its term set's entry once asked for
        self.sets: list[frozenset[str]] = []
        denominators = {w.as_integer_ratio() for w in set(term_weight.values())}
        self.scale = max((d for _, d in denominators), default=1)  # a power of two
        exact = {n / d: n * (self.scale // d) for n, d in denominators}  # each weight as it is, exactly
        self.weight = dict(zip(term_weight, map(exact.__getitem__, term_weight.values())))  # term -> weight x scale
        # per entry: the weight of its terms not covered, of all its terms, and 1 once some are covered
        self.fresh: list[int] = []
        self.total: list[int] = []
        self.touched = bytearray()
        self.holders: defaultdict[str, list[int]] = defaultdict(list)  # uncovered term -> the entries that hold it
        self.covered: set[str] = set()
        self.cover(covered)

    def share(self, i: int) -> float:
        slot = self.slot[i]
        if slot == -1:
            slot = self.slot[i] = self._entry(self.term_sets[i])
        if not self.touched[slot]:
            return 1.0
        scale = self.scale
        return (self.fresh[slot] / scale) / (self.total[slot] / scale)  # math.fsum of each, then their quotient

    def _entry(self, terms: frozenset[str]) -> int:
        """The entry of a term set, made the first time it is asked for."""
        slot = self.slot_of.get(id(terms))
        if slot is not None:
            return slot
        slot = self.slot_of[id(terms)] = len(self.sets)
        self.sets.append(terms)  # (also keeps the set alive, so that its id stays its own)
        weight = self.weight.__getitem__
        total = sum(map(weight, terms))
        now = terms - self.covered
        self.total.append(total)
        self.fresh.append(total if len(now) == len(terms) else sum(map(weight, now)))
        self.touched.append(len(now) != len(terms))
        holders = self.holders
        for term in now:
            holders[term].append(slot)
        return slot

    def cover(self, terms: Iterable[str]) -> None:
        covered, holders, weight, fresh, touched = self.covered, self.holders, self.weight, self.fresh, self.touched
        for term in terms:
            if term in covered:
                continue
            covered.add(term)
            slots = holders.pop(term, None)
            if slots is not None:
                w = weight[term]
                for slot in slots:
                    fresh[slot] -= w
                    touched[slot] = 1
