"""Value priors: per unit, a factor on its value from where it stands. Section and document leads
(lead_*, doc_lead_*), table rows (table_*, in tables.py), the decay within a section (section_decay_*)
and the factor for long spans kept whole (whole_span_tokens)."""

from __future__ import annotations

import math

from catp.document import Document, UnitKind
from catp.select.policy import SelectionPolicy
from catp.select.coverage import section_weights
from catp.select.tables import table_intros, table_lead
from catp.select.value import DEFAULT_POLICY, value_of


def sections(doc: Document) -> list[tuple[int, int]]:
    """[first, end) unit ranges: a section runs from a heading to the next (the first from unit 0)."""
    n = len(doc.units)
    starts = [i for i, u in enumerate(doc.units) if u.kind is UnitKind.HEADING] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    return list(zip(starts, [*starts[1:], n]))


def section_lead(doc: Document, policy: SelectionPolicy = DEFAULT_POLICY) -> list[float]:
    """Per unit, the product of the position priors the policy switches on, in this order: the section's
    opening (lead_*), the document's (doc_lead_*), table rows (table_*, tables.table_lead) and the decay
    within a section (section_decay_*, which ranks by the factors before it)."""
    factor = [1.0] * len(doc.units)
    _section_openings(doc, policy, factor)
    _document_opening(doc, policy, factor)
    if (policy.table_lead_weight or policy.table_tail_weight or policy.table_word_row_weight != 1.0
            or policy.table_blank_row_weight != 1.0):
        table_lead(doc, policy, factor)
    if policy.section_decay_weight:
        _section_decay(doc, policy, factor)
    return factor


def _section_openings(doc: Document, policy: SelectionPolicy, factor: list[float]) -> None:
    """1 + lead_weight at a section's first unit after its heading, falling to 1 at lead_share of
    the section (or after lead_tokens tokens, when set). Sections start at headings; facts cluster
    in their openings (parties, dates, holdings); the heading itself is valued by its rules alone."""
    for a, b in sections(doc):
        if doc.units[a].kind is UnitKind.HEADING and b - a > 1:
            a += 1
        length = max(b - a, 1)
        before = 0  # tokens of the section before unit i
        for i in range(a, b):
            rel = before / policy.lead_tokens if policy.lead_tokens else (i - a) / length / policy.lead_share
            factor[i] = 1.0 + policy.lead_weight * max(0.0, 1.0 - rel)
            before += doc.units[i].tokens


def _document_opening(doc: Document, policy: SelectionPolicy, factor: list[float]) -> None:
    """The document's own opening (title, parties, dates): 1 + doc_lead_weight at its first unit, falling
    to 1 at doc_lead_share of its units or, where that is more, after its first doc_lead_tokens tokens."""
    n = len(doc.units)
    reach = n * policy.doc_lead_share  # units the document's lead covers
    if policy.doc_lead_tokens:
        seen = covered = 0
        while covered < n and seen < policy.doc_lead_tokens:
            seen += doc.units[covered].tokens
            covered += 1
        reach = max(reach, covered)
    for i in range(n):
        factor[i] *= 1.0 + policy.doc_lead_weight * max(0.0, 1.0 - i / max(reach, 1))


def _section_decay(doc: Document, policy: SelectionPolicy, factor: list[float]) -> None:
    """Within a section, a unit weighs (1 + t / section_decay_tokens) ** -section_decay_weight less, where t
    is the tokens of the section's units that rank above it (value x lead per token, before any take): a
    section says most of what it holds in its best units, so a section's tenth unit should not beat
    another section's first. TAT-QA dev excerpts hold about 8.5 gold items each whatever their length."""
    weight, scale = policy.section_decay_weight, policy.section_decay_tokens
    intros = table_intros(doc, policy.table_intro_tokens) if policy.table_intro_tokens else set()
    units, deleted = doc.units, doc.columns.deleted
    for a, b in sections(doc):
        density = {i: value_of(doc, i, doc.scores.get(i, 0.0), policy.information_weight) * factor[i]
                   / max(units[i].tokens, 1) for i in range(a, b) if not deleted[i]}
        better = 0
        for i in sorted(density, key=lambda i: (-density[i], i)):
            if i not in intros:
                factor[i] *= (1.0 + better / scale) ** -weight
            better += units[i].tokens


def long_span_factor(doc: Document, policy: SelectionPolicy = DEFAULT_POLICY) -> list[float] | None:
    """Per unit, for a span kept whole of t tokens that holds it: whole_span_tokens / t past that length,
    sqrt(whole_span_tokens / t) below it (1 for other units); None when whole_span_tokens is 0. Such a
    span is taken whole, and its value grows with its length (each rule on it counts per
    whole_span_chars), but the gold it holds grows about as the square root of its length up to some
    100 tokens and not at all past that (on CUAD dev; the figures: docs/journal/2026-11-evals-rounds.md)."""
    group, deleted, units = doc.columns.group, doc.columns.deleted, doc.units
    if not policy.whole_span_tokens or not group:
        return None
    size: dict[int, int] = {}
    for i, g in enumerate(group):
        if g != -1 and not deleted[i]:
            size[g] = size.get(g, 0) + units[i].tokens
    cap = policy.whole_span_tokens

    def factor(tokens: int) -> float:
        share = cap / max(tokens, 1)
        return share if share <= 1 else math.sqrt(share)

    return [1.0 if g == -1 else factor(size.get(g, 1)) for g in group]


def unit_priors(doc: Document, policy: SelectionPolicy) -> list[float]:
    """Every prior, per unit: section_lead, times long_span_factor where whole_span_tokens is set, times the
    weight of the key section holding it (coverage.section_weights)."""
    lead = section_lead(doc, policy)
    for factor in (long_span_factor(doc, policy), section_weights(doc)):
        if factor is not None:
            lead = [a * b for a, b in zip(lead, factor)]
    return lead
