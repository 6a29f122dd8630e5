"""Clause units: a unit cut further at every clause mark and inline enumeration (segmentation.yaml's
clause_unit_end), for the rule sets whose selection policy sets `clause_units`. Each piece is still a span of
the input; a sentence that holds several facts (a fee among escrow terms) no longer has to be kept whole."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import regex

from catp.document import Analysis, Unit, UnitKind
from catp.segment.splitter import default_segmenter, strip_span

_SPLIT_KINDS = (UnitKind.SENTENCE, UnitKind.CLAUSE, UnitKind.LIST_ITEM)


@lru_cache(maxsize=1)
def _clause_end() -> regex.Pattern:
    return regex.compile(default_segmenter().config.clause_unit_end)


def cuts(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """text[start:end] as clause pieces (stripped, in order); short pieces join a neighbour."""
    minimum = default_segmenter().config.clause_unit_min_chars
    edges = [start, *(m.start() for m in _clause_end().finditer(text, start, end) if start < m.start() < end), end]
    pieces: list[tuple[int, int]] = []
    for a, b in zip(edges, edges[1:]):
        a, b = strip_span(text, a, b)
        if a >= b:
            continue
        if pieces and (_visible(text, a, b) < minimum or _visible(text, *pieces[-1]) < minimum):
            pieces[-1] = (pieces[-1][0], b)
        else:
            pieces.append((a, b))
    return pieces


def _visible(text: str, a: int, b: int) -> int:
    return b - a - sum(1 for c in text[a:b] if c.isspace())


def _pieces(doc: Analysis) -> Iterator[tuple[Unit, int, int]]:
    """(unit, start, end) for each clause piece of doc's units, in order; headings and table rows stay whole."""
    for unit in doc.units:
        if unit.kind not in _SPLIT_KINDS:
            yield unit, unit.start, unit.end
        else:
            for a, b in cuts(doc.text, unit.start, unit.end):
                yield unit, a, b


def clause_units(doc: Analysis) -> Analysis:
    """doc's sentence, clause and list-item units cut into clause pieces (headings and table rows stay)."""
    units: list[Unit] = []
    previous = None
    for unit, a, b in _pieces(doc):
        if unit.kind not in _SPLIT_KINDS:
            unit.index = len(units)
            units.append(unit)
        else:  # a unit's first piece keeps its kind, the others are clauses
            units.append(Unit(len(units), a, b, unit.kind if unit is not previous else UnitKind.CLAUSE, unit.sentence))
        previous = unit
    doc.units = units
    return doc


def split_units(doc) -> list[tuple[int, int, bool]]:
    """The analysed doc's live units cut into clause pieces, as (start, end, deleted): for evals.unit_oracle."""
    deleted = doc.columns.deleted
    return [(a, b, deleted[unit.index]) for unit, a, b in _pieces(doc)]
