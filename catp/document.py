"""The data that flows through the stages (catp.engine).

The analysis stages (detect, tokens, segment, annotate, terms, cost) fill an `Analysis` of a text, cached
and then read-only; each prune is a `Document`: that analysis plus the call's budget, scores and decisions
(score, select, verify, render). Offsets are always Python character offsets into the text (the decoded
input, unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter


class UnitKind(str, Enum):
    """What a unit of text is; headings, list items and table rows are units too."""

    SENTENCE = "sentence"
    CLAUSE = "clause"
    HEADING = "heading"
    LIST_ITEM = "list_item"
    TABLE_ROW = "table_row"


class Action(str, Enum):
    """What an annotation asks the selector to do with the text it covers."""

    PROTECT = "protect"  # keep; report if the budget forces it out
    DELETE = "delete"  # boilerplate: never keep
    BOOST = "boost"  # raise the score, but not protected
    DETACH = "detach"  # units of its own, left out of any span kept whole; ranked like other text
    DISCOUNT = "discount"  # the facts of the units it covers weigh less (times its category's weight)


@dataclass(slots=True)
class Unit:
    """The smallest piece the selector keeps or drops: a clause, heading or row."""

    index: int
    start: int
    end: int
    kind: UnitKind
    sentence: int  # index of the sentence (or heading/row) this clause belongs to
    tokens: int = 0  # cost in the budget tokenizer (with the whitespace before it), set by `catp.cost.cost_units`
    # Where a run of kept units starts at this unit (`catp.cost.cost_units` sets both):
    edge: int = 0  # tokens of `tokens` not spent: the whitespace's before it, less one if the last runs into it
    marker_merge: int = 0  # 1 when the gap marker's last token merges into the unit's first (one token less)


@dataclass(frozen=True, slots=True)
class Span:
    """A labelled character range emitted by a rule."""

    start: int
    end: int
    category: str  # e.g. "number", "date", "negation", "boilerplate", "heading"
    rule_id: str
    priority: int  # higher wins when the budget is short
    action: Action = Action.PROTECT
    whole: bool = False  # keep all of it or none of it (a clause or sentence a rule expanded to)
    matches: int = 1  # how many of the rule's matches gave this range (annotate lists each range once)


_new_span = object.__new__
_SET_SPAN = tuple(getattr(Span, name).__set__ for name in Span.__slots__)


def make_span(start: int, end: int, category: str, rule_id: str, priority: int, action: Action,
              whole: bool = False) -> Span:
    """Span(...) with every field given, set through the slots: a frozen dataclass's __init__ sets each
    field with object.__setattr__, twice the time (a document yields 10^4 spans)."""
    span = _new_span(Span)
    s_start, s_end, s_category, s_rule_id, s_priority, s_action, s_whole, s_matches = _SET_SPAN
    s_start(span, start)
    s_end(span, end)
    s_category(span, category)
    s_rule_id(span, rule_id)
    s_priority(span, priority)
    s_action(span, action)
    s_whole(span, whole)
    s_matches(span, 1)
    return span


@dataclass(slots=True)
class Decision:
    """Why a unit was kept or dropped."""

    kept: bool
    reasons: list[str] = field(default_factory=list)  # rule ids, or "score"
    priority: int = 0
    score: float = 0.0


@dataclass(slots=True)
class UnitColumns:
    """Per-unit attributes, one plain list each (index = unit index), filled by annotate and index_terms."""

    priority: list[int] = field(default_factory=list)  # strongest protecting rule's priority (0: none)
    rules: list[list[str]] = field(default_factory=list)  # the rule ids behind it (and boosts)
    deleted: list[bool] = field(default_factory=list)  # boilerplate: never kept
    boost: list[int] = field(default_factory=list)  # strongest `boost` rule priority
    value: list[float] = field(default_factory=list)  # summed weight of the protected spans in it
    group: list[int] = field(default_factory=list)  # units sharing a group id are kept together (-1: alone)
    terms: list[list[str]] = field(default_factory=list)  # content terms, for novelty in select
    term_sets: list[frozenset[str]] = field(default_factory=list)  # the same, each as a set
    sealed: bool = False  # set by `Analysis.seal()`: no column may be replaced

    def __setattr__(self, name: str, value) -> None:
        if getattr(self, "sealed", False):
            raise AttributeError(f"a cached Analysis is read-only: columns.{name} cannot be set")
        object.__setattr__(self, name, value)


@dataclass(slots=True)
class Analysis:
    """What the analysis stages (detect .. cost) learned about one text; nothing here depends on the budget
    or the question. The engine builds it once and caches it: once built it is read-only, shared by every
    `Document` that prunes the same text."""

    text: str
    lang: str = "en"  # "en" or "zh": the dominant language
    domain: str = "general"
    units: list[Unit] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    columns: UnitColumns = field(default_factory=UnitColumns)
    token_starts: list[int] = field(default_factory=list)  # where each token of the text starts
    term_weight: dict[str, float] = field(default_factory=dict)  # idf of each term within the document
    key_sections: list = field(default_factory=list)  # catp.select.coverage.KeySectionFound, by first unit
    warnings: list[str] = field(default_factory=list)  # e.g. a rule that hit its regex timeout
    sealed: bool = False  # set by `seal()`: no field may be set again

    def __setattr__(self, name: str, value) -> None:
        if getattr(self, "sealed", False):
            raise AttributeError(f"a cached Analysis is read-only: {name} cannot be set")
        object.__setattr__(self, name, value)

    def seal(self) -> Analysis:
        """Read-only from now on (the engine seals an analysis before caching it): its fields and its columns
        cannot be set again (the lists they hold stay plain lists, for speed: do not change them either)."""
        self.columns.sealed = True
        self.sealed = True
        return self

    def unit_text(self, unit: Unit) -> str:
        return self.text[unit.start : unit.end]


@dataclass(slots=True)
class Document:
    """One prune of an analysed text: the shared `Analysis` plus this call's budget, scores and decisions.
    The analysis' fields read through (doc.text, doc.units, doc.columns, ...) and are not to be written."""

    analysis: Analysis
    encoding: str | None = None
    budget: int = 0
    input_tokens: int = 0
    started: float = 0.0  # perf_counter() when pruning began
    scores: dict[int, float] = field(default_factory=dict)  # unit index -> score, from the scorer
    probabilities: list[float] | None = None  # a keep-model's P(an expert keeps it) per unit, when it chose them
    decisions: list[Decision] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # the analysis' warnings, then this call's

    @classmethod
    def of(cls, analysis: Analysis, **fields) -> Document:
        """A new prune of `analysis`: its warnings copied, nothing else."""
        return cls(analysis, warnings=list(analysis.warnings), **fields)

    text = property(attrgetter("analysis.text"))
    lang = property(attrgetter("analysis.lang"))
    domain = property(attrgetter("analysis.domain"))
    units = property(attrgetter("analysis.units"))
    spans = property(attrgetter("analysis.spans"))
    columns = property(attrgetter("analysis.columns"))
    token_starts = property(attrgetter("analysis.token_starts"))
    term_weight = property(attrgetter("analysis.term_weight"))
    key_sections = property(attrgetter("analysis.key_sections"))

    def unit_text(self, unit: Unit) -> str:
        return self.analysis.text[unit.start : unit.end]
