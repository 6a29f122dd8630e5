"""What matchers may read about a document besides its text."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from catp.document import Analysis, UnitKind


@dataclass
class MatchContext:
    doc: Analysis
    token_starts: list[int]
    regex_timeout: float = 2.0
    warnings: list[str] = field(default_factory=list)
    pos_cache: dict = field(default_factory=dict)  # text block -> tagger output, for this document
    # Anchor prefilter (catp/rules/prefilter.py): "auto" scans around anchors when that is cheaper,
    # "always" whenever the rule allows it (rule examples), "never" scans every rule over the whole text.
    prefilter: str = "auto"
    anchor_index: object | None = None  # a prefilter.AnchorIndex over the rules that will run
    _anchor_hits: dict | None = None
    _barrier_positions: dict = field(default_factory=dict)
    _lowered: str | None = None
    _clause_ends: list[int] | None = None
    _sentence_ends: list[int] | None = None
    _unit_starts: list[int] | None = None
    _sentence_first: list[int] | None = None  # per unit: start offset of its sentence's first unit
    _headings: list[tuple[int, int]] | None = None

    @property
    def text(self) -> str:
        return self.doc.text

    @property
    def lowered(self) -> str:
        """Lower-cased text with the same length (offsets stay valid)."""
        if self._lowered is None:
            low = self.doc.text.lower()
            self._lowered = low if len(low) == len(self.doc.text) else "".join(
                c if len(c.lower()) != 1 else c.lower() for c in self.doc.text)
        return self._lowered

    def anchor_hits(self, matcher) -> list[int]:
        """Sorted start offsets of the matcher's anchors in the text (case-folded)."""
        rule_id = matcher.rule.id
        index = self.anchor_index
        if index is None or rule_id not in index.rules:
            return matcher.own_anchor_index().hits(self.lowered).get(rule_id, [])
        if self._anchor_hits is None:
            self._anchor_hits = index.hits(self.lowered)
        return self._anchor_hits.get(rule_id, [])

    def heading_units(self) -> list[tuple[int, int]]:
        """(start, end) of the heading units, in order."""
        if self._headings is None:
            self._headings = [(u.start, u.end) for u in self.doc.units if u.kind is UnitKind.HEADING]
        return self._headings

    def barrier_positions(self, chars: str) -> list[int]:
        """Offsets of the characters in `chars`, in order."""
        found = self._barrier_positions.get(chars)
        if found is None:
            each = [self._char_positions(c) for c in chars]
            found = self._barrier_positions[chars] = sorted(p for ps in each for p in ps) if len(each) > 1 else each[0]
        return found

    def _char_positions(self, char: str) -> list[int]:
        key = ("char", char)
        found = self._barrier_positions.get(key)
        if found is None:
            text, found, i = self.text, [], self.text.find(char)
            while i != -1:
                found.append(i)
                i = text.find(char, i + 1)
            self._barrier_positions[key] = found
        return found

    def clause_ends(self) -> list[int]:
        """Where each unit ends, in order."""
        if self._clause_ends is None:
            self._clause_ends = [u.end for u in self.doc.units]
        return self._clause_ends

    def sentence_ends(self) -> list[int]:
        """Where each sentence ends, in order."""
        if self._sentence_ends is None:
            units = self.doc.units
            self._sentence_ends = [u.end for i, u in enumerate(units)
                                   if i + 1 == len(units) or units[i + 1].sentence != u.sentence]
        return self._sentence_ends

    def clause_end(self, offset: int) -> int:
        ends = self.clause_ends()
        i = bisect_left(ends, offset + 1)
        return ends[i] if i < len(ends) else len(self.text)

    def sentence_end(self, offset: int) -> int:
        ends = self.sentence_ends()
        i = bisect_left(ends, offset + 1)
        return ends[i] if i < len(ends) else len(self.text)

    def sentence_start(self, offset: int) -> int:
        """Start of the sentence holding `offset` (the unit starting at or before it; else the first)."""
        units = self.doc.units
        if not units:
            return 0
        if self._unit_starts is None:
            self._unit_starts = [u.start for u in units]
            first, prev, out = 0, None, []
            for u in units:
                if u.sentence != prev:
                    first, prev = u.start, u.sentence
                out.append(first)
            self._sentence_first = out
        i = max(bisect_right(self._unit_starts, offset) - 1, 0)
        return self._sentence_first[i]

    def clause_start(self, offset: int) -> int:
        """Start of the unit holding `offset`."""
        units = self.doc.units
        if not units:
            return 0
        self.sentence_start(offset)  # builds the unit index
        return units[max(bisect_right(self._unit_starts, offset) - 1, 0)].start

    def line_end(self, offset: int) -> int:
        end = self.text.find("\n", offset)
        return len(self.text) if end == -1 else end

    def token_window_end(self, offset: int, n_tokens: int) -> int:
        i = bisect_left(self.token_starts, offset) + n_tokens
        return self.token_starts[i] if i < len(self.token_starts) else len(self.text)
