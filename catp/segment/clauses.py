"""Clause units: a unit cut further at every clause mark and inline enumeration (segmentation.yaml's
clause_unit_end), for the rule sets whose selection policy sets `clause_units`. Each piece is still a span of
the input; a sentence that holds several facts (a fee among escrow terms) no longer has to be kept whole."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import regex
import yaml

from catp.document import Analysis, Unit, UnitKind

_SPLIT_KINDS = (UnitKind.SENTENCE, UnitKind.CLAUSE, UnitKind.LIST_ITEM)


@lru_cache(maxsize=1)
def _config() -> tuple[regex.Pattern, int]:
    raw = yaml.safe_load(resources.files("catp.segment").joinpath("segmentation.yaml").read_text(encoding="utf-8"))
    return regex.compile(raw["clause_unit_end"]), int(raw["clause_unit_min_chars"])


def cuts(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """text[start:end] as clause pieces (stripped, in order); short pieces join a neighbour."""
    pattern, minimum = _config()
    edges = [start, *(m.start() for m in pattern.finditer(text, start, end) if start < m.start() < end), end]
    pieces: list[tuple[int, int]] = []
    for a, b in zip(edges, edges[1:]):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a >= b:
            continue
        visible = b - a - sum(1 for c in text[a:b] if c.isspace())
        if pieces and (visible < minimum or _visible(text, *pieces[-1]) < minimum):
            pieces[-1] = (pieces[-1][0], b)
        else:
            pieces.append((a, b))
    return pieces


def _visible(text: str, a: int, b: int) -> int:
    return b - a - sum(1 for c in text[a:b] if c.isspace())


def clause_units(doc: Analysis) -> Analysis:
    """doc's sentence, clause and list-item units cut into clause pieces (headings and table rows stay)."""
    text = doc.text
    units: list[Unit] = []
    for unit in doc.units:
        if unit.kind not in _SPLIT_KINDS:
            unit.index = len(units)
            units.append(unit)
            continue
        kind = unit.kind
        for a, b in cuts(text, unit.start, unit.end):
            units.append(Unit(len(units), a, b, kind, unit.sentence))
            kind = UnitKind.CLAUSE
    doc.units = units
    return doc


def split_units(doc) -> list[tuple[int, int, bool]]:
    """The analysed doc's live units cut into clause pieces, as (start, end, deleted): for evals.unit_oracle."""
    out = []
    deleted = doc.columns.deleted
    for unit in doc.units:
        if unit.kind not in _SPLIT_KINDS:
            out.append((unit.start, unit.end, deleted[unit.index]))
            continue
        out.extend((a, b, deleted[unit.index]) for a, b in cuts(doc.text, unit.start, unit.end))
    return out
