"""Selection by the keep-model (catp.scoring.keep): a unit's value is the model's probability that an expert
keeps it, and the greedy fills the budget by that value per token. The rules stay as guards through the same
Taker as every selection: a span a rule keeps whole (a negation with its target, a cue window) is kept whole or
not at all, and the budget and the text's order hold."""

from __future__ import annotations

from functools import partial

from catp.document import Document
from catp.select.budget import Selection
from catp.select.greedy import fill_by_value
from catp.select.policy import SelectionPolicy


def select_by_probability(doc: Document, budget: int, gap_tokens: int, policy: SelectionPolicy,
                          power: float = 1.0) -> Selection:
    """The units to keep within `budget`, by the scorer's probabilities (doc.scores) to `power` per token."""
    selection = Selection([False] * len(doc.units))
    fill_by_value(doc, budget, gap_tokens, selection, policy, make=partial(probability_density, power=power))
    return selection


def probability_density(doc: Document, policy: SelectionPolicy, gap_tokens: int, covered: set[str],
                        kept: list[bool], texts: list[str], said: set[str], power: float = 1.0):
    """density(i): P(kept by an expert) ** power / the tokens taking unit i adds (its own, plus a gap marker
    unless it extends a kept run); 0 once the same text is kept elsewhere (a repeated header says nothing new).
    A power over 1 favours sure units over short ones."""
    n = len(doc.units)
    p = [doc.scores.get(i, 0.0) ** power for i in range(n)]
    tokens = [max(u.tokens, 1) for u in doc.units]

    def density(i: int) -> float:
        if texts[i] in said:
            return 0.0
        joins = (i > 0 and kept[i - 1]) + (i + 1 < n and kept[i + 1])
        return p[i] / max(tokens[i] + gap_tokens * (1 - joins), 1)

    def keys(units: list[int]) -> list[tuple[float, int]] | None:
        if said or any(kept):
            return None
        return [(-(p[i] / max(tokens[i] + gap_tokens, 1)), i) for i in units]

    density.keys, density.took = keys, lambda j: None
    return density
