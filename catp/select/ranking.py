"""Value per token (value.py's worth x priors.py's factors / cost): `rank` orders the units before any take;
`make_density` gives the greedy a unit's density now, as terms and texts are kept (novelty) and
neighbours are kept (no gap marker)."""

from __future__ import annotations

from catp.document import Document
from catp.select.novelty import Novelty
from catp.select.policy import SelectionPolicy
from catp.select.priors import unit_priors
from catp.select.value import DEFAULT_POLICY, distinct_facts, value_of


def rank(doc: Document, gap_tokens: int = 0, policy: SelectionPolicy = DEFAULT_POLICY) -> list[int]:
    """Units by value per token, before any is taken (deleted units never appear).
    Density divides by the unit's tokens plus one gap marker, so crumbs do not win."""
    lead = unit_priors(doc, policy)

    units, deleted = doc.units, doc.columns.deleted

    def key(i: int) -> tuple:
        tokens = max(units[i].tokens, 1) + gap_tokens
        return (-value_of(doc, i, doc.scores.get(i, 0.0), policy.information_weight) * lead[i] / tokens, i)

    return sorted((i for i in range(len(units)) if not deleted[i]), key=key)


def unit_density(doc: Document, gap_tokens: int = 0, policy: SelectionPolicy = DEFAULT_POLICY) -> list[float]:
    """Per unit, rank's value per token before any take (0 for deleted units)."""
    lead = unit_priors(doc, policy)
    deleted = doc.columns.deleted
    return [0.0 if deleted[i] else value_of(doc, i, doc.scores.get(i, 0.0), policy.information_weight)
            * lead[i] / (max(u.tokens, 1) + gap_tokens) for i, u in enumerate(doc.units)]


def said_texts(doc: Document) -> list[str]:
    """Each unit's text, whitespace-normalised: a page footer or a repeated line says the same each time."""
    text = doc.text
    return [" ".join(text[u.start : u.end].split()) for u in doc.units]


def make_density(doc: Document, policy: SelectionPolicy, gap_tokens: int, covered: set[str], kept: list[bool],
                 texts: list[str], said: set[str]):
    """density(i): unit i's value per token given the terms kept so far (`covered` before, then those of
    each unit passed to density.took: novelty.py) and the texts kept so far (`said`, which only grows: the
    facts of a unit whose `texts[i]` is there count 0):
    (facts + information_weight x fresh information + boost) x lead / cost, where lead is unit_priors and
    cost is the unit's tokens and the gap marker it adds (none next to one kept unit, minus one between
    two). Where policy.distinct_facts is set, a distinct fact a kept unit holds counts 0 too.
    The cost charges a whole marker, though a run's first unit does not spend the whitespace before it and
    the marker's last space may merge into it (run_heads, which Taker counts): ranking by those true costs
    favours starting runs and kept less CUAD gold (the figures: docs/journal/2026-11-evals-rounds.md)."""
    n = len(doc.units)
    terms = doc.columns.term_sets or None
    info_weight = policy.information_weight
    facts = doc.columns.value
    boost = [b / 100.0 for b in doc.columns.boost]
    lead = unit_priors(doc, policy)
    tokens = [max(u.tokens, 1) for u in doc.units]
    scores = [doc.scores.get(i, 0.0) for i in range(n)]
    novelty = Novelty(terms, doc.term_weight, covered) if terms else None
    fresh_share = novelty.share if novelty else None
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
        if fresh_share is not None and score > 0:
            score *= fresh_share(i)
        joins = (i > 0 and kept[i - 1]) + (i + 1 < n and kept[i + 1])
        cost = max(tokens[i] + gap_tokens * (1 - joins), 1)
        if texts[i] in said:
            fact = 0.0
        else:
            fact = facts[i] if fact_now is None else fact_now(i)
        return (fact + info_weight * score + boost[i]) * lead[i] / cost  # value_of's sum order

    def keys(units: list[int]) -> list[tuple[float, int]] | None:
        """(-density(i), i) for each unit, worked out in one pass with density's sums while nothing is kept
        (no novelty, no joins, no facts said) and facts are not counted once each (distinct_facts);
        else None. (It does not call density: a reference back would make a cycle that only the cyclic
        GC frees, and every prune's select state would stay in memory until then.)"""
        if (novelty and novelty.covered) or said or fact_now is not None or any(kept):
            return None
        return [(-((facts[i] + info_weight * scores[i] + boost[i]) * lead[i] / max(tokens[i] + gap_tokens, 1)), i)
                for i in units]

    def took(j: int) -> None:
        """Unit j is kept: its terms are covered, its distinct facts said."""
        if novelty is not None:
            novelty.cover(terms[j])
        if fact_now is not None:
            for f, _ in held[j]:
                fact_said[f] = True

    density.keys, density.took = keys, took
    return density


def weighted(make, factor):
    """A density maker like `make` whose densities are multiplied by factor[i] (the keep-model's probability to
    a power, when it mixes with the rules' ranking: catp.select.keep)."""

    def make_weighted(*args):
        inner = make(*args)

        def density(i: int) -> float:
            return inner(i) * factor[i]

        def keys(units: list[int]) -> list[tuple[float, int]] | None:
            found = inner.keys(units)
            return None if found is None else [(d * factor[i], i) for d, i in found]

        density.keys, density.took = keys, inner.took
        return density

    return make_weighted
