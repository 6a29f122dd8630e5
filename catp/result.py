"""The public result schema (pydantic): what `prune()` returns and `--format json` prints."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class KeptSpan(BaseModel):
    """A kept range of the input, with every rule id (or "score") that kept it."""

    model_config = ConfigDict(frozen=True)

    start: int = Field(description="Python character offset into the decoded input")
    end: int
    reasons: list[str]


class DroppedProtected(BaseModel):
    """Protected content the budget forced out: never dropped silently."""

    start: int
    end: int
    text: str
    category: str
    rule_id: str
    priority: int


class PruneStats(BaseModel):
    input_tokens: int
    output_tokens: int
    budget: int
    ratio: float = Field(description="output_tokens / input_tokens")
    tokenizer: str
    elapsed_s: float
    lang: str
    domain: str
    encoding: str | None = None
    scorer: str
    units_total: int
    units_kept: int
    per_category: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="category -> {found, kept, dropped}"
    )


class PruneResult(BaseModel):
    text: str
    gap_marker: str
    kept: list[KeptSpan]
    dropped_protected: list[DroppedProtected]
    warnings: list[str] = Field(default_factory=list)
    stats: PruneStats
