"""catp.select.novelty: a unit's share of term weight not yet covered, exact (math.fsum's floats) and kept up to
date in work that does not grow with the number of density evaluations (issue 25, point 14)."""

from __future__ import annotations

import math
import random

from catp.document import Analysis, Document, Unit, UnitKind
from catp.select import select
from catp.select.novelty import Novelty


def _expected(terms: frozenset[str], covered: set[str], weight: dict[str, float]) -> float:
    """The formula as make_density had it: fsum of the uncovered terms' weights over fsum of all (1.0 when
    none is covered)."""
    now = terms - covered
    if len(now) == len(terms):
        return 1.0
    return math.fsum(weight[t] for t in now) / math.fsum(weight[t] for t in terms)


def test_share_is_the_fsum_quotient_whatever_the_weights_and_the_covering_order():
    rng = random.Random(7)
    for trial in range(300):
        vocab = [f"t{k}" for k in range(rng.randint(1, 30))]
        kind = trial % 3
        if kind == 0:  # idf, as index_terms gives them
            weight = {t: math.log(1 + rng.randint(1, 10**6) / rng.randint(1, 1000)) for t in vocab}
        elif kind == 1:  # magnitudes far apart: a float sum in any order would lose the small ones
            weight = {t: rng.choice([1e-300, 3.3e-17, 0.1, 1.0, 7.0, 1e16, 1e300]) for t in vocab}
        else:
            weight = {t: rng.random() * 2.0 ** rng.randint(-60, 60) for t in vocab}
        sets = [frozenset(rng.sample(vocab, rng.randint(0, len(vocab)))) for _ in range(12)]
        sets += sets[:4]  # units sharing a term set
        covered = set(rng.sample(vocab, rng.randint(0, len(vocab) // 3)))
        novelty = Novelty(sets, weight, covered)
        for _ in range(12):
            i = rng.randrange(len(sets))
            assert novelty.share(i) == _expected(sets[i], covered, weight), trial
            more = rng.sample(vocab, rng.randint(0, min(3, len(vocab))))
            covered.update(more)
            novelty.cover(more)


class CountingWeights(dict):
    """A term -> weight dict that counts the weights read one by one."""

    reads = 0

    def __getitem__(self, term):
        CountingWeights.reads += 1
        return super().__getitem__(term)


def test_select_reads_each_term_weight_a_bounded_number_of_times():
    """A unit's novelty is not summed again over its terms after each take: 300 units of 12 terms from a
    vocabulary of 150, about 120 takes. make_density summed a unit's uncovered terms at every evaluation
    after coverage grew (4,454 reads here before Novelty); Novelty reads none one by one."""
    rng = random.Random(3)
    n, vocab = 300, [f"t{k}" for k in range(150)]
    units = [Unit(i, 10 * i, 10 * i + 5, UnitKind.SENTENCE, i, 5) for i in range(n)]
    doc = Document.of(Analysis(text="".join(f"w{i:04d}     " for i in range(n)), units=units))
    doc.columns.priority, doc.columns.value, doc.columns.boost = [0] * n, [0.0] * n, [0] * n
    doc.columns.deleted, doc.columns.rules = [False] * n, [[] for _ in range(n)]
    doc.scores = {i: 1.0 + rng.random() for i in range(n)}
    terms = [rng.sample(vocab, 12) for _ in range(n)]
    doc.columns.terms = [sorted(t) for t in terms]
    doc.columns.term_sets = [frozenset(t) for t in terms]
    doc.analysis.term_weight = CountingWeights(
        {t: math.log(1 + n / sum(t in ts for ts in doc.columns.term_sets)) for t in vocab})
    CountingWeights.reads = 0
    sel = select(doc, budget=6 * 120, gap_tokens=1)
    assert len(sel.added) > 100
    assert CountingWeights.reads <= len(vocab), CountingWeights.reads
