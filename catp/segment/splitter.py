"""Rule-driven segmentation for zh and en; the patterns live in segmentation.yaml."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import regex
import yaml
from pydantic import BaseModel, ConfigDict

from catp.document import Analysis, Unit, UnitKind

_LINE = regex.compile(r"[^\n]+")
_SPACE = regex.compile(r"\s+")


class SegmentationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    heading_max_chars: int
    headings: list[str]
    table_separators: list[str]
    table_min_separators: int
    list_items: list[str]
    sentence_end: str
    clause_end: str
    parenthesis_end: str
    min_clause_chars: int
    max_unit_chars: int
    clause_unit_end: str  # catp.segment.clauses
    clause_unit_min_chars: int


class Segmenter:
    """Splits text into units; one instance is reused across documents."""

    def __init__(self, config: SegmentationConfig) -> None:
        self.config = config
        self._heading = regex.compile("|".join(f"(?:{p})" for p in config.headings))
        self._list_item = regex.compile("|".join(f"(?:{p})" for p in config.list_items))
        self._boundary = regex.compile(f"(?P<sent>{config.sentence_end})|(?P<clause>{config.clause_end})")
        self._sent = self._boundary.groupindex["sent"]
        # Scanned on its own: one alternative more in _boundary would make every line's scan 3x slower.
        self._parenthesis = regex.compile(config.parenthesis_end)

    def segment(self, doc: Analysis, split_parentheses: bool = False) -> Analysis:
        """split_parentheses: a parenthesis inside a sentence also starts and ends a clause (parenthesis_end)."""
        units: list[Unit] = []
        sentence = 0
        text = doc.text
        for line in _LINE.finditer(text):
            start, end = strip_span(text, line.start(), line.end())
            if start >= end:
                continue
            body = text[start:end]
            kind = self._line_kind(body)
            if kind in (UnitKind.HEADING, UnitKind.TABLE_ROW):
                for a, b in self._cap(text, start, end):
                    units.append(Unit(len(units), a, b, kind, sentence))
                sentence += 1
                continue
            first_kind = UnitKind.LIST_ITEM if self._list_item.match(body) else UnitKind.SENTENCE
            sentence = self._split_line(text, start, end, first_kind, sentence, units, split_parentheses)
        doc.units = units
        return doc

    def _line_kind(self, body: str) -> UnitKind | None:
        cfg = self.config
        if sum(body.count(sep) for sep in cfg.table_separators) >= cfg.table_min_separators:
            return UnitKind.TABLE_ROW
        if len(body) <= cfg.heading_max_chars and self._heading.match(body):
            return UnitKind.HEADING
        return None

    def _split_line(self, text: str, start: int, end: int, first_kind: UnitKind, sentence: int,
                    units: list[Unit], split_parentheses: bool = False) -> int:
        """Cut a line at sentence and clause ends; returns the next sentence index."""
        pieces: list[tuple[int, int, bool]] = []  # (start, end, ends_sentence)
        cursor, sent = start, self._sent
        for m in self._boundary.finditer(text, start, end):
            after = m.end()
            pieces.append((cursor, after, m.group(sent) is not None))
            cursor = after
        if split_parentheses:
            pieces = self._cut_parentheses(text, start, end, pieces, cursor)
            cursor = pieces[-1][1] if pieces else start
        if cursor < end:
            pieces.append((cursor, end, True))
        merged = self.merge_short(text, pieces)
        kind = first_kind
        limit = self.config.max_unit_chars
        for a, b, ends_sentence in merged:
            a, b = strip_span(text, a, b)
            if a >= b:
                continue
            # a stripped piece this short is what _cap would yield (no generator for most pieces)
            for ca, cb in ((a, b),) if b - a <= limit else self._cap(text, a, b):
                units.append(Unit(len(units), ca, cb, kind, sentence))
                kind = UnitKind.CLAUSE
            if ends_sentence:
                sentence += 1
                kind = UnitKind.SENTENCE
        return sentence + (0 if merged and merged[-1][2] else 1)

    def _cut_parentheses(self, text: str, start: int, end: int, pieces: list[tuple[int, int, bool]],
                         cursor: int) -> list[tuple[int, int, bool]]:
        """The line's pieces (up to cursor) also cut where parenthesis_end matches."""
        cuts = [m.end() for m in self._parenthesis.finditer(text, start, end)]
        if not cuts:
            return pieces
        out: list[tuple[int, int, bool]] = []
        at = iter(cuts)
        cut = next(at)
        for a, b, ends in [*pieces, (cursor, end, True)] if cursor < end else pieces:
            while cut is not None and cut <= a:
                cut = next(at, None)
            while cut is not None and cut < b:
                out.append((a, cut, False))
                a, cut = cut, next(at, None)
            out.append((a, b, ends))
        return out

    def merge_short(self, text: str, pieces: list[tuple[int, int, bool]]) -> list[tuple[int, int, bool]]:
        out: list[tuple[int, int, bool]] = []
        minimum = self.config.min_clause_chars
        last = 0  # visible characters of out[-1]: pieces are contiguous, so a merged piece's count is the sum
        for a, b, ends in pieces:
            visible = len("".join(text[a:b].split()))  # non-space characters (split and isspace agree)
            if out and last < minimum:
                out[-1] = (out[-1][0], b, ends)  # a short piece joins the next one
                last += visible
            elif out and visible < minimum:
                out[-1] = (out[-1][0], b, ends or out[-1][2])  # a short tail joins the previous one
                last += visible
            else:
                out.append((a, b, ends))
                last = visible
        return out

    def _cap(self, text: str, start: int, end: int):
        """Yield (start, end) pieces no longer than max_unit_chars, cut at spaces if possible."""
        limit = self.config.max_unit_chars
        while end - start > limit:
            cut = text.rfind(" ", start + limit // 2, start + limit)
            cut = cut if cut > start else start + limit
            a, b = strip_span(text, start, cut)
            if a < b:
                yield a, b
            start, _ = strip_span(text, cut, end)
        a, b = strip_span(text, start, end)
        if a < b:
            yield a, b


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """text[start:end] without its leading and trailing whitespace, as offsets."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


@lru_cache(maxsize=1)
def default_segmenter() -> Segmenter:
    raw = resources.files("catp.segment").joinpath("segmentation.yaml").read_text(encoding="utf-8")
    return Segmenter(SegmentationConfig.model_validate(yaml.safe_load(raw)))


def segment(doc: Analysis, split_parentheses: bool = False) -> Analysis:
    return default_segmenter().segment(doc, split_parentheses)
