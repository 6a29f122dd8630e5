"""The public result schema (pydantic): what `prune()` returns and `--format json` prints."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class KeptSpan(BaseModel):
    """A kept range of the input, with every rule id (or "score") that kept it."""

    model_config = ConfigDict(frozen=True)

    start: int = Field(description="Python character offset into the decoded input")
    end: int = Field(description="end offset (exclusive): the span is input[start:end]")
    reasons: list[str] = Field(description='rule ids that protected its units, "score" for units kept on their '
                                           'score, "within budget" when the whole input fits')


class DroppedProtected(BaseModel):
    """Protected content the budget forced out: never dropped silently."""

    start: int = Field(description="character offset into the decoded input")
    end: int = Field(description="end offset (exclusive)")
    text: str = Field(description="input[start:end]")
    category: str = Field(description="the rule's category: date, amount, entity, negation, ...")
    rule_id: str = Field(description="the rule that protected it")
    priority: int = Field(description="the rule's priority, 0-100")


class PruneStats(BaseModel):
    """Counts and settings of one pruning run."""

    input_tokens: int = Field(description="tokens of the input, in the budget's tokenizer")
    output_tokens: int = Field(description="tokens of `text`, gap markers included; never over `budget`")
    budget: int = Field(description="the budget in tokens (from --budget, or --ratio times input_tokens)")
    ratio: float = Field(description="output_tokens / input_tokens")
    tokenizer: str = Field(description="the tokenizer that counted the tokens")
    elapsed_s: float = Field(description="wall-clock seconds, decoding excluded")
    lang: str = Field(description="the document's main language: en or zh")
    domain: str = Field(description="the rule set used: legal, finance, medical or general")
    encoding: str | None = Field(default=None, description="the detected (or given) encoding; None for text "
                                                           "passed as str")
    input_format: str = Field(default="text", description="what the input was: text, pdf, docx or html (offsets refer "
                                                          "to the text extracted from it: `catp decode FILE`)")
    scorer: str = Field(description="the scorer that ranked the units not protected")
    units_total: int = Field(description="units (sentences, clauses, rows, headings) in the document")
    units_kept: int = Field(description="units kept")
    per_category: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="category -> {found, kept, dropped}: protected spans"
    )


class PruneResult(BaseModel):
    """What `prune()` returns: an ordered extract of the input within the budget, and why each piece is there."""

    text: str = Field(description="the kept spans' text, in input order, joined by gap_marker")
    gap_marker: str = Field(description="what stands between non-adjacent kept spans")
    kept: list[KeptSpan] = Field(description="the kept spans, sorted and disjoint")
    dropped_protected: list[DroppedProtected] = Field(description="protected spans the budget forced out")
    warnings: list[str] = Field(default_factory=list, description="e.g. protected content dropped, a rule "
                                                                  "skipped on its regex timeout")
    stats: PruneStats
