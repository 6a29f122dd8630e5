"""The selection policy: how select/ weighs what fills the budget, per language. Rule files configure it
(catp/rules/schema.py's `RuleSet.selection`, merged by `catp.rules.schema.merged_policy`); select/ reads it and
imports nothing from rules/."""

from __future__ import annotations

from typing import Literal

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator

Flag = Literal["IGNORECASE", "MULTILINE", "DOTALL", "VERBOSE"]


def _compiled(pattern: str) -> str:
    """The pattern, once the regex module compiles it (a ValueError naming the error otherwise)."""
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"invalid regex {pattern!r}: {exc}") from None
    return pattern


class KeySection(BaseModel):
    """A section type an expert reads first (fees, liability; 诊断, 出院医嘱; results, guidance): found by a
    heading, or by a line's opening words (SelectionPolicy.section_label), that `pattern` matches."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, description="regex searched in a heading's text or a line's opening "
                         "label (zh and en variants as alternatives)")
    flags: list[Flag] = Field(default_factory=lambda: ["IGNORECASE"])
    weight: float = Field(2.0, ge=0, le=100, description="the value of the section's units times this; the "
                          "heavier key sections are covered first")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        return _compiled(pattern)


class SelectionPolicy(BaseModel):
    """How selection weighs what fills the budget, for one language. A field a later rule set
    gives overrides the same field of an earlier one (common, then the domain, then --rules)."""

    model_config = ConfigDict(extra="forbid")

    information_weight: float = Field(1.0, ge=0, le=1000, description="the scorer's information against the rules' facts")
    lead_weight: float = Field(2.0, ge=0, le=100, description="extra weight at a section's first unit")
    lead_share: float = Field(0.3, gt=0, le=1, description="the share of a section its lead bonus covers")
    lead_tokens: int = Field(0, ge=0, le=1_000_000, description="when set, the lead bonus covers this many tokens of a "
                             "section instead of lead_share of it (facts that sit in a section's first lines)")
    doc_lead_weight: float = Field(4.0, ge=0, le=100, description="extra weight at the document's first unit")
    doc_lead_share: float = Field(0.05, gt=0, le=1, description="the share of the document that bonus covers")
    doc_lead_tokens: int = Field(0, ge=0, le=1_000_000, description="when set, that bonus covers at least the units "
                                 "of the document's first this many tokens (a short document's title and parties)")
    table_lead_weight: float = Field(0.0, ge=0, le=100, description="extra weight at a table's first row")
    table_lead_rows: int = Field(10, ge=1, le=10_000, description="the row of a table where that bonus has fallen to "
                                 "nothing (a table's first rows hold its main lines; later ones, details)")
    table_tail_weight: float = Field(0.0, ge=0, le=100, description="extra weight at a table's last data row (its "
                                     "total or closing line)")
    table_word_row_weight: float = Field(1.0, ge=0, le=100, description="what a table's data row with a word in a "
                                         "value cell (names, titles, dates, column titles) weighs against one of "
                                         "figures only")
    table_blank_row_weight: float = Field(1.0, ge=0, le=100, description="what a table's data row with a blank or "
                                          "dash value cell ('', '—', 'n/a') weighs against a full one")
    table_intro_tokens: int = Field(0, ge=0, le=1_000_000, description="a line of at most this many tokens that a "
                                    "rule of category 'table' marks (the sentence that introduces a table) is read "
                                    "with its table: section_decay leaves it out; 0: off")
    section_decay_weight: float = Field(0.0, ge=0, le=100, description="how much less a section's unit weighs for "
                                        "each section_decay_tokens of better units before it in the section (0: off)")
    section_decay_tokens: int = Field(100, ge=1, le=1_000_000, description="the tokens of a section's better units "
                                      "over which section_decay_weight acts")
    whole_span_chars: int = Field(0, ge=0, le=100_000, description="a span a rule keeps whole (expand) counts one "
                                  "fact per this many characters; 0: one fact per span")
    distinct_facts: float | None = Field(None, ge=0, le=4, description="when set, a fact (a protected span of a "
                                        "number, date, finding, name ...) counts once: a unit holding one already "
                                        "kept gets nothing for it, and it weighs its occurrences in the document to "
                                        "this power; unset: every occurrence counts")
    split_parentheses: bool = Field(False, description="a parenthesis inside a sentence also starts and ends a unit "
                                    "(segmentation.yaml's parenthesis_end): abbreviations, reference ranges and asides "
                                    "become units of their own")
    clause_units: bool = Field(False, description="units are cut further at every clause mark and inline "
                               "enumeration (segmentation.yaml's clause_unit_end): a sentence holding several facts "
                               "is kept clause by clause")
    whole_span_max_tokens: int = Field(0, ge=0, le=1_000_000, description="a span a rule keeps whole (expand) "
                                       "longer than this many tokens no longer binds its units together: its "
                                       "clauses are kept or dropped one by one (its facts still count); 0: no limit")
    whole_span_tokens: int = Field(0, ge=0, le=1_000_000, description="a unit of a span kept whole of t tokens "
                                   "weighs N / t past N tokens, sqrt(N / t) below (the facts a sentence holds grow "
                                   "with the root of its length, then stop); 0: no such factor")
    category_weights: dict[str, float] = Field(default_factory=dict, description="a protected span's fact "
                                               "weight times its category's weight here (1 for a category not "
                                               "listed; 0: the category marks no fact in this language); a "
                                               "discount span's units' facts times its category's weight")

    key_sections: dict[str, KeySection] = Field(default_factory=dict, description="section types by name: "
                                                "their units' value times the type's weight, and with "
                                                "coverage_share each one present gets its heading and best unit "
                                                "before the fill; a later rule set's entry replaces the same name's")
    section_label: str = Field("", description="regex for a line's opening label, a section without a heading "
                               "('5.1 Upfront Licence Fee.', '出院诊断：'): its group 'label' (else the match) is "
                               "what key_sections' patterns search; empty: headings only")
    coverage_share: float = Field(0.0, ge=0, le=1, description="the share of the budget that covering the key "
                                  "sections (each one's heading and most valuable unit, heaviest first) may take "
                                  "before value per token fills the rest; 0: no coverage step")
    coverage_min_tokens: int = Field(0, ge=0, le=1_000_000, description="no coverage step under this budget: "
                                     "in a few dozen tokens a heading and its gap marker cost more than a clause")
    coverage_facts: bool = Field(False, description="after each key section's heading and best unit, coverage "
                                 "also takes the units holding facts (amounts, dates, names, diagnoses, drugs ...) "
                                 "in key sections, densest first, one section's at a time, within coverage_share")

    @field_validator("section_label")
    @classmethod
    def _label_compiles(cls, pattern: str) -> str:
        return _compiled(pattern) if pattern else pattern

    @field_validator("category_weights")
    @classmethod
    def _weights_are_finite(cls, weights: dict[str, float]) -> dict[str, float]:
        bad = {k: w for k, w in weights.items() if not 0 <= w <= 100}
        if bad:
            raise ValueError(f"category weights must lie in [0, 100], got {bad}")
        return weights


def fact_weight(priority: int) -> float:
    """What one protected span adds to its unit's value: doubles every 10 priority points."""
    return 2.0 ** ((priority - 60) / 10)
