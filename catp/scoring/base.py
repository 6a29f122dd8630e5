"""The `Scorer` protocol: rank the units that the rules left undecided."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from catp.document import Document


@runtime_checkable
class Scorer(Protocol):
    """Give each candidate unit a score; higher means more worth keeping.

    `candidates` holds only the unit indices the rules have not already decided
    (not protected, not deleted). A scorer must return a score for each of them
    and must be deterministic. `budget_tokens` lets a costly scorer stop early.

    A scorer may say what it costs with a class attribute `cheap: bool` (False when absent): the engine asks a
    cheap scorer (LexicalScorer) for every live unit, a costly one only for those the rules left undecided
    (every live unit when a question must rank them). It is not part of the protocol's isinstance check.
    """

    name: str

    def score(
        self,
        doc: Document,
        candidates: Sequence[int],
        *,
        question: str | None = None,
        budget_tokens: int | None = None,
    ) -> dict[int, float]: ...


def rank_map(fallback: dict[int, float], reference: Sequence[float]) -> dict[int, float]:
    """Map `fallback` scores onto the distribution of `reference` scores by rank (quantiles).

    Lexical and model scores live on different scales; matching quantiles keeps the
    order inside each group and makes the two comparable without guessing a scale.
    """
    if not reference:
        return dict(fallback)
    ref = sorted(reference)
    order = sorted(fallback, key=lambda i: (fallback[i], -i))
    m = len(order)
    out = {}
    for r, i in enumerate(order):
        q = (r + 0.5) / m
        out[i] = ref[min(len(ref) - 1, int(q * len(ref)))]
    return out
